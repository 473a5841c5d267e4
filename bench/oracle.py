"""An independent judge of grounding rows: its own Playwright code, never datagen's element scan.

    targets = await ground_truth(page)                     # what a person could click, now
    verdict = await judge(page, rows, screenshot, scale)   # datagen's rows for that moment
    later = await settled_changes(page, verdict.targets)   # was that moment the settled page?
    gaps = await annotation_gaps(page)                     # is the page's annotation complete?

Ground truth is written by the page's author: every element a person would click or type into
carries `data-gt="KIND"` (native | custom | listener | aria | svg); a region whose insides are
not judged (a closed shadow root) carries `data-gt-skip`; `data-gt-name="…"` says what a person
calls an element whose name is easy to get wrong (a field named by the text beside it), and a
correct row whose expression lacks it is "misnamed". `data-gt-row` marks a control row: a
correct row of a target inside one whose expression quotes text the row does not show is
"outside" (named from someone else's words). `data-gt-drawn` marks an opacity-0 control drawn
by what lies under it (counted visible); `data-gt-case="…"` names the hard case a target stands
for (icon, glyph, sibling-label, instruction, filled, …): recall is also counted per case. Pages nobody annotated (the bundled
sites) can be judged with `discover=True`: the targets are then the elements Playwright's role
queries find plus the elements CDP reports click-like listeners on.

The oracle's hit test is a real mouse click. A capture-phase listener on every frame's window
records the targets on the click's composed path (innermost first) and cancels the event, and
the pointer and hover events around it, so the page does not change. "A click at (x, y)
reaches T" means T is the innermost target on that path; a click on a <label> reaches the
control it labels.

A row is correct when a click at its point reaches a target T and its box lies inside T's box
(± BOX_SLACK CSS px; T's box of a link that wraps is the union of its lines). A target counts
for recall when it is visible, static (it did not move while sampled), in the viewport and
reached by a click at some point of it; it is found when it has a correct row. A correct row
disagrees with its image when under its box the screenshot is not, for the most part, the
background colour of its target (checked for targets painted that way: an opaque background
over most of their box in the oracle's own screenshot); the row of a moving target disagrees
too. A correct row of a wrapped link that boxes several of its lines, not one, is "loose".
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, get_args

import numpy as np
from PIL import Image
from playwright.async_api import Frame, Page

Box = tuple[float, float, float, float]  # x1, y1, x2, y2 in CSS px of the top-level viewport
Point = tuple[float, float]
Rgb = tuple[int, int, int]

KINDS = ("native", "custom", "listener", "aria", "svg")
BOX_SLACK = 3.0  # CSS px a row's box may stick out of its target's box
COLOUR_TOLERANCE = 40  # per channel (JPEG, anti-aliasing)
MIN_COLOUR_SHARE = 0.5  # of a row's box that must be its target's colour
MOTION_SAMPLE_S = 0.15  # targets whose box changes over this long are moving
MOTION_PX = 1.0
# Where in a box the hit test tries, as fractions of width and height: centre first.
PROBES = ((0.5, 0.5), (0.25, 0.5), (0.75, 0.5), (0.5, 0.25), (0.5, 0.75), (0.1, 0.5), (0.9, 0.5))
# Roles a person clicks or types into (Playwright's role names).
Role = Literal[
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "switch", "combobox",
    "listbox", "option", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "slider",
    "spinbutton", "treeitem",
]  # fmt: skip
ROLES: tuple[Role, ...] = get_args(Role)
CLICKY = frozenset({"click", "mousedown", "mouseup", "pointerdown", "pointerup", "dblclick"})
KEY = "Symbol.for('gt.oracle')"

# Installed in every frame. Idempotent; `mode` "annotated" (re)collects the [data-gt] elements,
# through open shadow roots, in document order.
INSTALL_JS = (
    """(mode) => {
  const K = """
    + KEY
    + """;
  let o = window[K];
  if (!o) {
    o = { targets: [], kinds: [], log: [], handlers: [], uids: new WeakMap(), next: 0 };
    Object.defineProperty(window, K, { value: o, enumerable: false, configurable: true });
    o.up = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;
    o.describe = (e) => {
      if (!e || e.nodeType !== 1) return String(e && e.nodeName);
      const text = (e.getAttribute('aria-label') || e.textContent || e.getAttribute('title')
        || e.getAttribute('placeholder') || e.getAttribute('name') || e.getAttribute('value')
        || e.getAttribute('data-name') || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
      return e.localName + (e.id ? '#' + e.id : '') + (text ? ' "' + text + '"' : '');
    };
    o.label = (e) => (e.getAttribute('aria-label') || e.textContent || e.getAttribute('title')
      || e.getAttribute('placeholder') || e.getAttribute('value') || e.getAttribute('data-name')
      || e.getAttribute('name') || '').trim().replace(/\\s+/g, ' ').slice(0, 80);
    o.uid = (e) => {
      if (!o.uids.has(e)) o.uids.set(e, o.next++);
      return o.uids.get(e);
    };
    o.add = (e, kind) => {
      if (!e || e.nodeType !== 1 || o.targets.includes(e)) return false;
      o.uid(e); o.targets.push(e); o.kinds.push(kind); return true;
    };
    // Every word a person can see in a control row (or read as its name): its text, the
    // glyphs of its pseudo-elements, the names its elements carry (a field's `name` too).
    o.rowWords = (row) => {
      const words = [row.innerText || ''];
      for (const n of [row, ...row.querySelectorAll('*')]) {
        for (const w of ['::before', '::after']) {
          const m = (getComputedStyle(n, w).content || '').match(/^"(.*)"$/);
          if (m) words.push(m[1]);
        }
        for (const a of ['aria-label', 'title', 'alt', 'placeholder']) {
          if (n.getAttribute(a)) words.push(n.getAttribute(a));
        }
        if (n.localName === 'title' || n.localName === 'desc') words.push(n.textContent);
        if ('value' in n && typeof n.value === 'string') words.push(n.value);
        // a field's own `name` (what a `named "…"` expression quotes), as datagen spells it
        if (n.getAttribute('name')) words.push(n.getAttribute('name').replace(/[_\\-.[\\]]+/g, ' '));
      }
      return words.join(' | ');
    };
    o.read = () => o.targets.map((e, i) => {
      const r = e.getBoundingClientRect();
      const rects = [...e.getClientRects()].filter((q) => q.width > 0 && q.height > 0)
        .map((q) => [q.left, q.top, q.right, q.bottom]);
      // data-gt-drawn: an opacity-0 control drawn by what lies under it (a sibling label's
      // circle): visible where its opacity is all that hides it
      const drawn = e.hasAttribute('data-gt-drawn');
      const visible = e.isConnected && (!e.checkVisibility
        || e.checkVisibility({ checkOpacity: !drawn, checkVisibilityCSS: true }));
      const row = e.closest('[data-gt-row]');
      return { uid: o.uid(e), kind: o.kinds[i], tag: e.localName, name: e.getAttribute('data-gt-name'), label: o.label(e), desc: o.describe(e),
               box: [r.left, r.top, r.right, r.bottom], rects, visible,
               case: e.getAttribute('data-gt-case'), row: row ? o.rowWords(row) : null,
               bg: e.isConnected ? getComputedStyle(e).backgroundColor : '' };
    });
    const swallow = (ev) => { ev.stopImmediatePropagation(); };
    const cancel = (ev) => { ev.stopImmediatePropagation(); ev.preventDefault(); };
    const click = (ev) => {
      cancel(ev);
      const path = ev.composedPath();
      let hit = -1, skip = false, via = '';
      for (const n of path) {
        if (!n || n.nodeType !== 1) continue;
        if (n.hasAttribute('data-gt-skip')) { skip = true; break; }
        if (o.targets.includes(n)) { hit = o.uid(n); break; }
        if (n.localName === 'label' && n.control && o.targets.includes(n.control)) {
          hit = o.uid(n.control); via = 'label'; break;
        }
      }
      o.log.push({ hit, skip, via, what: o.describe(path[0]) });
    };
    for (const t of ['pointerdown', 'pointerup', 'pointermove', 'pointerover', 'pointerout',
                     'pointerenter', 'pointerleave', 'mousemove', 'mouseover', 'mouseout',
                     'mouseenter', 'mouseleave']) o.handlers.push([t, swallow]);
    for (const t of ['mousedown', 'mouseup', 'dblclick', 'auxclick', 'contextmenu'])
      o.handlers.push([t, cancel]);
    o.handlers.push(['click', click]);
  }
  if (!o.on) {
    for (const [t, f] of o.handlers) window.addEventListener(t, f, true);
    o.on = true;
  }
  if (mode === 'annotated') {
    const found = [];
    const walk = (root) => {
      for (const e of root.querySelectorAll('*')) {
        if (e.hasAttribute('data-gt')) found.push(e);
        if (e.shadowRoot) walk(e.shadowRoot);
      }
    };
    walk(document);
    found.forEach(o.uid);
    o.targets = found;
    o.kinds = found.map((e) => e.getAttribute('data-gt'));
  }
  return o.targets.length;
}"""
)
UNINSTALL_JS = f"""() => {{
  const o = window[{KEY}];
  if (o && o.on) {{ for (const [t, f] of o.handlers) window.removeEventListener(t, f, true); o.on = false; }}
}}"""
READ_JS = f"() => window[{KEY}] ? window[{KEY}].read() : []"
POP_LOG_JS = f"() => window[{KEY}] ? window[{KEY}].log.splice(0) : []"

# Is an element (the one a role query or a listener found) covered by the annotation? Yes if
# it or an ancestor (across shadow roots) is a target or skipped, one of its labels is a
# target, or it holds a target (a container with a delegated listener).
COVERED_FN = """function () {
  const up = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const e = this;
  const describe = (e) => {
    const text = (e.getAttribute('aria-label') || e.textContent || e.getAttribute('title')
      || e.getAttribute('name') || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
    return e.localName + (e.id ? '#' + e.id : '') + (text ? ' "' + text + '"' : '');
  };
  if (e === document.body || e === document.documentElement) return [true, 'body'];
  for (let n = e; n; n = up(n))
    if (n.hasAttribute('data-gt') || n.hasAttribute('data-gt-skip')) return [true, describe(e)];
  for (const l of e.labels || []) if (l.closest('[data-gt]')) return [true, describe(e)];
  if (e.querySelector('[data-gt]') || (e.shadowRoot && e.shadowRoot.querySelector('[data-gt]')))
    return [true, describe(e)];
  return [false, describe(e)];
}"""
COVERED_ALL_JS = f"els => els.map(e => ({COVERED_FN}).call(e))"

# Discovery for pages without an annotation. A role query's element is registered as found,
# except an input nobody can see: its label (what a user clicks) is registered instead.
REGISTER_ROLE_JS = f"""(els) => {{
  const o = window[{KEY}];
  const NATIVE = new Set(['a', 'button', 'input', 'select', 'textarea', 'summary', 'option']);
  for (const e of els) {{
    const s = getComputedStyle(e), r = e.getBoundingClientRect();
    const hidden = s.opacity === '0' || r.width <= 1 || r.height <= 1;
    if (hidden && e.labels && e.labels.length) {{ o.add(e.labels[0], 'custom'); continue; }}
    const kind = NATIVE.has(e.localName) ? 'native' : (e.namespaceURI.includes('svg') ? 'svg' : 'aria');
    o.add(e, kind);
  }}
}}"""
# A listener's element, deepest first: registered unless it is the page itself, holds a
# target already (a delegating container) or sits inside one.
REGISTER_LISTENER_FN = f"""function () {{
  const o = window[{KEY}], e = this;
  if (!o || e === document.body || e === document.documentElement) return false;
  const up = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;
  for (let n = up(e); n; n = up(n)) if (o.targets.includes(n)) return false;
  if (o.targets.some((t) => e.contains(t))) return false;
  return o.add(e, e.namespaceURI.includes('svg') ? 'svg' : 'listener');
}}"""


class RowLike(Protocol):
    """What the oracle reads of a grounding row (datagen's GroundingRow has all of it)."""

    @property
    def bbox_css(self) -> tuple[float, float, float, float]: ...
    @property
    def bbox_px(self) -> tuple[float, float, float, float]: ...
    @property
    def point_px(self) -> tuple[float, float]: ...
    @property
    def referring_expression(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class Target:
    """One element a person could click or type into, as the oracle sees it now."""

    id: str  # "frame:index", stable for one page load
    kind: str
    frame: int
    index: int  # in the order the oracle first saw the frame's targets
    tag: str
    label: str
    description: str
    box: Box  # the element's bounding box (a wrapped link: the union of its lines)
    rects: tuple[Box, ...]  # its client rects (a wrapped link: one per line)
    colour: Rgb | None  # opaque background colour, if any
    visible: bool
    in_viewport: bool
    moving: bool = False
    reachable: bool = False  # a click at some point of it reaches it
    hit_point: Point | None = None
    name: str | None = None  # what a person calls it (`data-gt-name`), where the author said
    case: str | None = None  # the hard case it stands for (`data-gt-case`), where the author said
    row: str | None = None  # every word of its control row (`data-gt-row`), where it has one

    @property
    def counts(self) -> bool:
        """Does recall count this target?"""
        return self.visible and self.in_viewport and not self.moving and self.reachable


@dataclass(frozen=True)
class Hit:
    """Where one real click landed: a target of frame `frame`, a skipped region, or nothing."""

    frame: int
    index: int  # the target's index; -1: no target
    skip: bool
    via: str
    what: str  # the innermost element clicked

    @property
    def target_id(self) -> str | None:
        return f"{self.frame}:{self.index}" if self.index >= 0 else None


@dataclass(frozen=True)
class RowVerdict:
    """One row: correct | wrong | moving (the row of a moving target) | unjudged."""

    index: int
    expression: str
    point: Point  # CSS px
    box: Box  # CSS px
    status: str
    target: str | None  # the target's id
    reason: str = ""
    colour_share: float | None = None  # of its box in the screenshot; None: not checked
    misnamed: bool = False  # correct box, but its expression lacks the target's given name
    loose: bool = False  # correct box over several lines of a wrapped target, not one line
    outside: bool = False  # correct box, but it quotes text that is not in the target's row
    unshown: tuple[str, ...] = ()  # texts it quotes that the page does not show (`shown_text`)

    @property
    def disagrees(self) -> bool:
        return self.status == "moving" or (
            self.colour_share is not None and self.colour_share < MIN_COLOUR_SHARE
        )


@dataclass
class PageVerdict:
    """datagen's rows for one observation, judged on the live page right after it."""

    url: str
    targets: list[Target]
    rows: list[RowVerdict]
    duplicates: dict[str, int]  # lower-cased expression → rows sharing it
    page_changed: bool  # static targets moved while the oracle judged: judgement unsure
    judge_ms: float = 0.0
    found: set[str] = field(default_factory=set)  # ids of targets with a correct row

    @property
    def correct(self) -> int:
        return sum(r.status == "correct" for r in self.rows)

    @property
    def wrong(self) -> list[RowVerdict]:
        return [r for r in self.rows if r.status == "wrong"]

    @property
    def precision(self) -> float:
        judged = self.correct + len(self.wrong)
        return self.correct / judged if judged else 1.0

    @property
    def counted(self) -> list[Target]:
        return [t for t in self.targets if t.counts]

    def recall(self) -> dict[str, tuple[int, int]]:
        """kind → (targets found, targets counted), for kinds the page has."""
        out: dict[str, tuple[int, int]] = {}
        for t in self.counted:
            hit, total = out.get(t.kind, (0, 0))
            out[t.kind] = (hit + (t.id in self.found), total + 1)
        return out

    def recall_by_case(self) -> dict[str, tuple[int, int]]:
        """case (`data-gt-case`) → (targets found, targets counted), for cases the page has."""
        out: dict[str, tuple[int, int]] = {}
        for t in self.counted:
            if t.case:
                hit, total = out.get(t.case, (0, 0))
                out[t.case] = (hit + (t.id in self.found), total + 1)
        return out

    @property
    def outside(self) -> list[RowVerdict]:
        return [r for r in self.rows if r.outside]

    @property
    def unshown(self) -> list[RowVerdict]:
        """Rows quoting text the page does not show (an aria-label, a name attribute, …)."""
        return [r for r in self.rows if r.unshown]

    @property
    def misses(self) -> list[Target]:
        return [t for t in self.counted if t.id not in self.found]

    @property
    def disagreeing(self) -> list[RowVerdict]:
        return [r for r in self.rows if r.disagrees]

    @property
    def misnamed(self) -> list[RowVerdict]:
        return [r for r in self.rows if r.misnamed]

    @property
    def loose(self) -> list[RowVerdict]:
        return [r for r in self.rows if r.loose]

    @property
    def duplicate_rows(self) -> int:
        return sum(self.duplicates.values())

    def report(self) -> str:
        """Figures, then every miss, wrong row, disagreement and duplicate, for a person."""
        recall = " ".join(f"{k} {h}/{n}" for k, (h, n) in sorted(self.recall().items()))
        lines = [
            f"{self.url}: {len(self.rows)} rows, {self.correct} correct, {len(self.wrong)} wrong "
            f"(precision {self.precision:.3f}); recall {recall or '-'}; "
            f"{self.duplicate_rows} rows with a shared expression; "
            f"{len(self.disagreeing)} rows disagree with the image; "
            f"{len(self.misnamed)} misnamed; {len(self.outside)} quote text outside their row; "
            f"{len(self.loose)} box several lines; {len(self.unshown)} quote text not shown"
            + ("; PAGE CHANGED WHILE JUDGED" if self.page_changed else "")
        ]
        lines += [f"  miss  {t.kind:<8} {t.description} box={_fmt(t.box)}" for t in self.misses]
        for r in self.rows:
            if (
                r.status in ("wrong", "moving")
                or r.disagrees
                or r.misnamed
                or r.loose
                or r.outside
                or r.unshown
            ):
                share = "" if r.colour_share is None else f" colour share {r.colour_share:.2f}"
                unshown = f"; quotes {list(r.unshown)} not shown" if r.unshown else ""
                lines.append(
                    f"  {r.status:<5} row {r.index} {r.expression!r} box={_fmt(r.box)}: "
                    f"{r.reason}{share}{unshown}"
                )
        lines += [f"  dup   {n} rows say {e!r}" for e, n in self.duplicates.items()]
        return "\n".join(lines)


@dataclass(frozen=True)
class Gaps:
    """Interactive elements the annotation does not cover (each a warning), and the cost of
    finding listeners through CDP."""

    by_role: list[str]
    by_listener: list[str]
    listener_nodes: int  # elements CDP was asked about
    listener_ms: float


# --------------------------------------------------------------------------- frames


@dataclass(frozen=True)
class _Frame:
    index: int
    frame: Frame
    offset: Point  # its viewport's origin in top-level CSS px
    clip: Box  # the part of the top-level viewport it shows


async def _frames(page: Page) -> list[_Frame]:
    """Every frame the oracle can read, with where its viewport lies in the top-level one."""
    size = page.viewport_size or {"width": 1280, "height": 800}
    top: Box = (0.0, 0.0, float(size["width"]), float(size["height"]))
    out: list[_Frame] = []
    known: dict[Frame, _Frame] = {}
    for index, frame in enumerate(page.frames):
        if frame.is_detached():
            continue
        if frame.parent_frame is None:
            entry = _Frame(index, frame, (0.0, 0.0), top)
        else:
            parent = known.get(frame.parent_frame)
            try:
                element = await frame.frame_element()
                box = await element.bounding_box()
                inner = await element.evaluate(
                    "e => { const s = getComputedStyle(e); return [e.clientLeft + parseFloat(s.paddingLeft),"
                    " e.clientTop + parseFloat(s.paddingTop), e.clientWidth - parseFloat(s.paddingLeft)"
                    " - parseFloat(s.paddingRight), e.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom)] }"
                )
            except Exception:
                continue
            if box is None or parent is None:
                continue
            x, y = box["x"] + inner[0], box["y"] + inner[1]
            clip = _intersect((x, y, x + inner[2], y + inner[3]), parent.clip)
            entry = _Frame(index, frame, (x, y), clip or (x, y, x, y))
        known[frame] = entry
        out.append(entry)
    return out


async def _install(frames: list[_Frame], mode: str) -> list[_Frame]:
    """Install the hit test in each frame; frames that cannot run scripts are left out."""
    ok = []
    for f in frames:
        try:
            await f.frame.evaluate(INSTALL_JS, mode)
            ok.append(f)
        except Exception:
            continue
    return ok


async def _uninstall(frames: list[_Frame]) -> None:
    for f in frames:
        try:
            await f.frame.evaluate(UNINSTALL_JS)
        except Exception:
            continue


async def _read(frames: list[_Frame]) -> dict[str, dict[str, Any]]:
    """Every target of every frame, boxes moved into top-level viewport coordinates."""
    out: dict[str, dict[str, Any]] = {}
    for f in frames:
        try:
            items = await f.frame.evaluate(READ_JS)
        except Exception:
            continue
        dx, dy = f.offset
        for item in items:
            item["box"] = _shift(item["box"], dx, dy)
            item["rects"] = [_shift(r, dx, dy) for r in item["rects"]]
            item["frame"], item["index"], item["clip"] = f.index, item["uid"], f.clip
            out[f"{f.index}:{item['uid']}"] = item
    return out


async def click(page: Page, frames: list[_Frame], point: Point) -> Hit | None:
    """A real mouse click at `point` (CSS px), cancelled by the installed listeners: where it
    landed. None: no frame saw it."""
    await page.mouse.click(point[0], point[1])
    for f in frames:
        try:
            log = await f.frame.evaluate(POP_LOG_JS)
        except Exception:
            continue
        if log:
            last = log[-1]
            return Hit(f.index, int(last["hit"]), bool(last["skip"]), last["via"], last["what"])
    return None


# --------------------------------------------------------------------------- ground truth


async def ground_truth(page: Page, *, discover: bool = False) -> list[Target]:
    """The targets of every frame, now: boxes, visibility, motion and the click hit test.
    `discover`: the page has no annotation; find targets by role and by CDP listeners."""
    frames, targets = await _ground_truth(page, discover)
    await _uninstall(frames)
    return targets


async def _ground_truth(page: Page, discover: bool) -> tuple[list[_Frame], list[Target]]:
    frames = await _install(await _frames(page), "discovered" if discover else "annotated")
    if discover:
        await _discover(page, frames)
    first = await _read(frames)
    await asyncio.sleep(MOTION_SAMPLE_S)
    second = await _read(frames)
    targets: list[Target] = []
    for tid, item in second.items():
        before = first.get(tid)
        moving = before is None or _moved(before["box"], item["box"])
        visible_rects = [r for r in (_intersect(q, item["clip"]) for q in item["rects"]) if r]
        targets.append(
            Target(
                id=tid,
                kind=item["kind"],
                frame=item["frame"],
                index=item["index"],
                tag=item["tag"],
                label=item["label"],
                description=item["desc"],
                box=_box(item["box"]),
                rects=tuple(_box(r) for r in item["rects"]),
                colour=_opaque(item["bg"]),
                name=item.get("name"),
                case=item.get("case"),
                row=item.get("row"),
                visible=bool(item["visible"]),
                in_viewport=any(_area_ok(r) for r in visible_rects),
                moving=moving,
            )
        )
    checked = []
    for t in targets:
        if t.visible and t.in_viewport and not t.moving:
            point = await _reach(page, frames, t)
            t = replace(t, reachable=point is not None, hit_point=point)
        checked.append(t)
    return frames, checked


async def _reach(page: Page, frames: list[_Frame], target: Target) -> Point | None:
    """The first probe point of the target's visible part whose click reaches it."""
    clip = next(f.clip for f in frames if f.index == target.frame)
    for rect in target.rects:
        part = _intersect(rect, clip)
        if part is None or not _area_ok(part):
            continue
        for fx, fy in PROBES:
            point = (part[0] + fx * (part[2] - part[0]), part[1] + fy * (part[3] - part[1]))
            hit = await click(page, frames, point)
            if hit is not None and hit.target_id == target.id:
                return point
    return None


async def _discover(page: Page, frames: list[_Frame]) -> None:
    """Register the targets of a page without an annotation: role queries, then listeners."""
    for f in frames:
        for role in ROLES:
            try:
                await f.frame.get_by_role(role).evaluate_all(REGISTER_ROLE_JS)
            except Exception:
                continue
        # <summary> has no role Playwright's queries return, yet a click on it opens <details>
        with contextlib.suppress(Exception):
            await f.frame.locator("summary").evaluate_all(REGISTER_ROLE_JS)
    cdp = await page.context.new_cdp_session(page)
    try:
        nodes, _ = await _listener_objects(cdp)
        for object_id in reversed(nodes):  # deepest first
            await cdp.send(
                "Runtime.callFunctionOn",
                {"objectId": object_id, "functionDeclaration": REGISTER_LISTENER_FN},
            )
        await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": "gt-oracle"})
    finally:
        await cdp.detach()


async def _listener_objects(cdp: Any) -> tuple[list[str], int]:
    """Remote object ids of every element (all frames, all shadow roots) that has a click-like
    listener, in document order; and how many elements were asked."""
    doc = await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
    backend: list[int] = []
    stack = [doc["root"]]
    while stack:
        node = stack.pop()
        if node.get("nodeType") == 1:
            backend.append(node["backendNodeId"])
        children = [
            *node.get("children", []),
            *node.get("shadowRoots", []),
            *([node["contentDocument"]] if "contentDocument" in node else []),
        ]
        stack.extend(reversed(children))
    limit = asyncio.Semaphore(32)

    async def one(node_id: int) -> str | None:
        async with limit:
            try:
                resolved = await cdp.send(
                    "DOM.resolveNode", {"backendNodeId": node_id, "objectGroup": "gt-oracle"}
                )
                object_id = resolved["object"]["objectId"]
                found = await cdp.send("DOMDebugger.getEventListeners", {"objectId": object_id})
            except Exception:
                return None
            listeners = found.get("listeners", [])
            return object_id if any(x["type"] in CLICKY for x in listeners) else None

    results = await asyncio.gather(*(one(n) for n in backend))
    return [r for r in results if r is not None], len(backend)


async def annotation_gaps(page: Page, *, listeners: bool = True) -> Gaps:
    """Interactive elements that Playwright's role queries, and CDP's listener lists, find
    but the annotation does not cover. `listeners=False` skips the CDP walk (the slow part)."""
    by_role: list[str] = []
    for index, frame in enumerate(page.frames):
        for role in ROLES:
            try:
                items = await frame.get_by_role(role).evaluate_all(COVERED_ALL_JS)
            except Exception:
                continue
            by_role += [f"frame {index} role={role}: {d}" for ok, d in items if not ok]
    by_listener: list[str] = []
    nodes, elapsed = 0, 0.0
    if listeners:
        cdp = await page.context.new_cdp_session(page)
        try:
            started = time.perf_counter()
            objects, nodes = await _listener_objects(cdp)
            elapsed = (time.perf_counter() - started) * 1000
            for object_id in objects:
                result = await cdp.send(
                    "Runtime.callFunctionOn",
                    {
                        "objectId": object_id,
                        "functionDeclaration": COVERED_FN,
                        "returnByValue": True,
                    },
                )
                ok, what = result["result"]["value"]
                if not ok:
                    by_listener.append(f"listener: {what}")
            await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": "gt-oracle"})
        finally:
            await cdp.detach()
    return Gaps(sorted(set(by_role)), by_listener, nodes, round(elapsed, 1))


async def settled_changes(
    page: Page, judged: list[Target], *, discover: bool = False, wait_s: float = 1.5
) -> list[str]:
    """What the page still did after the judged moment: after `wait_s`, the targets that are
    counted now but were not then (not rendered yet, or moving), and static targets that moved.
    Empty: the observation was of the settled page."""
    await asyncio.sleep(wait_s)
    then = {t.id: t for t in judged}
    changes = []
    now = await ground_truth(page, discover=discover)
    if any(then[t.id].moving for t in now if t.counts and t.id in then):
        # A target that moves for ever (a bouncing button) can look still in one motion sample
        # (two samples either side of its turning point): it counts as settled only if it looks
        # still in a second sample too.
        again = {t.id: t for t in await ground_truth(page, discover=discover)}
        now = [t for t in now if not (t.id in again and again[t.id].moving)]
    for t in now:
        old = then.get(t.id)
        if t.counts and (old is None or not old.counts):
            why = "absent" if old is None else ("moving" if old.moving else "not reachable")
            changes.append(f"{t.description} appeared (was {why})")
        elif old is not None and t.counts and _moved(old.box, t.box, 2.0):
            changes.append(f"{t.description} moved {_fmt(old.box)} -> {_fmt(t.box)}")
    return changes


# --------------------------------------------------------------------------- judging


async def judge(
    page: Page,
    rows: Sequence[RowLike],
    screenshot: bytes,
    device_scale_factor: float,
    *,
    discover: bool = False,
) -> PageVerdict:
    """Judge the rows of one observation (`screenshot`, at `device_scale_factor` image px per
    CSS px) on `page`, which must not have changed since that observation."""
    started = time.perf_counter()
    shown = await shown_text(page)
    frames, targets = await _ground_truth(page, discover)
    by_id = {t.id: t for t in targets}
    own = await page.screenshot(type="png")
    try:
        verdicts = [
            await _judge_row(page, frames, i, row, device_scale_factor, by_id)
            for i, row in enumerate(rows)
        ]
        after = await _read(frames)
    finally:
        await _uninstall(frames)
    page_changed = any(
        t.id not in after or _moved(t.box, after[t.id]["box"], 2.0) for t in targets if not t.moving
    )
    verdicts = _colour_check(verdicts, rows, targets, screenshot, own, device_scale_factor)
    verdicts = [replace(v, unshown=tuple(outside_row(v.expression, shown))) for v in verdicts]
    counts = Counter(r.referring_expression.strip().lower() for r in rows)
    return PageVerdict(
        url=page.url,
        targets=targets,
        rows=verdicts,
        duplicates={e: n for e, n in counts.items() if e and n > 1},
        page_changed=page_changed,
        judge_ms=round((time.perf_counter() - started) * 1000, 1),
        found={r.target for r in verdicts if r.status == "correct" and r.target is not None},
    )


async def _judge_row(
    page: Page,
    frames: list[_Frame],
    index: int,
    row: RowLike,
    scale: float,
    targets: dict[str, Target],
) -> RowVerdict:
    point = (row.point_px[0] / scale, row.point_px[1] / scale)
    box: Box = tuple(row.bbox_css)  # type: ignore[assignment]
    expression = row.referring_expression

    def verdict(status: str, target: str | None, reason: str) -> RowVerdict:
        return RowVerdict(index, expression, point, box, status, target, reason)

    moving = _moving_match(row, box, targets.values())
    top = frames[0].clip if frames else (0.0, 0.0, 0.0, 0.0)
    if not (top[0] <= point[0] < top[2] and top[1] <= point[1] < top[3]):
        return verdict("wrong", None, "point outside the viewport")
    hit = await click(page, frames, point)
    if hit is None:
        return verdict("wrong", None, "no frame saw the click")
    if hit.skip:
        return verdict("unjudged", None, f"click lands in a region not judged ({hit.what})")
    tid = hit.target_id
    if tid is None or tid not in targets:
        if moving is not None:
            return verdict("moving", moving.id, f"row of moving {moving.description}")
        return verdict("wrong", None, f"click reaches no target (lands on {hit.what})")
    target = targets[tid]
    if target.moving:
        return verdict("moving", tid, f"row of moving {target.description}")
    if not _inside(box, target.box, BOX_SLACK):
        if moving is not None:
            return verdict("moving", moving.id, f"row of moving {moving.description}")
        via = " (through its label)" if hit.via else ""
        return verdict(
            "wrong", tid, f"box not inside {target.description}{via} box={_fmt(target.box)}"
        )
    reasons = []
    misnamed = target.name is not None and _words(target.name) not in _words(expression)
    if misnamed:
        reasons.append(f"the expression does not say {target.name!r}")
    loose = len(target.rects) > 1 and not any(_inside(box, r, BOX_SLACK) for r in target.rects)
    if loose:
        lines = " ".join(_fmt(r) for r in target.rects)
        reasons.append(f"box spans several lines of {target.description}: {lines}")
    foreign = outside_row(expression, target.row) if target.row is not None else []
    if foreign:
        reasons.append(f"quotes {foreign} from outside its row")
    return replace(
        verdict("correct", tid, "; ".join(reasons)),
        misnamed=misnamed,
        loose=loose,
        outside=bool(foreign),
    )


SHOWN_JS = """() => {
  const out = [];
  const shownEl = (el) => !el.checkVisibility || el.checkVisibility(
    { opacityProperty: true, visibilityProperty: true });
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (!shownEl(el)) continue;
      for (const which of ['::before', '::after']) {
        const c = getComputedStyle(el, which).content || '';
        const m = c.match(/^"(.*)"$/);
        if (m) out.push(m[1]);
      }
      const tag = el.tagName.toLowerCase();
      if (tag === 'input' || tag === 'textarea') {
        const type = (el.type || '').toLowerCase();
        if (!['checkbox', 'radio', 'hidden', 'password'].includes(type) && el.value) out.push(el.value);
        if (!el.value && el.placeholder) out.push(el.placeholder);
      } else if (tag === 'select' && el.selectedIndex >= 0) {
        out.push(el.options[el.selectedIndex].text);
      }
      if (el.shadowRoot) {
        for (const c of el.shadowRoot.children) if (c.innerText) out.push(c.innerText);
        visit(el.shadowRoot);
      }
    }
  };
  out.push(document.body ? document.body.innerText : '');
  if (document.body) visit(document.body);
  return out.join('\\n');
}"""


async def shown_text(page: Page) -> str:
    """Every text the page shows, read by the oracle's own code in each frame: the rendered
    text (`innerText`, shadow roots included), the values and drawn placeholders of fields,
    the option a drop-down shows, and CSS pseudo-element glyphs of shown elements. An
    expression may quote only text found here: an aria-label, a `name` attribute, an id or a
    class name is not."""
    parts = []
    for frame in page.frames:
        if frame.is_detached():
            continue
        with contextlib.suppress(Exception):  # a cross-origin or navigating frame: not ours
            parts.append(str(await frame.evaluate(SHOWN_JS)))
    return "\n".join(parts)


def outside_row(expression: str, row: str) -> list[str]:
    """The texts an expression quotes (`"…"`, a cut one by its start) that its target's row
    does not show. Quotes inside a name may be written `'`: both count as one."""

    def norm(text: str) -> str:
        return " ".join(text.replace('"', "'").lower().split())

    words = norm(row)
    quoted = [q.rstrip("…").strip() for q in re.findall(r'"([^"]*)"', expression)]
    return [q for q in quoted if q and norm(q) not in words]


def _moving_match(row: RowLike, box: Box, targets: Iterable[Target]) -> Target | None:
    """A moving target the row is about: its box overlaps where the target was sampled, or
    the row names it."""
    names = {str(getattr(row, a, "") or "").strip().lower() for a in ("name", "text")} - {""}
    moving = [t for t in targets if t.moving]
    named = [t for t in moving if t.label.strip().lower() in names]
    overlapping = [t for t in moving if _intersect(box, t.box) is not None]
    found = named or overlapping
    return found[0] if found else None


def _colour_check(
    verdicts: list[RowVerdict],
    rows: Sequence[RowLike],
    targets: list[Target],
    screenshot: bytes,
    own: bytes,
    scale: float,
) -> list[RowVerdict]:
    """Fill the colour share of each correct row whose target is painted: has an opaque
    background that covers most of its box in the oracle's own screenshot `own` (icons and
    text can cover a small button). Other rows are not checked."""
    mine = _rgb(own)
    painted = {
        t.id: t.colour
        for t in targets
        if t.colour is not None
        and not t.moving
        and _share(mine, tuple(v * scale for v in t.box), t.colour) >= MIN_COLOUR_SHARE  # type: ignore[arg-type]
    }
    if not painted:
        return verdicts
    image = _rgb(screenshot)
    out = []
    for verdict, row in zip(verdicts, rows, strict=True):
        colour = painted.get(verdict.target or "") if verdict.status == "correct" else None
        if colour is None:
            out.append(verdict)
            continue
        share = round(_share(image, row.bbox_px, colour), 3)
        out.append(replace(verdict, colour_share=share))
    return out


def _rgb(image: bytes) -> np.ndarray[Any, Any]:
    return np.asarray(Image.open(io.BytesIO(image)).convert("RGB"), dtype=np.int16)


def _share(image: np.ndarray[Any, Any], box: Box, colour: Rgb) -> float:
    """The share of the pixels inside `box` (image px) within COLOUR_TOLERANCE of `colour`."""
    h, w = image.shape[:2]
    x1, y1 = max(0, round(box[0])), max(0, round(box[1]))
    x2, y2 = min(w, round(box[2])), min(h, round(box[3]))
    if x2 <= x1 or y2 <= y1:
        return 0.0
    crop = image[y1:y2, x1:x2]
    near = np.all(np.abs(crop - np.array(colour, dtype=np.int16)) <= COLOUR_TOLERANCE, axis=2)
    return float(near.mean())


# --------------------------------------------------------------------------- geometry


def _box(values: Sequence[float]) -> Box:
    return (float(values[0]), float(values[1]), float(values[2]), float(values[3]))


def _shift(box: Sequence[float], dx: float, dy: float) -> list[float]:
    return [box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy]


def _intersect(a: Sequence[float], b: Sequence[float]) -> Box | None:
    x1, y1, x2, y2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    return (x1, y1, x2, y2) if x2 > x1 and y2 > y1 else None


def _area_ok(box: Box) -> bool:
    return box[2] - box[0] >= 2 and box[3] - box[1] >= 2


def _inside(inner: Sequence[float], outer: Sequence[float], slack: float) -> bool:
    return (
        inner[0] >= outer[0] - slack
        and inner[1] >= outer[1] - slack
        and inner[2] <= outer[2] + slack
        and inner[3] <= outer[3] + slack
    )


def _moved(a: Sequence[float], b: Sequence[float], px: float = MOTION_PX) -> bool:
    return any(abs(p - q) > px for p, q in zip(a, b, strict=True))


def _opaque(css: str) -> Rgb | None:
    """`rgb(224, 33, 138)` → (224, 33, 138); transparent or translucent → None."""
    numbers = [float(n) for n in re.findall(r"[\d.]+", css or "")]
    if len(numbers) < 3 or (len(numbers) >= 4 and numbers[3] < 1):
        return None
    return int(numbers[0]), int(numbers[1]), int(numbers[2])


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _fmt(box: Sequence[float]) -> str:
    return "(" + ",".join(f"{v:.0f}" for v in box) + ")"
