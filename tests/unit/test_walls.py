"""Wall detection on what a page shows (browser/walls.py's `classify`): providers' own markers
make a wall anywhere; a CAPTCHA widget or a challenge phrase only on a thin page or with an
error status; an article about CAPTCHAs, a contact form with reCAPTCHA, v3's badge and a login
page a task is about are no walls."""

from __future__ import annotations

import pytest

from datagen.browser.walls import Signals, classify

ARTICLE = (
    "How CAPTCHAs work. When a site asks you to verify you are human, it shows a CAPTCHA: "
    "reCAPTCHA, hCaptcha and Cloudflare Turnstile are the common ones. " * 30
)


@pytest.mark.parametrize(
    ("signals", "provider"),
    [
        (Signals(title="Just a moment...", markers=("#challenge-form",), status=403), "cloudflare"),
        (Signals(title="Just a moment...", text="Checking your browser", status=503), "cloudflare"),
        (Signals(cf_chl=True, text=ARTICLE, links=50), "cloudflare"),
        (
            Signals(title="Attention Required! | Cloudflare", text="Sorry, you have been blocked"),
            "cloudflare",
        ),
        (Signals(iframes=("https://geo.captcha-delivery.com/captcha/?initialCid=x",)), "datadome"),
        (Signals(markers=("#px-captcha",), text="Press & Hold to confirm"), "perimeterx"),
        (Signals(markers=("#sec-if-cpt-container",)), "akamai"),
        (
            Signals(
                title="Access Denied",
                text="You don't have permission to access this server. Reference #18.5c3e1402.1700000000.abc",
                status=403,
            ),
            "akamai",
        ),
        (
            Signals(
                url="https://www.google.com/sorry/index?continue=x",
                text="Our systems have detected unusual traffic from your computer network.",
            ),
            "google",
        ),
        (Signals(widgets=("g-recaptcha",), text="Please verify you are human."), "recaptcha"),
        (Signals(widgets=("h-captcha",), text="One more step"), "hcaptcha"),
        (Signals(text="Verify you are human by completing the action below.", links=1), "captcha"),
        (Signals(text=ARTICLE, links=80, status=403), "captcha"),  # an error status counts
        (
            Signals(text="Sign in to continue to Example", password=True, links=3),
            "login",
        ),
        (Signals(text="Authorization required", status=401), "login"),
    ],
)
def test_walls_are_named_with_their_provider(signals: Signals, provider: str) -> None:
    text_length = signals.text_length or len(signals.text)
    wall = classify(Signals(**{**signals.__dict__, "text_length": text_length}))
    assert wall is not None and wall.provider == provider
    assert wall.evidence  # the reject says what gave it away
    if signals.status in (401, 403, 429, 503):
        assert f"HTTP {signals.status}" in wall.evidence


@pytest.mark.parametrize(
    "signals",
    [
        # an article about CAPTCHAs quoting the phrases: long text, many links, status 200
        Signals(title="What is a CAPTCHA?", text=ARTICLE, text_length=len(ARTICLE), links=60),
        # a contact form with a reCAPTCHA widget on an ordinary page
        Signals(widgets=("g-recaptcha",), text=ARTICLE, text_length=len(ARTICLE), links=40),
        # Cloudflare's bot-management script on an ordinary page (not a challenge)
        Signals(
            scripts=("https://shop.example/cdn-cgi/challenge-platform/scripts/jsd/main.js",),
            text="Welcome to the shop",
            text_length=19,
            links=3,
        ),
        # DataDome's tag and reCAPTCHA v3 scripts on an ordinary page
        Signals(
            scripts=("https://js.datadome.co/tags.js", "https://www.google.com/recaptcha/api.js"),
            text="Hello",
            text_length=5,
        ),
        # a login page that is the task: a password field but no "sign in to continue"
        Signals(title="Log in", text="Email Password Log in", text_length=21, password=True),
        # a 403 with no marker at all is an HTTP error, not a wall
        Signals(title="403 Forbidden", text="Forbidden", text_length=9, status=403),
        # a short page mentioning captcha in passing
        Signals(text="Our new captcha library is out.", text_length=31, links=2),
    ],
)
def test_ordinary_pages_are_no_walls(signals: Signals) -> None:
    assert classify(signals) is None


