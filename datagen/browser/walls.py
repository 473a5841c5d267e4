"""Bot walls, CAPTCHAs and login walls: pages that answer automation instead of the task.

    loaded page ─► SIGNALS_JS (one evaluate) ─► Signals ─► classify() ─► Wall | None
    start URL:        a wall ─► NavigationFailed(bot_wall)    (a `task` reject, no step)
    after an action:  a wall ─► a `bot_wall` step reject; the session goes back (episode.py)

Precision over recall: a wall is named only from markers that appear on challenge pages and
not on ordinary ones. Each provider has its own: Cloudflare's challenge (`_cf_chl_opt`,
`#challenge-form`, title "Just a moment..."; not its `/cdn-cgi/challenge-platform/` script,
which bot management injects into ordinary pages too), DataDome's captcha-delivery iframe,
PerimeterX/HUMAN's `#px-captcha`, Akamai's `sec-if-cpt` challenge and its "Access Denied …
Reference #" block page, Google's `/sorry/` page.

What a page's own markup can hold counts only on a page that is a challenge and nothing else,
or with an HTTP 401/403/429/503 (what walls are served with):

- an element id or class (`#challenge-form`, `#px-captcha`) or a CAPTCHA widget (reCAPTCHA,
  hCaptcha, Turnstile): on a thin page (little text, few links) with no fields of its own (a
  challenge has a checkbox at most);
- a phrase such as "verify you are human" alone: on a bare page (a sentence or two, at most
  two links, no fields).

A title alone is no wall: phrases count in the page's text, and Cloudflare's titles ("Just a
moment...", "Attention Required! | Cloudflare") only on a thin page served with a wall status
or saying the challenge's words. So an article (40 paragraphs, 20 links) holding a
`<form id="challenge-form">`, a contact form with a visible reCAPTCHA, v3's invisible badge,
short pages saying "are you a robot" or "complete the captcha" among their own content, and a
short article titled "Are you a robot? Our quiz" are no walls. Globals, iframes and scripts that
only a provider's challenge serves (`_cf_chl_opt`, captcha-delivery, Incapsula's resource,
Akamai's `cp_challenge`) count on any page.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.async_api import Page

from datagen.browser.navigation import NavigationFailed
from datagen.records import RejectReason

if TYPE_CHECKING:
    from datagen.browser.session import Session

log = logging.getLogger(__name__)

THIN_TEXT = 1200  # characters of body text: challenge pages say a sentence or two
THIN_LINKS = 12  # links on the page: a site's navigation alone has more
BARE_TEXT = 300  # a phrase alone counts on a page of a sentence or two, and...
BARE_LINKS = 2  # ...no more links than a challenge's "why am I seeing this" and its provider
READ_TIMEOUT_S = 5.0  # a start page's read (not within a step's limit): a hung page is no wall
WALL_STATUSES = (401, 403, 429, 503)  # what walls are served with (Cloudflare: 403/503)

SIGNALS_JS = (Path(__file__).parent / "walls.js").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Signals:
    """What SIGNALS_JS read off a page (built from its dict by `Signals.read`)."""

    url: str = ""
    title: str = ""
    text: str = ""
    text_length: int = 0
    links: int = 0
    password: bool = False
    fields: int = 0  # the page's own visible form fields (text, email, textarea...), up to 5
    widgets: tuple[str, ...] = ()
    iframes: tuple[str, ...] = ()
    scripts: tuple[str, ...] = ()
    cf_chl: bool = False
    markers: tuple[str, ...] = ()
    status: int | None = None

    @classmethod
    def read(cls, raw: object, status: int | None) -> Signals:
        """From SIGNALS_JS's result; anything malformed reads as an empty page."""
        if not isinstance(raw, dict):
            return cls(status=status)

        def strings(key: str) -> tuple[str, ...]:
            value = raw.get(key)
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        return cls(
            url=str(raw.get("url", "")),
            title=str(raw.get("title", "")),
            text=str(raw.get("text", "")),
            text_length=int(raw.get("text_length") or 0),
            links=int(raw.get("links") or 0),
            password=bool(raw.get("password")),
            fields=int(raw.get("fields") or 0),
            widgets=strings("widgets"),
            iframes=strings("iframes"),
            scripts=strings("scripts"),
            cf_chl=bool(raw.get("cf_chl")),
            markers=strings("markers"),
            status=status,
        )

    @property
    def thin(self) -> bool:
        """Little text and few links: a page that is one message, not a site."""
        return self.text_length <= THIN_TEXT and self.links <= THIN_LINKS

    @property
    def challenge_only(self) -> bool:
        """Thin, and no fields of its own: nothing on it but the challenge."""
        return self.thin and self.fields == 0

    @property
    def bare(self) -> bool:
        """A sentence or two and nothing else: a message page, not content."""
        return self.text_length <= BARE_TEXT and self.links <= BARE_LINKS and self.fields == 0


