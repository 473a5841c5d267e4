"""Issue 24's naming rules on hand-made elements (annotate/grounding.py, annotate/describe.py):
filled fields, drawn placeholders, icons, relational expressions, one quoting rule, nouns,
and target-less clicks described from the element at their point."""

from __future__ import annotations

from datagen.annotate.describe import describe, element_at
from datagen.annotate.grounding import expressions, noun
from datagen.annotate.words import QUOTE_CHARS, quote
from datagen.records import Click, Decision, Element, TypeText
from tests.helpers import button, observation


def el(index: int = 0, x: float = 10, y: float = 20, **kw: object) -> Element:
    return Element.model_validate({**button(index, x, y, width=40).model_dump(), **kw})


def field(y: float = 20, **kw: object) -> Element:
    return el(0, 10, y, tag="input", role="textbox", editable=True, **kw)


def one(element: Element) -> tuple[str, str]:
    return expressions([element])[element.index]


def test_filled_fields_say_what_they_hold_and_placeholders_only_while_drawn() -> None:
    filled = field(text="Pick up the parcel", placeholder="Add a note", placeholder_shown=False)
    assert one(filled) == ('the text field containing "Pick up the parcel"', "value")
    empty = field(placeholder="Add a note")
    assert one(empty) == ('the text field with placeholder "Add a note"', "placeholder")
    labelled = field(name="Search", name_source="nearby", text="milk", placeholder="Find")
    assert one(labelled) == ('the "Search" text field', "nearby")  # the label a user reads wins
    named = field(name="otp code", name_source="field-name", text="12")
    assert one(named) == ('the text field containing "12"', "value")
    assert one(field(name="otp code", name_source="field-name")) == (
        "the empty text field",
        "role",
    )


def test_icons_glyphs_and_relations() -> None:
    assert one(el(name="trash", name_source="icon")) == ("the trash icon button", "icon")
    assert one(el(name="×", name_source="glyph")) == ('the "×" button', "icon")
    bare = el(anchor="Buy milk", anchor_side="left")
    assert one(bare) == ('the button right of "Buy milk"', "relation")
    toggle = el(
        tag="input", role="checkbox", checked=False, anchor="Compact lists", anchor_side="left"
    )
    assert one(toggle) == ('the unchecked checkbox right of "Compact lists"', "relation")
    assert one(el(anchor="Code", anchor_side="above", role="textbox", tag="input")) == (
        'the text field below "Code"',
        "relation",
    )
    assert one(el()) == ("the button", "role")  # no name: its role (issue 34), never dropped


def test_duplicates_told_apart_by_their_row_before_context_and_order() -> None:
    rows = ["Buy milk", "Walk the dog", "Buy milk"]
    crosses = [
        el(i, y=40 * i, name="×", name_source="glyph", anchor=t, anchor_side="left")
        for i, t in enumerate(rows)
    ]
    named = expressions(crosses)
    assert named[1] == ('the "×" button right of "Walk the dog"', "relation")
    assert named[0] == ('the first "×" button', "position")  # same row text twice: by order
    assert named[2] == ('the third "×" button', "position")
    texts = [t.lower() for t, _ in named.values()]
    assert len(texts) == len(set(texts))


def test_one_quoting_rule() -> None:
    assert quote('Click on the "Yes" button') == "\"Click on the 'Yes' button\""
    long = "word " * 40
    cut = quote(long)
    assert len(cut) <= QUOTE_CHARS + 2 and cut.endswith('…"') and not cut.endswith(' …"')
    assert cut[1:-2].split(" ")[-1] == "word"  # cut at a word, not in one
    named = el(name='Call the "plumber"', name_source="content")
    assert one(named)[0] == "the \"Call the 'plumber'\" button"


def test_nouns_by_role_not_element() -> None:
    assert noun(el(role="gridcell", tag="div")) == "cell"
    assert noun(el(role="listitem", tag="div")) == "list item"
    assert noun(el(role="generic", tag="h3")) == "heading"
    assert noun(el(role="generic", tag="div")) == "element"  # nothing says what it is


def test_target_less_clicks_are_described_from_the_element_at_their_point() -> None:
    toggle = el(0, x=0, y=0, tag="input", role="checkbox", checked=False, name="Buy milk")
    toggle = toggle.model_copy(update={"name_source": "sibling-label"})
    cross = el(1, x=400, y=0, name="×", name_source="glyph", anchor="Buy milk", anchor_side="left")
    row = el(2, x=0, y=0, tag="li", role="generic", name="Buy milk ×", hit=False)
    row = row.model_copy(update={"box": row.box.model_copy(update={"width": 500})})
    obs = observation((row, toggle, cross), scale=2.0)
    assert element_at(obs, 40, 30) == toggle  # the smallest that a click reaches
    said = describe(obs, Decision(action=Click(x=40, y=30)))
    assert said == 'Check the "Buy milk" checkbox'
    assert describe(obs, Decision(action=Click(x=840, y=30))) == 'Click the "×" button'
    assert describe(obs, Decision(action=Click(x=1500, y=900))) == "Click at (1500, 900)"
    filled = field(200, text="milk")
    assert describe(observation((filled,)), Decision(action=TypeText(text="x"), target=filled)) == (
        'Type "x" into the field containing "milk"'
    )
