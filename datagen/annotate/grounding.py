"""Grounding annotations from the live DOM at the moment of a screenshot.

    Observation ─► grounding_rows() ─► list[GroundingRow]

Boxes come from `getBoundingClientRect` (CSS px, clipped to the viewport) and are converted
to screenshot pixels and to [0, 1]. The referring expression is built from the accessible
name, visible text, placeholder and role, the way a person would point at the element.
"""

from __future__ import annotations

from datagen.records import Element, GroundingRow, Observation

ROLE_NOUNS = {
    "button": "button",
    "link": "link",
    "textbox": "text field",
    "searchbox": "search box",
    "spinbutton": "number field",
    "checkbox": "checkbox",
    "radio": "radio button",
    "switch": "toggle",
    "tab": "tab",
    "combobox": "drop-down",
    "listbox": "list",
    "menuitem": "menu item",
    "option": "option",
    "slider": "slider",
}


def referring_expression(element: Element) -> str:
    """`the "Add to cart" button`, `the search box with placeholder "Search products"`; "" if
    the element has nothing a person could refer to it by."""
    noun = ROLE_NOUNS.get(element.role, "element")
    label = element.name or element.text
    if label:
        state = ""
        if element.checked is not None:
            state = "checked " if element.checked else "unchecked "
        return f'the {state}"{label}" {noun}'
    if element.placeholder:
        return f'the {noun} with placeholder "{element.placeholder}"'
    return ""


def grounding_rows(
    obs: Observation,
    *,
    run_id: str,
    schema_version: str,
    task_id: str,
    episode_id: str,
    browser_version: str,
    step_index: int,
    limit: int,
) -> list[GroundingRow]:
    """One row per visible interactive element (at most `limit`), validity decided later."""
    scale = obs.device_scale_factor
    width, height = obs.image_width, obs.image_height
    rows = []
    for element in obs.elements[:limit]:
        b = element.box
        box_px = (b.x * scale, b.y * scale, (b.x + b.width) * scale, (b.y + b.height) * scale)
        rows.append(
            GroundingRow(
                run_id=run_id,
                schema_version=schema_version,
                task_id=task_id,
                episode_id=episode_id,
                browser_version=browser_version,
                step_index=step_index,
                element_index=element.index,
                referring_expression=referring_expression(element),
                role=element.role,
                tag=element.tag,
                name=element.name,
                text=element.text,
                selector=element.selector,
                bbox_px=(
                    round(box_px[0], 2),
                    round(box_px[1], 2),
                    round(box_px[2], 2),
                    round(box_px[3], 2),
                ),
                bbox_css=(b.x, b.y, b.x + b.width, b.y + b.height),
                bbox_norm=(
                    box_px[0] / width,
                    box_px[1] / height,
                    box_px[2] / width,
                    box_px[3] / height,
                ),
                point_px=(
                    round((box_px[0] + box_px[2]) / 2, 2),
                    round((box_px[1] + box_px[3]) / 2, 2),
                ),
                image_width=width,
                image_height=height,
                hit_test=element.hit,
                url=obs.url,
            )
        )
    return rows