@dataclass(frozen=True)
class Wall:
    """A page that blocks automation: who put it there and what gave it away."""

    provider: str  # cloudflare | datadome | perimeterx | akamai | imperva | google | recaptcha
    # | hcaptcha | turnstile | captcha (a generic challenge) | login
    evidence: list[str] = field(default_factory=list)

    def describe(self, url: str) -> str:
        """The reject's detail: `bot wall (cloudflare) at URL: evidence; evidence`."""
        return f"bot wall ({self.provider}) at {url[:300]}: {'; '.join(self.evidence)}"


# Phrases of challenge pages (lower case, matched on whitespace-collapsed text)
CHALLENGE_PHRASES = (
    "verify you are human",
    "verify you are a human",
    "verifying you are human",
    "confirm you are human",
    "prove you are human",
    "are you a robot",
    "i'm not a robot",
    "checking your browser",
    "checking if the site connection is secure",
    "please complete the security check",
    "complete the captcha",
    "solve the captcha",
    "press & hold",
    "press and hold",
    "unusual traffic from your computer network",
    "our systems have detected unusual traffic",
    "enable javascript and cookies to continue",
    "access to this page has been denied",
    "pardon our interruption",
)
LOGIN_PHRASES = (
    "sign in to continue",
    "log in to continue",
    "login to continue",
    "you must be logged in",
    "you need to sign in",
    "you need to log in",
    "please sign in to",
    "please log in to",
    "login required",
    "sign in required",
)
# What Cloudflare's challenge and block pages say in their body (beside their titles)
CLOUDFLARE_PHRASES = (
    *CHALLENGE_PHRASES,
    "you have been blocked",
    "cloudflare ray id",
    "performance & security by cloudflare",
)
AKAMAI_REFERENCE = re.compile(r"reference\s*#\s*\d+\.[0-9a-f]+\.\d+", re.I)


def _provider_markers(s: Signals, confident: bool) -> Wall | None:
    """Markers that challenge and block pages carry: globals, iframes and scripts on any page;
    element ids and classes (which a page's own markup can hold) only when `confident`."""
    title = s.title.strip().lower()
    markers = s.markers if confident else ()
    cloudflare = [m for m in markers if "challenge" in m or m.startswith((".cf-", "#cf-"))]
    if s.cf_chl:
        cloudflare.append("window._cf_chl_opt")
    # A title is any page's to choose (a headline, a blog post about Cloudflare): it names the
    # provider only beside a wall status or the challenge's own words in the page
    text = _flat(s.text)
    backed = s.status in WALL_STATUSES or any(p in text for p in CLOUDFLARE_PHRASES)
    if cloudflare or (title == "just a moment..." and s.thin and backed):
        return Wall("cloudflare", [*cloudflare, *([f"title {s.title!r}"] if title else [])])
    if title.startswith("attention required!") and "cloudflare" in title and s.thin and backed:
        return Wall("cloudflare", [f"title {s.title!r}"])
    datadome = [u for u in s.iframes if "captcha-delivery.com" in u]
    if datadome:
        return Wall("datadome", [f"iframe {datadome[0][:120]}"])
    if "#px-captcha" in markers:
        return Wall("perimeterx", ["#px-captcha"])
    akamai = [m for m in markers if m.startswith("#sec-")]
    akamai += [u[:120] for u in s.scripts if "/_sec/cp_challenge/" in u]
    if akamai:
        return Wall("akamai", akamai)
    reference = AKAMAI_REFERENCE.search(s.text)
    if title == "access denied" and reference is not None and s.thin:
        return Wall("akamai", [f"title {s.title!r}", reference.group(0)])
    imperva = [u for u in s.iframes if "_incapsula_resource" in u.lower()]
    if imperva:
        return Wall("imperva", [f"iframe {imperva[0][:120]}"])
    if "/sorry/" in s.url and "unusual traffic" in _flat(s.text):
        return Wall("google", ["/sorry/ page: unusual traffic"])
    return None


