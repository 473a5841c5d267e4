"""The hindsight prompts: asking a model which instruction a finished trajectory carried out,
and checking its answer. Named and versioned like the navigation profiles (`profiles.py`);
the episode row stores `HINDSIGHT.tag` as `relabel_prompt_version`.

    actions in words + chosen screenshots ─► relabel_messages() + RelabelAnswer schema
        ─► relabel role ─► RelabelAnswer {thought, instruction}
    instruction + actions + final screenshot ─► check_messages() + RelabelVerdict schema
        ─► judge role, or the relabel role again ─► RelabelVerdict {reason, fulfilled}
    a synthesised task's instruction + its demonstration in words ─► reword_messages() +
        RewordAnswer schema ─► relabel role ─► RewordAnswer {instruction} (annotate/reword.py
        keeps it only where it names what the task's check reads)
    a prompt's text ─► read_actions() ─► the action lines (the stand-in answers from them)

The prompts carry no coordinates, so they do not depend on the navigation profile's frame.
The task's own instruction is left out on purpose: an explore episode did something else,
and a model shown the task tends to echo it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from datagen.engine.profiles import SentImage, Strict

ACTIONS_HEADER = "Actions, in order:"
FAILED = " (failed: "  # an action whose step recorded an error; it changed nothing
MAX_ACTIONS = 60  # the last ones are listed; the screenshots still show the start
_LINE = re.compile(r"^(\d+)\. (.*)$")


# No docstrings on the answer models: pydantic would put them in the schemas the prompts carry.


class RelabelAnswer(Strict):
    thought: str = Field(description="what the screenshots and actions show was done")
    instruction: str = Field(
        description="the instruction this session carries out, as a user would give it"
    )


class RelabelVerdict(Strict):
    reason: str
    fulfilled: bool


class RewordAnswer(Strict):
    instruction: str = Field(description="the task's instruction, reworded as a person asks")


@dataclass(frozen=True)
class Frame:
    """A screenshot of the trajectory as sent, and what moment it shows."""

    image: SentImage
    label: str  # "before action 1", "after the last action"


def action_lines(actions: Sequence[tuple[str, str | None]]) -> str:
    """The numbered list of (description, error) the prompts carry, one action per line."""
    shown = actions[-MAX_ACTIONS:]
    skipped = len(actions) - len(shown)
    lines = [f"(the first {skipped} actions are not listed)"] if skipped else []
    for number, (description, error) in enumerate(shown, start=skipped + 1):
        line = f"{number}. {_flat(description, 300)}"
        lines.append(line + (f"{FAILED}{_flat(error, 120)})" if error else ""))
    return "\n".join(lines) if lines else "(no actions)"


def read_actions(text: str) -> list[str]:
    """The action lines of a prompt's text, without their numbers (the stand-in reads them)."""
    _, found, rest = text.partition(ACTIONS_HEADER)
    out: list[str] = []
    for line in rest.lstrip("\n").splitlines() if found else []:
        if not line.strip():
            break
        match = _LINE.match(line)
        if match:
            out.append(match.group(2))
    return out


def _flat(text: str, limit: int) -> str:
    """One line of at most `limit` characters (a typed newline must not end the list)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class HindsightProfile:
    """A versioned pair of prompts: the relabel question and its check."""

    name: str
    version: str

    @property
    def tag(self) -> str:
        """What the rows store: `name/version`."""
        return f"{self.name}/{self.version}"

    def relabel_schema(self) -> dict[str, Any]:
        return RelabelAnswer.model_json_schema()

    def check_schema(self) -> dict[str, Any]:
        return RelabelVerdict.model_json_schema()

    def relabel_messages(
        self, actions: Sequence[tuple[str, str | None]], frames: Sequence[Frame]
    ) -> list[dict[str, Any]]:
        """One user turn: each screenshot after its label, then the actions and the question."""
        parts: list[dict[str, Any]] = []
        for frame in frames:
            parts.append({"type": "text", "text": f"Screenshot {frame.label}:"})
            parts.append({"type": "image_url", "image_url": {"url": frame.image.data_url}})
        text = (
            f"These {len(frames)} screenshots show one web browser session, in order. "
            f"{ACTIONS_HEADER}\n{action_lines(actions)}\n\n"
            "Write the instruction a user could have given for which this session is a complete "
            "and correct demonstration: one imperative sentence, specific (name the values typed "
            "and the items chosen), about the outcome rather than each click, claiming nothing "
            "the actions and the last screenshot do not show. Leave out actions that failed or "
            "changed nothing. If the session did nothing a user would ask for, say what it did "
            "plainly (for example: Scroll through the page).\n"
            f"Answer as JSON: {json.dumps(self.relabel_schema())}"
        )
        parts.append({"type": "text", "text": text})
        return [{"role": "user", "content": parts}]

    def check_messages(
        self, instruction: str, actions: Sequence[tuple[str, str | None]], final: SentImage
    ) -> list[dict[str, Any]]:
        """One user turn: the final screenshot, the actions, the instruction to check."""
        text = (
            "This is the screen at the end of a web browser session. "
            f"{ACTIONS_HEADER}\n{action_lines(actions)}\n\n"
            "Does this session carry out the following instruction completely, as far as the "
            "actions and this screen show? Anything the instruction claims that they do not "
            f"show means no.\nInstruction: {json.dumps(instruction)}\n"
            f"Answer as JSON: {json.dumps(self.check_schema())}"
        )
        return [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": final.data_url}},
                    {"type": "text", "text": text},
                ],
            }
        ]

    def reword_schema(self) -> dict[str, Any]:
        return RewordAnswer.model_json_schema()

    def reword_messages(self, instruction: str, actions: Sequence[str]) -> list[dict[str, Any]]:
        """One user turn, text only: a synthesised task's instruction (written by a template
        from the page), its demonstration's steps in words, and the ask to reword it."""
        text = (
            "A task on a web page, its instruction written by a template from the page's own "
            f"names:\nInstruction: {json.dumps(instruction)}\n"
            f"{ACTIONS_HEADER}\n{action_lines([(a, None) for a in actions])}\n\n"
            "Reword the instruction as a person would ask for the outcome: one imperative "
            "sentence. Keep every quoted name exactly as written, in double quotes; name "
            "nothing the instruction and the actions do not.\n"
            f"Answer as JSON: {json.dumps(self.reword_schema())}"
        )
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]


HINDSIGHT = HindsightProfile("hindsight", "1")
REWORD_INSTRUCTION = "Instruction: "  # the reword prompt's line with the instruction (JSON)
