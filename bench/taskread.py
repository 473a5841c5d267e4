"""Is a task's instruction carried out? The independent checker's answer on a live page, from
its own reading of the words (bench/taskwords.py) and its own Playwright queries, never from
the task's check (issue 43). No datagen import.

    Reading + the start page (`Start`: its pager's page, the links' targets, a text's count)
        + the final page + what the replay clicked and typed (`Seen`, read by us at each act)
        ─► done: bool

- state (`Check "X"`): a shown checkable element of the roles meant, called X, on (off);
- count (`Make the "Cart" button show 1`): a shown element of the role called "Cart" and
  the number ("Cart 1", "Cart (1)", "Cart: 1"), or called the name asked;
- choose (`Choose "V" in "S"`): a shown drop-down (list, spin button, slider, radio group)
  called S showing V;
- page (`Go to page 5`, `Go to the next page`): the pager's current page (its
  `aria-current` button, else "Page N of M" on the page, else `page=N` in the URL) is 5, the
  start's + 1, - 1, 1 or its last;
- open (`Open the "Pricing" page`): the URL is where a link called "Pricing" goes (a link of
  the start page, or one the replay clicked);
- add (`Add "Buy milk"`): the text is shown more often than at the start (a field's typed
  value is no text shown);
- steps: the replay did each act in order: clicked an element of the role called so (its
  drawn or accessible name; an accessible name's own act read without its quotes, any case),
  inside something drawn with the context; typed the text (into a field called so); pressed
  the keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page

from bench.taskpage import DESCRIBE
from bench.taskwords import Reading, Step, unquote

CHOICES = ("combobox", "listbox", "spinbutton", "slider")
CONTEXT_CHARS = 300  # an ancestor with more text than this is a region, not an item's context

# The element a click at (x, y) acts on (the control around what is drawn there; a label's
# control) or the focused one, as we read it: role, names, accessible name, drawn context, href.
FACTS = """(where) => {
  const flat = (t) => (t || '').replace(/\\s+/g, ' ').trim();
  const ACT = 'a[href],button,input,select,textarea,summary,option,[role=button],[role=link],' +
    '[role=tab],[role=checkbox],[role=switch],[role=radio],[role=menuitem],' +
    '[role=menuitemcheckbox],[role=option],[role=combobox],[role=slider],[role=spinbutton]';
  let el = where ? document.elementFromPoint(where[0], where[1]) : document.activeElement;
  if (!el) return null;
  if (where) {
    const hit = el.closest(ACT);
    const label = el.closest('label');
    el = hit || (label && label.control) || el;
  }
  const tag = el.tagName, type = (el.getAttribute('type') || '').toLowerCase();
  const implicit = tag === 'A' && el.hasAttribute('href') ? 'link'
    : tag === 'BUTTON' || tag === 'SUMMARY' ? 'button'
    : tag === 'SELECT' ? (el.multiple || el.size > 1 ? 'listbox' : 'combobox')
    : tag === 'TEXTAREA' ? 'textbox' : tag === 'OPTION' ? 'option'
    : tag === 'INPUT' ? ({checkbox: 'checkbox', radio: 'radio', range: 'slider',
        number: 'spinbutton', submit: 'button', button: 'button', reset: 'button',
        image: 'button'}[type] || 'textbox') : '';
  const role = (el.getAttribute('role') || '').split(/\\s+/)[0] || implicit;
  let label = el.getAttribute('aria-label') || '';
  for (const id of (el.getAttribute('aria-labelledby') || '').split(/\\s+/)) {
    const l = id && document.getElementById(id); if (l) label = flat(l.innerText);
  }
  const names = [el.innerText, label, el.getAttribute('title'), el.getAttribute('alt'),
    el.getAttribute('placeholder'), ['button', 'submit'].includes(type) ? el.value : ''];
  for (const l of el.labels || []) names.push(l.innerText);
  const context = [];
  for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
    const text = flat(up.innerText);
    if (text.length > CONTEXT_CHARS) break;
    context.push(text);
  }
  return { role, names: names.map(flat).filter(Boolean), label: flat(label), context,
           href: el.href || '' };
}""".replace("CONTEXT_CHARS", str(CONTEXT_CHARS))

# Every shown element's own names (aria-label, title, its text), for a count of any role.
NAMED = """(els) => els.filter((el) => {
  const box = el.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden';
}).map((el) => [el.getAttribute('aria-label'), el.getAttribute('title'), el.innerText]
  .map((t) => (t || '').replace(/\\s+/g, ' ').trim()).filter(Boolean))"""

# A radio group's name(s) and the name of its checked radio.
GROUPS = """(els) => els.map((g) => {
  const flat = (t) => (t || '').replace(/\\s+/g, ' ').trim();
  const on = g.querySelector('input[type=radio]:checked, [role=radio][aria-checked=true]');
  const label = on && (on.labels && on.labels[0] ? on.labels[0].innerText : on.innerText);
  const names = [g.getAttribute('aria-label')];
  for (const id of (g.getAttribute('aria-labelledby') || '').split(/\\s+/)) {
    const l = id && document.getElementById(id); if (l) names.push(l.innerText);
  }
  const legend = g.querySelector('legend'); if (legend) names.push(legend.innerText);
  return { names: names.map(flat).filter(Boolean), value: flat(label || (on && on.value)) };
})"""

# The pager's current page and its last, as the page shows them.
PAGER = """() => {
  const num = (t) => { const m = /^(?:page\\s*)?(\\d+)$/i.exec((t || '').trim());
                       return m ? +m[1] : null; };
  let now = null, last = null;
  for (const el of document.querySelectorAll('[aria-current=page], [aria-current=true]')) {
    const n = num(el.getAttribute('aria-label')) ?? num(el.innerText); if (n) now = n;
  }
  for (const el of document.querySelectorAll('button, a, [role=button], [role=link]')) {
    const n = num(el.getAttribute('aria-label')) ?? num(el.innerText);
    if (n && (last === null || n > last)) last = n;
  }
  const m = /\\bpage (\\d+) of (\\d+)\\b/i.exec(document.body ? document.body.innerText : '');
  if (m) { now = now ?? +m[1]; last = +m[2]; }
  const u = /[?#&]page=(\\d+)/.exec(location.href);
  if (u) now = now ?? +u[1];
  return [now, last];
}"""


@dataclass
class Seen:
    """An act of a replay as the checker saw it: `kind` (click, type, key), the element's
    `role`, `names` (drawn and accessible), accessible `label`, drawn `context` (the text of
    its small ancestors), `href`; what was typed or pressed (`text`)."""

    kind: str
    role: str = ""
    names: list[str] = field(default_factory=list)
    label: str = ""
    context: list[str] = field(default_factory=list)
    href: str = ""
    text: str = ""

    def said(self) -> str:
        if self.kind == "click":
            name = (self.names or [""])[0]
            named = f" ({self.label})" if self.label and self.label != name else ""
            return f"{self.role or 'element'} {name!r}{named}"
        return f"{self.kind} {self.text!r}"


@dataclass
class Start:
    """What a reading needs of the start page: the pager's page and last page, where links
    go (by their names), the page's text."""

    page: int | None = None
    last: int | None = None
    links: list[tuple[list[str], str]] = field(default_factory=list)
    text: str = ""


async def seen_at(page: Page, action: dict[str, Any]) -> Seen | None:
    """What a recorded action acts on, read before it is replayed (a type's or key's: the
    focused element); None for acts no words name (scroll, wait)."""
    kind = {"click": "click", "type": "type", "key": "key"}.get(action["type"])
    if kind is None:
        return None
    where = [action["x"], action["y"]] if kind == "click" else None
    facts = await page.evaluate(FACTS, where) or {}
    text = action.get("text", "") if kind == "type" else action.get("combo", "")
    keep = ("role", "names", "label", "context", "href")
    return Seen(kind, text=text, **{k: facts[k] for k in keep if k in facts})


def record(seen: list[Seen], new: Seen | None) -> None:
    """Add an act; typing that goes on in the same field is one text."""
    if new is None:
        return
    if seen and new.kind == seen[-1].kind == "type" and new.names == seen[-1].names:
        seen[-1].text += new.text
    else:
        seen.append(new)


async def body_text(page: Page) -> str:
    text = await page.evaluate("() => document.body ? document.body.innerText : ''")
    return str(text)


async def start_of(page: Page) -> Start:
    """The start page as the readings need it."""
    now, last = await page.evaluate(PAGER)
    links = await page.get_by_role("link").evaluate_all(
        "(els) => els.map((el) => [[el.innerText, el.getAttribute('aria-label'),"
        " el.getAttribute('title')].map((t) => (t || '').replace(/\\s+/g, ' ').trim()), el.href])"
    )
    return Start(now, last, [(names, href) for names, href in links], await body_text(page))


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _named(name: str, seen: Seen, label: bool) -> bool:
    if not label:
        return name in seen.names
    said = [unquote(seen.label.split(", ")[0]), *map(unquote, seen.names)]
    return name.lower() in (s.lower() for s in said)


def matches(step: Step, seen: Seen) -> bool:
    """Did this act do this step of the words?"""
    if step.kind != seen.kind:
        return False
    if step.kind == "key":
        return step.text.lower() == seen.text.lower()
    if step.kind == "type":
        return step.text == seen.text and (not step.name or step.name in seen.names)
    return (
        (not step.roles or seen.role in step.roles)
        and _named(step.name, seen, step.label)
        and (not step.context or any(step.context in c for c in seen.context))
    )


def did(steps: tuple[Step, ...], seen: list[Seen]) -> bool:
    """Are the steps, in order, among the replay's acts (others between them allowed)?"""
    acts = iter(seen)
    return all(any(matches(step, act) for act in acts) for step in steps)


async def _described(page: Page, roles: frozenset[str] | tuple[str, ...]) -> list[Any]:
    found: list[Any] = []
    for role in sorted(roles):
        found += await page.get_by_role(role).evaluate_all(DESCRIBE)  # type: ignore[arg-type]
    return [e for e in found if e["shown"]]


async def _count(page: Page, reading: Reading) -> bool:
    if reading.roles:
        names = [e["names"] for e in await _described(page, reading.roles)]
    else:
        names = await page.locator("body *").evaluate_all(NAMED)
    if not reading.on:  # "read "B"": called B
        return any(reading.value in n for n in names)
    shows = re.compile(rf"{re.escape(reading.subject)}[\s:]*\(?{re.escape(reading.value)}\)?")
    return any(shows.fullmatch(one) for n in names for one in n)


async def _choose(page: Page, reading: Reading) -> bool:
    found = await _described(page, CHOICES)
    found += await page.get_by_role("radiogroup").evaluate_all(GROUPS)
    return any(reading.subject in e["names"] and e["value"] == reading.value for e in found)


def _page_is(reading: Reading, start: Start, now: int | None, last: int | None) -> bool:
    if now is None:
        return False
    if reading.value.isdigit():
        return now == int(reading.value)
    if start.page is None:
        return False
    want = {"next": start.page + 1, "previous": start.page - 1, "first": 1}
    return now == want.get(reading.value, last) and now != start.page


async def done(page: Page, reading: Reading, start: Start, seen: list[Seen]) -> bool:
    """Is the instruction `reading` carried out on `page`, after the acts `seen`?"""
    if reading.kind == "steps":
        return did(reading.steps, seen)
    if reading.kind == "state":
        named = [e for e in await _described(page, reading.roles) if reading.subject in e["names"]]
        return (
            any(e["on"] for e in named)
            if reading.on
            else bool(named) and all(e["off"] for e in named)
        )
    if reading.kind == "count":
        return await _count(page, reading)
    if reading.kind == "choose":
        return await _choose(page, reading)
    if reading.kind == "page":
        now, last = await page.evaluate(PAGER)
        return _page_is(reading, start, now, last)
    if reading.kind == "open":
        hrefs = [h for names, h in start.links if reading.subject in names]
        hrefs += [s.href for s in seen if s.role == "link" and reading.subject in s.names]
        return any(_same_url(page.url, h) for h in hrefs if h)
    if reading.kind == "add":
        return (await body_text(page)).count(reading.subject) > start.text.count(reading.subject)
    raise ValueError(f"a reading this checker cannot decide: {reading}")