def _flat(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split())


def classify(s: Signals) -> Wall | None:
    """Is this page a wall, and whose? None for an ordinary page (see the module docstring)."""
    status = [f"HTTP {s.status}"] if s.status in WALL_STATUSES else []
    confident = s.challenge_only or bool(status)  # a widget or an element id counts
    wall = _provider_markers(s, confident)
    if wall is not None:
        return Wall(wall.provider, [*wall.evidence, *status])
    # the page's text only: a title alone is no wall ("Are you a robot? Our quiz" headlines an
    # article; challenge pages say their words in the page)
    text = _flat(s.text)
    phrases = [p for p in CHALLENGE_PHRASES if p in text]
    if s.widgets and confident:
        kind = s.widgets[0].lower()
        provider = (
            "hcaptcha"
            if "hcaptcha" in kind or "h-captcha" in kind
            else "turnstile"
            if "turnstile" in kind or "cloudflare" in kind
            else "recaptcha"
        )
        return Wall(provider, [f"captcha widget {s.widgets[0][:80]!r}", *phrases[:2], *status])
    if phrases and (s.bare or bool(status)):  # words alone: a bare message page, or a status
        return Wall("captcha", [f"page text {phrases[0]!r}", *status])
    logins = [p for p in LOGIN_PHRASES if p in text or p in _flat(s.title)]
    if (s.status == 401 or (logins and s.password)) and s.thin:
        return Wall("login", [*(f"page text {p!r}" for p in logins[:1]), *status])
    return None


async def detect(page: Page, status: int | None = None) -> Wall | None:
    """The wall on `page` (its main document answered `status`), or None. A page that cannot
    be read (closed, navigating, its main thread held by a script for READ_TIMEOUT_S) is no
    wall: the step that follows finds out what it is."""
    try:
        raw = await asyncio.wait_for(page.evaluate(SIGNALS_JS), READ_TIMEOUT_S)
    except Exception:  # a hung page (a script spinning) too: the next step's bounded observe
        log.debug("could not read the page for walls", exc_info=True)  # says it hangs
        return None
    return classify(Signals.read(raw, status))


async def on_page(session: Session, observed: bool = False) -> Wall | None:
    """The wall the session's page shows now; its main document's status counts as evidence
    when the page on show is that document (`Session.watch_documents`). `observed`: just
    observed, so the signals its observation read (`Camera.signals`) are used when they are
    of the page still on show (no second round trip)."""
    requested, status = session.document
    url = session.page.url
    same = requested.split("#")[0] == url.split("#")[0]
    raw = session.camera.signals if observed else None
    if isinstance(raw, dict) and raw.get("url") == url:  # read off the document on show
        return classify(Signals.read(raw, status if same else None))
    return await detect(session.page, status if same else None)


async def wall_checked(load: Awaitable[None], session: Session, url: str) -> None:
    """Await `load` (the start URL's load: `session.goto(url)` and whatever wraps it), then
    no wall: a start page that is one raises NavigationFailed with reason `bot_wall` (the
    provider and the evidence in its message), so the task ends as one `task` reject and no
    step. A wall served with an error status (403, 429, 503) fails the load first; the page it
    shows is read before that failure is taken as it is."""
    try:
        await load
    except NavigationFailed as exc:
        if exc.reason is not RejectReason.NAVIGATION_FAILED or session.page.is_closed():
            raise
        wall = await on_page(session)
        if wall is None:
            raise
        raise NavigationFailed(wall.describe(url), RejectReason.BOT_WALL) from None
    wall = await on_page(session)
    if wall is not None:
        raise NavigationFailed(wall.describe(session.page.url), RejectReason.BOT_WALL)
