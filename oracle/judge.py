"""The oracle's verdict on datagen's grounding rows for one observation.

Part of the independent grounding oracle (`oracle/`), which never imports `datagen` (rows are
read through the `RowLike` protocol, which datagen's GroundingRow satisfies).

A row is correct when a click at its point reaches a target T and its box lies inside T's box
(± BOX_SLACK CSS px; T's box of a link that wraps is the union of its lines). A target counts
for recall when it is visible, static (it did not move while sampled), in the viewport and
reached by a click at some point of it; it is found when it has a correct row. A correct row
disagrees with its image when under its box the screenshot is not, for the most part, the
background colour of its target (checked for targets painted that way: an opaque background
over most of their box in the oracle's own screenshot); the row of a moving target disagrees
too. A correct row of a wrapped link that boxes several of its lines, not one, is "loose". A
correct row whose expression quotes text that its target's row (`data-gt-row`) does not show
is "outside", unless that quote is an anchor the oracle finds to be the drawn text nearest the
target, or its group, on the stated side (`oracle/anchors.py`).
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
from PIL import Image
from playwright.async_api import Page

from oracle.anchors import DrawnText, drawn_texts, placed
from oracle.motion import moving_match
from oracle.targets import (
    Box,
    Point,
    Rgb,
    Target,
    _fmt,
    _Frame,
    _ground_truth,
    _inside,
    _moved,
    _read,
    _uninstall,
    click,
)

BOX_SLACK = 3.0  # CSS px a row's box may stick out of its target's box
COLOUR_TOLERANCE = 40  # per channel (JPEG, anti-aliasing)
MIN_COLOUR_SHARE = 0.5  # of a row's box that must be its target's colour


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
    # correct box, but it quotes text that is not in the target's row and is not the drawn text
    # nearest it (or its group) on the side the expression states (oracle/anchors.py)
    outside: bool = False
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
    texts = await drawn_texts(page)
    frames, targets = await _ground_truth(page, discover)
    by_id = {t.id: t for t in targets}
    own = await page.screenshot(type="png")
    try:
        verdicts = [
            await _judge_row(page, frames, i, row, device_scale_factor, by_id, texts)
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
    texts: Sequence[DrawnText],
) -> RowVerdict:
    point = (row.point_px[0] / scale, row.point_px[1] / scale)
    box: Box = tuple(row.bbox_css)  # type: ignore[assignment]
    expression = row.referring_expression

    def verdict(status: str, target: str | None, reason: str) -> RowVerdict:
        return RowVerdict(index, expression, point, box, status, target, reason)

    names = {str(getattr(row, a, "") or "").strip().lower() for a in ("name", "text")} - {""}
    moving = moving_match(names, box, targets.values())
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
    # an anchor from outside the row is fine where it is the drawn text nearest the target (or
    # its group) on the side the expression states (oracle/anchors.py)
    like = [t.box for t in targets.values() if t.tag == target.tag and t.frame == target.frame]
    foreign = [q for q in foreign if not placed(q, expression, target.box, like, texts)]
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


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))
