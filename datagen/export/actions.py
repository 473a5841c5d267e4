"""An action as a trainer's assistant turn: a tool call or a pyautogui-style code string.

    step row (action_json, image size) ─► action_text(step, coords, syntax) ─► sft/rl/pairs

`tool`: Qwen2.5-VL's computer_use tool call, `<tool_call>\\n{"name": "computer_use",
"arguments": {...}}\\n</tool_call>`, with its actions `left_click` (`coordinate`), `type`
(`text`), `key` (`keys`, pyautogui names), `scroll` (`pixels`, positive up), `hscroll`
(`pixels`, positive right), `wait` (`time`), `terminate` (`status`, plus `answer` when the
episode gave one), and two web actions Qwen's desktop set lacks: `goto` (`url`) and `back`.

`code`: one pyautogui-style statement, as Aguvis / OpenCUA write them: `pyautogui.click(x=…,
y=…)`, `pyautogui.write(message=…)`, `pyautogui.press('enter')` / `pyautogui.hotkey('ctrl',
'a')`, `pyautogui.scroll(…)` (positive scrolls up) / `pyautogui.hscroll(…)`, `pyautogui.sleep(…)`,
and for the web `browser.goto(url=…)`, `browser.back()`, and `computer.terminate(status=…)`.

Coordinates follow the export's convention (`coords`); scroll amounts stay screenshot pixels in
every convention (they are distances, not positions). Key names are mapped from Playwright's
(`Control+A`, `ArrowDown`) to pyautogui's (`ctrl`, `a`; `down`) in both syntaxes.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from datagen.export.coords import number, to_point
from datagen.export.options import Coords, Syntax
from datagen.records import Action

ACTION = TypeAdapter(Action)
# Playwright key names → pyautogui's (letters and digits are lower-cased as they are).
KEYS = {
    "control": "ctrl",
    "controlormeta": "ctrl",
    "meta": "win",
    "escape": "esc",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    " ": "space",
    "spacebar": "space",
}


def pyautogui_keys(combo: str) -> list[str]:
    """Playwright's `Control+Shift+ArrowDown` as pyautogui's `['ctrl', 'shift', 'down']`."""
    parts = combo.split("+")
    if combo.endswith("++"):  # the `+` key itself, as in `Control++`
        parts = [*combo[:-2].split("+"), "+"]
    keys = [p for p in parts if p] or [combo]
    return [KEYS.get(k.lower(), k.lower()) for k in keys]


def action_text(step: dict[str, Any], coords: Coords, syntax: Syntax, answered: bool) -> str:
    """The step's action as `syntax`, its point in `coords`. `answered`: the episode succeeded
    (a `done` becomes terminate with status success, else failure)."""
    action = ACTION.validate_json(step["action_json"]).model_dump()
    kind = action["type"]
    width, height = step["image_width"], step["image_height"]
    if kind == "click":
        x, y = to_point(action["x"], action["y"], width, height, coords)
        return _click(number(x, coords), number(y, coords), syntax)
    if syntax == "tool":
        return _tool(_tool_arguments(action, answered))
    return _code(action, answered)


def _click(x: str, y: str, syntax: Syntax) -> str:
    if syntax == "code":
        return f"pyautogui.click(x={x}, y={y})"
    # the numbers as JSON numbers, in the convention's own spelling
    return _tool({"action": "left_click", "coordinate": [json.loads(x), json.loads(y)]})


def _tool(arguments: dict[str, Any]) -> str:
    call = json.dumps({"name": "computer_use", "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{call}\n</tool_call>"


def _tool_arguments(action: dict[str, Any], answered: bool) -> dict[str, Any]:
    kind = action["type"]
    if kind == "type":
        return {"action": "type", "text": action["text"]}
    if kind == "key":
        return {"action": "key", "keys": pyautogui_keys(action["combo"])}
    if kind == "scroll":
        if action["dy"] or not action["dx"]:
            return {"action": "scroll", "pixels": _int(-action["dy"])}
        return {"action": "hscroll", "pixels": _int(action["dx"])}
    if kind == "goto":
        return {"action": "goto", "url": action["url"]}
    if kind == "back":
        return {"action": "back"}
    if kind == "wait":
        return {"action": "wait", "time": action["seconds"]}
    done: dict[str, Any] = {"action": "terminate", "status": _status(answered)}
    return done | ({"answer": action["answer"]} if action.get("answer") else {})


def _code(action: dict[str, Any], answered: bool) -> str:
    kind = action["type"]
    if kind == "type":
        return f"pyautogui.write(message={action['text']!r})"
    if kind == "key":
        keys = pyautogui_keys(action["combo"])
        if len(keys) == 1:
            return f"pyautogui.press({keys[0]!r})"
        return f"pyautogui.hotkey({', '.join(map(repr, keys))})"
    if kind == "scroll":
        if action["dy"] or not action["dx"]:
            return f"pyautogui.scroll({_int(-action['dy'])})"
        return f"pyautogui.hscroll({_int(action['dx'])})"
    if kind == "goto":
        return f"browser.goto(url={action['url']!r})"
    if kind == "back":
        return "browser.back()"
    if kind == "wait":
        return f"pyautogui.sleep({action['seconds']:g})"
    answer = f", answer={action['answer']!r}" if action.get("answer") else ""
    return f"computer.terminate(status={_status(answered)!r}{answer})"


def _status(answered: bool) -> str:
    return "success" if answered else "failure"


def _int(value: float) -> int:
    return round(value)


VERBS = {"back": "Go back", "wait": "Wait", "done": "Finish the task"}


def describe(step: dict[str, Any]) -> str:
    """A step-level instruction from the action alone, for outputs written before steps had an
    `action_description` (schema < 1.2): the target's name when the step names one."""
    action = ACTION.validate_json(step["action_json"]).model_dump()
    kind, name = action["type"], step.get("target_name")
    target = f' the "{name}" {step.get("target_role") or "element"}' if name else ""
    if kind == "click":
        return f"Click{target}" if target else "Click"
    if kind == "type":
        return f'Type "{action["text"]}"' + (f" into{target}" if target else "")
    if kind == "key":
        return f"Press {action['combo']}"
    if kind == "scroll":
        return "Scroll " + ("down" if action["dy"] > 0 else "up" if action["dy"] else "sideways")
    if kind == "goto":
        return f"Go to {action['url']}"
    return VERBS[kind]
