"""Issue 24 on real Chromium: every control a user can click gets a row at step 0, and every
name is true. Judged by the independent oracle in oracle/ (its own Playwright code:
real clicks whose composed path says what they reach, role queries and CDP listener lists for
what the annotation missed, the page author's `data-gt*` ground truth), never datagen's scan.

Pages: tests/fixtures/pages/controls/ (the acceptance page todo-rows.html: sibling-label
toggles on opacity-0 inputs, `::after` `×` delete buttons, icon-only buttons, a field beside a
long instruction, filled fields with placeholders; icons.html, fields.html, slow-first.html).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

import oracle
from bench.grounding import RECALL_TARGETS, control_pages, observe_and_judge, page_url
from datagen.annotate.describe import describe
from datagen.browser.host import BrowserHost
from datagen.config import BrowserConfig
from datagen.records import Click, Decision, Observation
from datagen.source.serve import SiteServer
from tests.helpers import ReadyPlugin

pytestmark = pytest.mark.browser

ACCEPTANCE = "controls/todo-rows.html"
# Targets per kind each page shows in a 1280x800 viewport once rendered (the oracle's count).
EXPECTED: dict[str, dict[str, int]] = {
    "controls/todo-rows.html": {"native": 9, "custom": 3},
    "controls/icons.html": {"native": 14, "aria": 3},
    "controls/fields.html": {"native": 12},
    "controls/slow-first.html": {"native": 5},
    "controls/unnamed.html": {"native": 5},
    "controls/names.html": {"native": 9},
}
# Issue 34's pages: every control of them has a row at step 0, unnamed ones included.
EVERY_CONTROL = ("controls/unnamed.html", "controls/names.html")
COORDINATES = re.compile(r"at \(\d+, \d+\)")


def host_with(plugin: ReadyPlugin, pages: SiteServer, **browser: object) -> Iterator[BrowserHost]:
    """A browser on the plugin's loop with its own browser settings (the pages' server
    allowed), closed afterwards."""
    host = BrowserHost(BrowserConfig.model_validate(browser), allow=[pages.origin])
    plugin.run(host.start(), timeout=120)
    try:
        yield host
    finally:
        plugin.run(host.close(), timeout=60)


@pytest.fixture(scope="module")
def patient(browser_plugin: ReadyPlugin, pages: SiteServer) -> Iterator[BrowserHost]:
    """First settle up to 20 s: what is tested is that the observation waits for the page to
    render, not that a loaded machine renders it within the default 4 s."""
    yield from host_with(browser_plugin, pages, first_settle_timeout_ms=20_000)


@pytest.fixture(scope="module")
def hasty(browser_plugin: ReadyPlugin, pages: SiteServer) -> Iterator[BrowserHost]:
    """No longer first settle: every settle gives up at 1.5 s."""
    yield from host_with(browser_plugin, pages, first_settle_timeout_ms=0)


def test_every_page_is_listed() -> None:
    assert set(EXPECTED) == set(control_pages())


def test_annotation_is_complete(
    browser_plugin: ReadyPlugin, patient: BrowserHost, pages: SiteServer
) -> None:
    """What Playwright's role queries and CDP's listener lists find is all annotated, and each
    page shows the targets it should once rendered: recall below means what it says."""

    async def scenario() -> dict[str, tuple[oracle.Gaps, dict[str, int]]]:
        found = {}
        for name in EXPECTED:
            async with patient.session() as session:  # a first observation each: settled
                await session.goto(page_url(pages.base_url, name))
                await session.observe()
                gaps = await oracle.annotation_gaps(session.page)
                counted: dict[str, int] = {}
                for t in await oracle.ground_truth(session.page):
                    counted[t.kind] = counted.get(t.kind, 0) + t.counts
                found[name] = (gaps, {k: v for k, v in counted.items() if v})
        return found

    for name, (gaps, counted) in browser_plugin.run(scenario()).items():
        assert not gaps.by_role and not gaps.by_listener, (name, gaps)
        assert counted == EXPECTED[name], name


def judged(
    plugin: ReadyPlugin, host: BrowserHost, pages: SiteServer, name: str
) -> tuple[Observation, list[str], oracle.PageVerdict]:
    """Step 0 as the pipeline takes it (goto, observe, the rows check_grounding keeps),
    judged at once; and the description of a target-less click (a scripted or model click)
    at each kept row's point."""

    async def scenario() -> tuple[Observation, list[str], oracle.PageVerdict]:
        async with host.session() as session:
            await session.goto(page_url(pages.base_url, name))
            obs, rows, verdict = await observe_and_judge(session, host.version)
            said = [
                describe(obs, Decision(action=Click(x=r.point_px[0], y=r.point_px[1])))
                for r in rows
            ]
            return obs, said, verdict

    return plugin.run(scenario())