def test_signals_read_tolerates_anything() -> None:
    assert Signals.read(None, 403) == Signals(status=403)
    read = Signals.read({"title": "t", "markers": ["#px-captcha"], "links": None}, None)
    assert read.markers == ("#px-captcha",) and read.links == 0


ROBOT_QUIZ = (
    "Robots in fiction. Are you a robot? A short quiz from our science desk: ten questions "
    "about the machines of novels and films, from Čapek's R.U.R. to the androids of the "
    "eighties, with the answers explained at the end. Share your score with friends. "
) * 2
CAPTCHA_HELP = (
    "Help: signing up. Fill in your name and email, choose a password, then complete the "
    "captcha before you press Create account. If the picture does not load, reload the page "
    "or try the audio version. Still stuck? Write to our support team. "
) * 2


@pytest.mark.parametrize(
    "signals",
    [
        # a long article (40 paragraphs, 20 links) holding a <form id="challenge-form">
        Signals(title="News", text="x" * 9000, markers=("#challenge-form",), links=20, fields=2),
        Signals(text="x" * 9000, text_length=9000, markers=("#challenge-form",), links=20),
        # a contact form with a visible reCAPTCHA: short, few links, but fields of its own
        Signals(
            title="Contact us",
            text="Contact us Name Email Message Send",
            text_length=34,
            links=4,
            fields=3,
            widgets=("g-recaptcha",),
        ),
        # short pages that say the words among content of their own
        Signals(title="Robot quiz", text=ROBOT_QUIZ, text_length=len(ROBOT_QUIZ), links=5),
        Signals(title="Help", text=CAPTCHA_HELP, text_length=len(CAPTCHA_HELP), links=4),
    ],
)
def test_a_widget_id_or_word_alone_on_a_page_of_its_own_is_no_wall(signals: Signals) -> None:
    assert classify(signals) is None


@pytest.mark.parametrize(
    ("signals", "provider"),
    [
        # the same markers on a page that is the challenge and nothing else
        (Signals(text="One more step", text_length=13, markers=("#challenge-form",)), "cloudflare"),
        (Signals(text="One more step", text_length=13, widgets=("g-recaptcha",)), "recaptcha"),
        # ... or served with a wall status, whatever else is on the page
        (
            Signals(
                text="x" * 9000,
                text_length=9000,
                links=20,
                markers=("#challenge-form",),
                status=503,
            ),
            "cloudflare",
        ),
        (
            Signals(
                text=ROBOT_QUIZ,
                text_length=len(ROBOT_QUIZ),
                links=5,
                fields=3,
                widgets=("h-captcha",),
                status=403,
            ),
            "hcaptcha",
        ),
        (Signals(text=ROBOT_QUIZ, text_length=len(ROBOT_QUIZ), links=5, status=429), "captcha"),
    ],
)
def test_real_walls_are_still_walls(signals: Signals, provider: str) -> None:
    wall = classify(signals)
    assert wall is not None and wall.provider == provider, wall


QUIZ = (
    "Our quiz. Ten questions about the machines of novels and films, from R.U.R. to the "
    "androids of the eighties. Start the quiz"
)


@pytest.mark.parametrize(
    "signals",
    [
        # issue 42, item 10: an ordinary short article, no challenge, no form: its title said it
        Signals(title="Are you a robot? Our quiz", text=QUIZ, text_length=len(QUIZ), links=2),
        Signals(title="I'm not a robot (2024 film)", text="A film.", text_length=7, links=1),
        Signals(title="Just a moment...", text="A poem.", text_length=7, links=1),
        Signals(title="Attention Required! | Cloudflare", text="Our post.", text_length=9),
    ],
)
def test_a_title_alone_is_no_wall(signals: Signals) -> None:
    assert classify(signals) is None
