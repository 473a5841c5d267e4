"""Action descriptions and groups on real Chromium: one explore shard with `run.repeats: 2`
over two pages with repeated names (tests/fixtures/pages/real/duplicates.html, the bundled todo
app), read back from its Parquet parts.

The descriptions are judged by replaying each episode in a fresh page and asking Playwright's
own role queries (`page.get_by_role(role, name=...)`, its accessible-name computation, never
datagen's scan) whether the element a description names is where the step clicked, typed or
pressed. The pages are static, so a replay of the recorded actions reaches the same states
(checked by URL at every step).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.async_api import Locator, Page
from pydantic import TypeAdapter

from datagen.records import Action, TaskSpec
from datagen.source.serve import SiteServer
from tests.helpers import Local, ReadyPlugin, Row, make_config

pytestmark = pytest.mark.browser

RUN_ID = "describe-run"
REPEATS = 2
ROLES = {  # the descriptions' nouns → ARIA roles
    "button": "button",
    "link": "link",
    "field": "textbox",
    "search field": "searchbox",
    "number field": "spinbutton",
    "checkbox": "checkbox",
    "radio button": "radio",
    "toggle": "switch",
    "tab": "tab",
    "drop-down": "combobox",
    "menu item": "menuitem",
    "option": "option",
}
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
VERBS = "Click|Check|Uncheck|Turn on|Turn off|Select"
# `the second "Edit" button`; an icon-only control by its icon word (`the settings icon
# button`, from its accessible name); a control with no name by its role alone (`the second
# checkbox`, `the field below "Code"`; issue 34), judged by role and place only.
ORDINAL = rf"(?:(?P<ordinal>{'|'.join(ORDINALS)}) )?"
TARGET = (
    rf'the {ORDINAL}(?:"(?P<name>[^"]+)" (?P<noun>[a-z -]+)'
    r"|(?P<icon>[a-z0-9][a-z0-9 '-]*) icon (?P<icon_noun>button|link)"
    r'|(?:icon )?(?P<bare>[a-z -]+?)(?: (?:right of|left of|below) "[^"]*")?)'
)
CLICK = re.compile(rf"^(?P<verb>{VERBS}) {TARGET}$")
TYPED = re.compile(rf'^Type "(?P<text>.*)" into {TARGET}$')
PRESSED = re.compile(rf"^Press (?P<combo>\S+)(?: in {TARGET})?$")


@dataclass(frozen=True)
class Run:
    episodes: list[Row]
    steps: list[Row]


@pytest.fixture(scope="module")
def run(local: Local, pages: SiteServer, tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("describe")
    config = make_config(
        tmp,
        policy={"type": "explore"},
        run={"max_steps": 7, "repeats": REPEATS},
        annotation={"grounding": False},
        cluster={"workers": 1, "sessions_per_worker": 3, "dashboard": "127.0.0.1:0"},
    )
    tasks = [
        TaskSpec(
            id="duplicates", start_url=pages.base_url + "real/duplicates.html", instruction="x"
        ),
        TaskSpec(id="todo", start_url="site://todo/", instruction="Add an item"),
    ]
    shard = local.run(config, 0, tasks, run_id=RUN_ID)
    return Run(shard.rows("episodes"), shard.rows("steps"))


def test_groups_of_repeats(run: Run) -> None:
    """Each task is one group: its id from (run_id, task_id), samples 0..repeats-1, distinct
    seeds, and the same group columns on every step of each episode."""
    by_task: dict[str, list[Row]] = defaultdict(list)
    for episode in run.episodes:
        by_task[episode["task_id"]].append(episode)
    assert sorted(by_task) == ["duplicates", "todo"]
    for task_id, episodes in by_task.items():
        expected = hashlib.sha256(f"{RUN_ID}:{task_id}".encode()).hexdigest()[:16]
        assert {e["group_id"] for e in episodes} == {expected}
        assert sorted(e["sample_index"] for e in episodes) == list(range(REPEATS))
        assert len({e["seed"] for e in episodes}) == REPEATS
        assert len({e["episode_id"] for e in episodes}) == REPEATS
    assert len({e["group_id"] for e in run.episodes}) == 2
    episode_of = {e["episode_id"]: e for e in run.episodes}
    assert run.steps and all(
        (s["group_id"], s["sample_index"])
        == (episode_of[s["episode_id"]]["group_id"], episode_of[s["episode_id"]]["sample_index"])
        for s in run.steps
    )


def test_every_step_is_described(run: Run) -> None:
    kinds = {s["action_type"] for s in run.steps}
    assert {"click", "done"} <= kinds or {"click", "type"} <= kinds
    for step in run.steps:
        assert step["action_description"], step["action_repr"]
        assert step["model_action_description"] is None  # explore: no model words
    described = [s["action_description"] for s in run.steps]
    ordinals = [d for d in described if (m := CLICK.match(d)) and m["ordinal"]]
    assert ordinals, f"no ambiguous name was clicked, the ordinal rule went untested: {described}"


def test_descriptions_name_what_playwright_finds(
    run: Run, browser_plugin: ReadyPlugin, pages: SiteServer
) -> None:
    """Replay every episode; before each step, the element its description names (by role,
    name and ordinal, through Playwright's role query) is where the click landed (holding the
    step's point, checked or not as the verb says), or has focus for typing and keys."""
    starts = {"duplicates": pages.base_url + "real/duplicates.html"}
    starts["todo"] = browser_plugin.sites.resolve("site://todo/")
    by_episode: dict[str, list[Row]] = defaultdict(list)
    for step in run.steps:
        by_episode[step["episode_id"]].append(step)

    async def replay(start: str, steps: list[Row]) -> list[str]:
        judged = []
        async with browser_plugin.host.session() as session:
            await session.goto(start)
            for step in sorted(steps, key=lambda s: s["step_index"]):
                obs = await session.observe()  # the page settled, as the pipeline saw it
                assert obs.url == step["url"], "the replay left the recorded path"
                judged.append(await judge(session.page, step))
                await session.act(TypeAdapter(Action).validate_json(step["action_json"]))
        return judged

    judged: list[str] = []
    for steps in by_episode.values():
        judged += browser_plugin.run(replay(starts[steps[0]["task_id"]], steps))
    assert judged.count("click") >= 5 and "type" in judged, judged


async def judge(page: Page, step: Row) -> str:
    """Check one step's description against the page; which kind of check it got."""
    description, kind = str(step["action_description"]), str(step["action_type"])
    if kind == "click":
        match = CLICK.match(description)
        assert match, description
        scale = step["device_scale_factor"]
        point = (step["x_px"] / scale, step["y_px"] / scale)
        if match["bare"]:  # no name: the element of that role under the point
            assert await role_at(page, ROLES[match["bare"]], point), description
            return "click"
        found = await named(page, match)
        box = await found.bounding_box()
        assert box and inside(point, box), (description, point, box)
        if match["verb"] in ("Check", "Uncheck"):
            assert await found.is_checked() == (match["verb"] == "Uncheck"), description
        return "click"
    if kind in ("type", "key"):
        match = (TYPED if kind == "type" else PRESSED).match(description)
        assert match, description
        if match["name"] is None and match["icon"] is None and match["bare"] is None:
            return "key"  # a key without a target
        if match["bare"]:
            focused = await page.evaluate("() => document.activeElement.tagName.toLowerCase()")
            assert focused in ("input", "textarea", "select"), description
            return kind
        found = await named(page, match)
        assert await found.evaluate("el => el === document.activeElement"), description
        return kind
    expected = {"done": "Finish", "scroll": "Scroll", "back": "Go back", "goto": "Go to "}
    assert description.startswith(expected[kind]), description
    return kind


async def named(page: Page, match: re.Match[str]) -> Locator:
    """The one element a description's role, name and ordinal pick out, by Playwright alone:
    its role query, the matches shown in the viewport, in reading order when there is an
    ordinal (rows of tops within 8 px, then left to right); without one, the only match."""
    name = re.escape(match["name"] or match["icon"]).replace("'", "[\"']")  # `"` written `'`
    words = re.compile(f"^{name}$", re.IGNORECASE)
    role = ROLES.get(match["noun"] or match["icon_noun"])  # no role (`list item`): by text
    found = page.get_by_role(role, name=words) if role else page.get_by_text(words)  # type: ignore[arg-type]
    shown = await in_view(page, found)
    if not shown and role:
        # A name the screen shows that is not the accessible name (a checkbox's sibling label
        # under an aria-label that says more, issue 34): the role's elements whose own shown
        # words (a label, placeholder) or whose row's text say it.
        shown = [
            (box, element)
            for box, element in await in_view(page, page.get_by_role(role))  # type: ignore[arg-type]
            if any(words.search(w) for w in await element.evaluate(SHOWN_WORDS))
            or re.search(name, await element.evaluate(ROW_TEXT), re.IGNORECASE)
        ]
    if match["ordinal"] is None:
        assert len(shown) == 1, (match.string, len(shown))
        return shown[0][1]
    assert len(shown) >= 2, (match.string, len(shown))  # an ordinal only when ambiguous
    rows: list[list[tuple[dict[str, Any], Locator]]] = []
    for item in sorted(shown, key=lambda s: (s[0]["y"], s[0]["x"])):
        if rows and item[0]["y"] - rows[-1][0][0]["y"] <= 8:
            rows[-1].append(item)
        else:
            rows.append([item])
    ordered = [item for row in rows for item in sorted(row, key=lambda s: s[0]["x"])]
    return ordered[ORDINALS.index(match["ordinal"])][1]


# each of them may be what the screen shows: a visually hidden label is not (issue 44), and
# the field is then said by its placeholder
SHOWN_WORDS = """el => [[...(el.labels || [])].map((l) => l.innerText).join(' '),
  el.placeholder || '', el.innerText || '']"""
ROW_TEXT = "el => (el.parentElement && el.parentElement.innerText) || ''"


async def in_view(page: Page, found: Locator) -> list[tuple[dict[str, Any], Locator]]:
    """The matches shown in the viewport, with their boxes."""
    shown: list[tuple[dict[str, Any], Locator]] = []
    viewport = page.viewport_size
    assert viewport is not None
    for index in range(await found.count()):
        box = await found.nth(index).bounding_box()
        seen = box and box["y"] + box["height"] > 0 and box["y"] < viewport["height"]
        if box and seen and await found.nth(index).is_visible():
            shown.append((dict(box), found.nth(index)))
    return shown


async def role_at(page: Page, role: str, point: tuple[float, float]) -> bool:
    """Is an element of that role (Playwright's role query) under the point?"""
    found = page.get_by_role(role)  # type: ignore[arg-type]
    for index in range(await found.count()):
        box = await found.nth(index).bounding_box()
        if box and inside(point, box) and await found.nth(index).is_visible():
            return True
    return False


def inside(point: tuple[float, float], box: Any) -> bool:
    x, y = point
    return bool(
        box["x"] <= x <= box["x"] + box["width"] and box["y"] <= y <= box["y"] + box["height"]
    )