def problems(verdict: oracle.PageVerdict, name: str) -> list[str]:
    """Everything about one judged step 0 that misses issue 24's floor."""
    out = [f"wrong row: {r.expression!r} {r.reason}" for r in verdict.wrong]
    counted: dict[str, int] = {}
    for t in verdict.counted:
        counted[t.kind] = counted.get(t.kind, 0) + 1
    if counted != EXPECTED[name]:
        out.append(f"observed before the page rendered: {counted} != {EXPECTED[name]}")
    for kind, (hit, total) in verdict.recall().items():
        if hit < RECALL_TARGETS[kind] * total:
            out.append(f"recall {kind} {hit}/{total} under {RECALL_TARGETS[kind]}")
    out += [f"misnamed: {r.expression!r}: {r.reason}" for r in verdict.misnamed]
    out += [f"text from outside its row: {r.expression!r}: {r.reason}" for r in verdict.outside]
    out += [f"{n} rows share the expression {e!r}" for e, n in verdict.duplicates.items()]
    out += [
        f"quotes {list(r.unshown)} the page does not show: {r.expression!r}"
        for r in verdict.unshown
    ]
    out += [f"disagrees with the image: {r.expression!r}" for r in verdict.disagreeing]
    return out


def test_acceptance_page_every_control_and_no_false_name(
    browser_plugin: ReadyPlugin, patient: BrowserHost, pages: SiteServer
) -> None:
    """The issue's page: a row for every control at step 0 (recall 1.0, not only the floor),
    no wrong row, no name the author did not give, no quoted text from outside the control's
    row, and a target-less click at any row's point described by its element, never by
    coordinates."""
    obs, said, verdict = judged(browser_plugin, patient, pages, ACCEPTANCE)
    print(verdict.report(), *said, sep="\n")
    assert not problems(verdict, ACCEPTANCE), "\n".join(problems(verdict, ACCEPTANCE))
    assert not verdict.misses, [t.description for t in verdict.misses]
    expressions = {r.expression for r in verdict.rows}
    assert 'the "×" button right of "Buy milk"' in expressions
    assert 'the checked "Walk the dog" checkbox' in expressions
    assert "the star icon button" in expressions  # its SVG <title> stands in for the icon
    # the trash icon is drawn by an icon font's class only: a class names nothing (issue 34)
    assert not any("trash" in e for e in expressions)
    assert 'the search box containing "milk"' in expressions or any(
        '"Search"' in e for e in expressions
    )
    assert not any("placeholder" in e and "Pick up" in e for e in expressions)
    assert not any("six-digit" in e or "element" in e for e in expressions)
    assert all(e.count('"') % 2 == 0 for e in expressions)  # inner quotes converted
    assert not [d for d in said if COORDINATES.search(d) or d.startswith("Click at")], said
    assert not obs.settle_timed_out and obs.stable


