"""The oracle's ground truth: what a person could click or type into on a page, now.

Part of the independent grounding oracle (`oracle/`), which never imports `datagen`: it is
the check of datagen's element scan, so it has its own Playwright code and real clicks.

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

Targets are read twice MOTION_SAMPLE_S apart (a target whose box moved is "moving"), then
each visible, static, in-viewport target is clicked at PROBES until a click reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from playwright.async_api import Frame, Page

Box = tuple[float, float, float, float]  # x1, y1, x2, y2 in CSS px of the top-level viewport
Point = tuple[float, float]
Rgb = tuple[int, int, int]

KINDS = ("native", "custom", "listener", "aria", "svg")
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


def _opaque(css: str) -> Rgb | None:
    """`rgb(224, 33, 138)` → (224, 33, 138); transparent or translucent → None."""
    numbers = [float(n) for n in re.findall(r"[\d.]+", css or "")]
    if len(numbers) < 3 or (len(numbers) >= 4 and numbers[3] < 1):
        return None
    return int(numbers[0]), int(numbers[1]), int(numbers[2])


def _fmt(box: Sequence[float]) -> str:
    return "(" + ",".join(f"{v:.0f}" for v in box) + ")"


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


async def put_pointer_back(page: Page, pointer: Point) -> None:
    """Move the mouse to `pointer` with the page's pointer and mouse listeners swallowed (as
    while judging): :hover is where it was, and the page saw nothing."""
    frames = await _install(await _frames(page), "pointer")
    try:
        await page.mouse.move(pointer[0], pointer[1])
    finally:
        await _uninstall(frames)
