"""A synthesised task's words reworded (issue 43, item 4): which words may replace ours
(annotate/reword.kept_names), and the stand-in's answer to the reword prompt."""

from __future__ import annotations

import json

from datagen.annotate.reword import kept_names
from datagen.annotate.words import quoted_texts
from datagen.engine.hindsight import HINDSIGHT
from datagen.engine.sim.hindsight import hindsight_answer
from datagen.records import SuccessCheck

MILK = SuccessCheck.model_validate(
    {"element": {"role": "checkbox", "name": "Buy milk", "state": "checked"}}
)
THANKS = SuccessCheck(text_present="Thanks, your message was sent")


def test_the_name_the_check_reads_must_stay_quoted_as_written() -> None:
    ours = 'Check "Buy milk"'
    assert kept_names(ours, 'Please tick "Buy milk" on the list', MILK)
    assert not kept_names(ours, "Tick the first item", MILK)
    assert not kept_names(ours, "Please tick Buy Milk", MILK)  # not as written
    assert not kept_names(ours, "", MILK)


def test_only_the_names_the_check_decides_where_one_does() -> None:
    ours = 'Type "Call mum" into "New todo", then press "Add"'
    check = SuccessCheck(text_present="Call mum")
    assert kept_names(ours, 'Add "Call mum" to your todos', check)
    assert not kept_names(ours, 'Add a todo in "New todo"', check)


def test_every_name_stays_where_none_shares_a_word_with_the_check() -> None:
    ours = 'Type "Ann" into "Name", then press "Send message"'
    assert kept_names(ours, 'Send a message as "Ann" via "Name" and "Send message"', THANKS)
    assert not kept_names(ours, 'Send a message signed "Ann"', THANKS)


def test_a_name_with_quotes_in_it_stays_quoted_as_ours_quotes_it() -> None:
    ours = 'Add \'Say "hi"\' to the list, then press \u201cBob\'s "big" day\u201d'
    check = SuccessCheck(text_present='Say "hi" Bob\'s "big" day')
    assert quoted_texts(ours) == ['Say "hi"', 'Bob\'s "big" day']
    assert kept_names(ours, 'Put \'Say "hi"\' on it and \u201cBob\'s "big" day\u201d', check)
    assert not kept_names(ours, 'Put "hi" on it and "big"', check)  # a part is no name


def test_the_stand_in_rewords_the_prompts_instruction_keeping_its_names() -> None:
    messages = HINDSIGHT.reword_messages('Check "Buy milk"', ['Click the "Buy milk" checkbox'])
    answer = hindsight_answer(HINDSIGHT.reword_schema(), messages)
    assert answer is not None
    assert json.loads(answer) == {"instruction": 'Please check "Buy milk".'}
