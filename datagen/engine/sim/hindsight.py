"""The stand-in's answers to the hindsight prompts (`engine/hindsight.py`): derived from the
action lines in the prompt, deterministically, so that tests know what to expect. Not a model:
the rows it produced say so (`relabel_standin`), because the stand-in's model listing does.

    request with the RelabelAnswer schema  ─► the last actions that did something, as one
        instruction ("Click the "Save" button, then type "x" into the "Name" field")
    request with the RelabelVerdict schema ─► fulfilled when some listed action did something
    request with the RewordAnswer schema   ─► the prompt's instruction as a request
        (`Check "Buy milk"` ─► `Please check "Buy milk".`), its quoted names kept

An action "did something" unless it failed or is a scroll, a wait or the end of the episode:
a trajectory of only those is relabeled "Scroll through the page", and its check rejects it.
"""

from __future__ import annotations

import json
from typing import Any

from datagen.engine.hindsight import (
    FAILED,
    REWORD_INSTRUCTION,
    RelabelAnswer,
    RelabelVerdict,
    RewordAnswer,
    read_actions,
)

PASSIVE = {"scroll", "wait", "done", "answer", "finish", "stop"}  # verbs that change nothing
LAST = 3  # actions named in a stand-in instruction


def hindsight_answer(schema: dict[str, Any] | None, messages: list[dict[str, Any]]) -> str | None:
    """The stand-in's answer to a relabel or check prompt; None for any other request."""
    title = (schema or {}).get("title")
    if title == RewordAnswer.__name__:
        return _reworded(_text(messages))
    if title not in (RelabelAnswer.__name__, RelabelVerdict.__name__):
        return None
    actions = read_actions(_text(messages))
    effective = [a for a in actions if FAILED not in a and _verb(a) not in PASSIVE]
    if title == RelabelVerdict.__name__:
        verdict = RelabelVerdict(
            reason=f"stand-in: {len(effective)} of the {len(actions)} listed actions change the "
            "page" + ("" if effective else "; nothing shows the instruction was carried out"),
            fulfilled=bool(effective),
        )
        return verdict.model_dump_json()
    answer = RelabelAnswer(
        thought=f"stand-in: from {len(effective)} of the {len(actions)} listed actions",
        instruction=_instruction(effective) if effective else "Scroll through the page",
    )
    return answer.model_dump_json()


def _reworded(text: str) -> str:
    """The reword prompt's instruction as a request; "Do the task" when it has none."""
    said = next(
        (
            line[len(REWORD_INSTRUCTION) :]
            for line in text.splitlines()
            if line.startswith(REWORD_INSTRUCTION)
        ),
        "",
    )
    try:
        instruction = str(json.loads(said))
    except ValueError:
        instruction = ""
    words = f"Please {instruction[:1].lower()}{instruction[1:]}." if instruction else "Do the task"
    return RewordAnswer(instruction=words).model_dump_json()


def _instruction(actions: list[str]) -> str:
    """The last LAST actions as one imperative sentence."""
    chosen = actions[-LAST:]
    parts = [chosen[0][:1].upper() + chosen[0][1:]]
    parts += [a[:1].lower() + a[1:] for a in chosen[1:]]
    return ", then ".join(parts)


def _verb(action: str) -> str:
    """The first word, letters only: `Scroll down` and `scroll(0, 480)` both say scroll."""
    word = action.split(" ", 1)[0].split("(", 1)[0]
    return "".join(ch for ch in word if ch.isalpha()).lower()


def _text(messages: list[dict[str, Any]]) -> str:
    """Every text part of the request, in order."""
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [str(p.get("text", "")) for p in content if p.get("type") == "text"]
    return "\n".join(texts)
