"""A synthesised task's words, reworded by the model (issue 43, item 4): the check never is.

    a kept TaskRow (its instruction from annotate/tasks.py, its check, its demonstration in
    words) ─► relabel role: HINDSIGHT.reword_messages ─► RewordAnswer {instruction}
    ─► kept_names(): every quoted name of ours the check decides, in the model's words
    ─► the row: the model's words as `instruction` (ours in `synth_instruction`), or ours

With a `relabel` role configured (annotation.relabel), after the shard's tasks are proven
(pipeline/shard.py). The model sees the instruction and the demonstration's steps in words,
not the check, and its words replace ours only when they keep, verbatim, each quoted name of
ours that names what the check reads (a control's drawn name, a typed value, an item): words
that lost "Buy milk" no longer say which item the check reads. When no quoted name of ours
shares a word with the check (`Press "Send message"` read by "Thanks, your message was
sent"), every quoted name must stay. Never raises for the model's failures: an engine error or
an unparseable answer keeps our words, the raw answer kept where there is one.
"""

from __future__ import annotations

from datagen.annotate.decide import words_of
from datagen.annotate.words import exact_quote, quoted_texts
from datagen.config import RoleName
from datagen.engine.client import EngineError
from datagen.engine.hindsight import HINDSIGHT, RewordAnswer
from datagen.engine.profiles import ModelOutputError
from datagen.engine.roles import Engines
from datagen.records import SuccessCheck, TaskRow

ROLE: RoleName = "relabel"
MAX_CHARS = 300  # an instruction, not a paragraph


def read_by_check(check: SuccessCheck) -> str:
    """What the check reads, as text: its line, URL part, element name and value."""
    parts = [check.text_present, check.url_contains]
    if check.element is not None:
        parts += [check.element.name, check.element.value]
    return " ".join(p for p in parts if p)


def kept_names(ours: str, theirs: str, check: SuccessCheck) -> bool:
    """Do the model's words `theirs` keep every quoted name of `ours` that the check decides
    (all of them where none shares a word with what the check reads)?"""
    if not theirs or len(theirs) > MAX_CHARS or "\n" in theirs:
        return False
    names = quoted_texts(ours)
    read = words_of(read_by_check(check))
    decided = [n for n in names if words_of(n) & read] or names
    return all(exact_quote(n) in theirs for n in decided)


async def reword(row: TaskRow, engines: Engines) -> TaskRow:
    """The kept task with the model's words where they keep its names (module docstring)."""
    check = SuccessCheck.model_validate_json(row.check_json)
    messages = HINDSIGHT.reword_messages(row.instruction, row.demo_descriptions)
    role = engines.roles[ROLE]
    columns: dict[str, object] = {"reword_model": role.model, "reword_standin": role.standin}
    try:
        answer, result = await engines.ask(ROLE, messages, HINDSIGHT.reword_schema(), RewordAnswer)
    except (ModelOutputError, EngineError) as exc:
        raw = exc.raw if isinstance(exc, ModelOutputError) else None
        return row.model_copy(update=columns | {"reword_output": raw, "reword_accepted": False})
    theirs = " ".join(answer.instruction.split())
    columns |= {"reword_output": result.content, "reword_accepted": False}
    if not kept_names(row.instruction, theirs, check):
        return row.model_copy(update=columns)
    columns |= {
        "instruction": theirs,
        "synth_instruction": row.instruction,
        "reword_accepted": True,
    }
    return row.model_copy(update=columns)