@pytest.mark.parametrize("name", sorted(set(EXPECTED) - {ACCEPTANCE}))
def test_control_page(
    browser_plugin: ReadyPlugin, patient: BrowserHost, pages: SiteServer, name: str
) -> None:
    _, said, verdict = judged(browser_plugin, patient, pages, name)
    print(verdict.report(), *said, sep="\n")
    assert not problems(verdict, name), "\n".join([*problems(verdict, name), verdict.report()])
    assert not [d for d in said if COORDINATES.search(d) or d.startswith("Click at")], said


@pytest.mark.parametrize("name", EVERY_CONTROL)
def test_every_control_has_a_row_and_only_shown_names(
    browser_plugin: ReadyPlugin, patient: BrowserHost, pages: SiteServer, name: str
) -> None:
    """Issue 34: controls with no accessible name get a row named by their role and what is
    around them (never dropped); nothing quoted that the page does not show (the oracle's own
    reading of the page's text); the accessible name kept in its own column."""
    obs, said, verdict = judged(browser_plugin, patient, pages, name)
    print(verdict.report(), *said, sep="\n")
    assert not problems(verdict, name), "\n".join([*problems(verdict, name), verdict.report()])
    assert not verdict.misses, [t.description for t in verdict.misses]
    expressions = {r.expression for r in verdict.rows}
    if name == "controls/unnamed.html":
        assert 'the empty text field below "Focus into the textbox."' in expressions
        # two bare checkboxes in one row: their ordinal says among which (issue 44), the row
        # placed by the drawn text nearest it (the oracle checked that quote's side and distance)
        assert any(
            re.fullmatch(r'the first of two checkboxes in the row (above|below) "[^"]+"', e)
            for e in expressions
        ), expressions
        assert any(
            re.fullmatch(r'the second of two checkboxes in the row (above|below) "[^"]+"', e)
            for e in expressions
        ), expressions
        assert 'the drop-down showing "Alpha"' in expressions
        assert 'the "Submit" button' in expressions
    else:
        assert sum("icon button" in e for e in expressions) == 3  # two SVG, one class-only
        # issue 44: placed by the drawn text nearest it, not a bare role a reader cannot find
        assert any(re.fullmatch(r'the empty text field below "[^"]+"', e) for e in expressions)
        assert 'the "Close" button' in expressions  # its text, not its aria-label
        assert not any("radio" in e and "named" in e for e in expressions)  # no name attribute
        assert 'the text field with placeholder "What needs to be done?"' in expressions
        assert not any("New Todo Input" in e or "Close dialog" in e for e in expressions)
        names = {e.accessible_name for e in obs.elements}
        assert {"New Todo Input", "Close dialog"} <= names  # kept, in its own column
    assert not [d for d in said if COORDINATES.search(d) or d.startswith("Click at")], said


def test_a_settle_that_gives_up_is_marked(
    browser_plugin: ReadyPlugin, hasty: BrowserHost, patient: BrowserHost, pages: SiteServer
) -> None:
    """slow-first.html changes its loader every 25 ms for ~2.4 s after load: a 1.5 s settle
    gives up (recorded, and the observation is not stable); a longer first settle waits for
    the app, and the next observation settles within the normal limit."""

    async def first(host: BrowserHost) -> tuple[Observation, Observation]:
        async with host.session() as session:
            await session.goto(page_url(pages.base_url, "controls/slow-first.html"))
            return await session.observe(), await session.observe()

    early, _ = browser_plugin.run(first(hasty))
    assert early.settle_timed_out and not early.stable
    assert not any(e.role == "button" for e in early.elements)  # the loader only
    rendered, again = browser_plugin.run(first(patient))
    # the app's buttons come after the loader (the hasty settle gave up before them): the first
    # settle waited for them, under the longer first limit, and did not give up
    assert not rendered.settle_timed_out and rendered.stable
    assert sum(e.role == "button" for e in rendered.elements) == 4
    # the next one is under the normal 1.5 s limit (settle_timeout_ms): not given up is within it
    assert not again.settle_timed_out and again.stable
