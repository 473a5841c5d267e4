"""`datagen inspect`: what is in a dataset, in the terminal and as a static HTML gallery. Beside
the sink because it reads the sink's layout (committed parts only, through sink.read).

read_committed() ─► summary() ─► numbers for the terminal
                 ─► gallery() ─► one HTML file: each episode's screenshots in order, with
                                 grounding boxes (green), the action's target (orange) and
                                 the click point (magenta) drawn where the data says
"""

from __future__ import annotations

import base64
import html
from collections import Counter, defaultdict
from statistics import mean
from typing import Any

from datagen.sink.read import read_committed

BOX_COLOUR, TARGET_COLOUR, CLICK_COLOUR = "#00c853", "#ff9100", "#ff00ff"


def load(
    uri: str, endpoint_url: str | None = None, columns: dict[str, list[str] | None] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Committed rows of every table (optionally only some columns; of synthesised `tasks`,
    only their ids unless asked: the summary counts them)."""
    columns = {"tasks": ["synth_id"], **(columns or {})}
    return {
        t: read_committed(uri, t, endpoint_url, columns.get(t)).to_table().to_pylist()
        for t in ("episodes", "steps", "grounding", "rejects", "tasks")
    }


def summary(tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Rows per table, success rate, rejects by reason, steps per episode, image sizes."""
    episodes, steps = tables["episodes"], tables["steps"]
    judged = [e["success"] for e in episodes if e["success"] is not None]
    lengths = [e["n_steps"] for e in episodes]
    sizes = Counter(f"{s['image_width']}x{s['image_height']}" for s in steps)
    return {
        "rows": {t: len(rows) for t, rows in tables.items()},
        "success_rate": round(sum(judged) / len(judged), 3) if judged else None,
        "rejects_by_reason": dict(Counter(r["reason"] for r in tables["rejects"]).most_common()),
        "steps_per_episode": {
            "mean": round(mean(lengths), 2),
            "min": min(lengths),
            "max": max(lengths),
        }
        if lengths
        else {},
        "image_sizes": dict(sizes.most_common()),
        "sites": dict(Counter(e["site"] for e in episodes).most_common()),
        "actions": dict(Counter(s["action_type"] for s in steps).most_common()),
    }


def gallery(tables: dict[str, list[dict[str, Any]]], max_episodes: int = 20) -> str:
    """A self-contained HTML page (images inline) of the first `max_episodes` episodes."""
    steps_by_episode: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for step in tables["steps"]:
        steps_by_episode[step["episode_id"]].append(step)
    boxes: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in tables["grounding"]:
        boxes[(row["episode_id"], row["step_index"])].append(row)
    sections = []
    for episode in sorted(
        tables["episodes"], key=lambda e: (e["site"], e["task_id"], e["episode_id"])
    )[:max_episodes]:
        steps = sorted(steps_by_episode[episode["episode_id"]], key=lambda s: s["step_index"])
        figures = "\n".join(_figure(s, boxes[(s["episode_id"], s["step_index"])]) for s in steps)
        outcome = {True: "solved", False: "not solved", None: "no check"}[episode["success"]]
        sections.append(
            f'<section class="episode" id="{html.escape(episode["episode_id"])}"><h2>{html.escape(episode["task_id"])} '
            f"<small>{outcome} · {episode['n_steps']} steps · {html.escape(episode['policy'])} · "
            f"{_verification(episode.get('verification'))}</small></h2>"
            f"<p>{html.escape(episode['instruction'])}</p>{figures}</section>"
        )
    return PAGE.format(count=len(sections), sections="\n".join(sections))


def _figure(step: dict[str, Any], grounding: list[dict[str, Any]]) -> str:
    w, h = step["image_width"], step["image_height"]
    image = step["screenshot"]["bytes"]
    mime = (
        "image/png"
        if image[:4] == b"\x89PNG"
        else "image/webp"
        if image[8:12] == b"WEBP"
        else "image/jpeg"
    )
    shapes = [_rect(g["bbox_px"], BOX_COLOUR, 2) for g in grounding]
    if step["target_bbox_px"]:
        shapes.append(_rect(step["target_bbox_px"], TARGET_COLOUR, 4))
    if step["x_px"] is not None:
        x, y = step["x_px"], step["y_px"]
        shapes.append(
            f'<circle class="click" cx="{x}" cy="{y}" r="{max(6, w // 120)}" fill="{CLICK_COLOUR}"/>'
        )
    needed = step.get("needed")
    return (
        f'<figure class="step" data-step="{step["step_index"]}" data-needed="{str(needed).lower()}"><div class="shot" style="aspect-ratio:{w}/{h}">'
        f'<img src="data:{mime};base64,{base64.b64encode(image).decode()}" width="{w}" height="{h}" alt="step {step["step_index"]}">'
        f'<svg viewBox="0 0 {w} {h}" preserveAspectRatio="none">{"".join(shapes)}</svg></div>'
        f"<figcaption>{_caption(step)}</figcaption></figure>"
    )


# what a step's `needed` says, as the gallery marks it
NEEDED = {
    True: ("yes", "✔ needed", "replay showed the task needs this step"),
    False: ("no", "✘ not needed", "the check passed with this step left out"),
    None: ("unknown", "· not verified", "no replay verified this step"),
}


def _caption(step: dict[str, Any]) -> str:
    """A step in words: its description, whether it was needed, its action, its target's role,
    name and box, the model's thought, the page."""
    key, mark, why = NEEDED.get(step.get("needed"), NEEDED[None])
    description = step.get("action_description") or step["action_repr"]
    box = step.get("target_bbox_px")
    if box:
        role = html.escape(step.get("target_role") or "element")
        name = html.escape(step.get("target_name") or "")
        corners = ", ".join(f"{v:.0f}" for v in box)
        target = f'{role} "{name}" at [{corners}]' if name else f"{role} at [{corners}]"
    else:
        target = "no target element"
    thought = f" — {html.escape(step['thought'])}" if step.get("thought") else ""
    return (
        f'{step["step_index"]}. <span class="description">{html.escape(description)}</span> '
        f'<span class="needed {key}" title="{why}">{mark}</span><br>'
        f'<small><code class="action">{html.escape(step["action_repr"])}</code> · target: '
        f'<span class="target">{target}</span>{thought}</small><br>'
        f"<small>{html.escape(step['url'])}</small>"
    )


def _verification(value: str | None) -> str:
    """The episode's replay verification, its meaning on hover."""
    name = value or "not verified"
    meaning = VERIFICATION.get(value or "", "not solved, or verification off")
    return f'<span class="verification" title="{html.escape(meaning)}">verification: {html.escape(name)}</span>'


# the values of `episodes.verification`, in words (the gallery's hover, the export's card)
VERIFICATION = {
    "minimal": "replayed: the steps marked needed alone solve the task, and each of them "
    "was shown needed (leaving it out failed the check)",
    "reduced": "replayed with its needed steps only and solved, but the replay budget ran "
    "out before every step was tried: some steps marked needed may not be",
    "not_reproduced": "a replay of all its steps did not pass the check (timing, randomness): "
    "its steps carry no task label",
}


def _rect(box: list[float], colour: str, width: int) -> str:
    x1, y1, x2, y2 = box
    return f'<rect x="{x1}" y="{y1}" width="{x2 - x1}" height="{y2 - y1}" fill="none" stroke="{colour}" stroke-width="{width}"/>'


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>datagen gallery</title><style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #1b1b1f; }}
.episode {{ margin-bottom: 40px; }} h2 small {{ color: #666; font-weight: normal; }}
.step {{ display: inline-block; vertical-align: top; width: 640px; margin: 0 16px 16px 0; }}
.shot {{ position: relative; width: 100%; }} .shot img, .shot svg {{ position: absolute; inset: 0; width: 100%; height: 100%; }}
figcaption {{ font-size: 13px; margin-top: 4px; }} .needed.yes {{ color: #1a7f37; }}
.needed.no {{ color: #b42318; }} .needed.unknown {{ color: #777; }}
</style></head><body>
<h1>datagen gallery <small>({count} episodes)</small></h1>
<p>Green: grounding boxes. Orange: the action's target element. Magenta: the click point.
Each step: its description, ✔ needed / ✘ not needed / · not verified (replay verification),
the action, and its target's role, name and box in screenshot pixels. An episode's
verification: minimal (its needed steps alone solve the task, each shown needed), reduced
(solved with its needed steps, not every step tried), not_reproduced (a replay did not solve
it), not verified.</p>
{sections}
</body></html>
"""
