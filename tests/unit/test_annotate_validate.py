import io

from PIL import Image

from datagen.annotate import grounding_rows, referring_expression
from datagen.annotate.grounding import expressions
from datagen.config import ValidationConfig
from datagen.records import Click, Element, GroundingRow, Observation, RejectReason
from datagen.validate import check_grounding, check_step
from tests.helpers import observation


def el(**kw: object) -> Element:
    base = {
        "index": 0,
        "tag": "button",
        "role": "button",
        "name": "",
        "selector": "#b",
        "box": {"x": 10, "y": 20, "width": 100, "height": 30},
        "hit": True,
    }
    return Element.model_validate({**base, **kw})


def jpeg(w: int, h: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (w, h), "white").save(out, "JPEG")
    return out.getvalue()


def obs(elements: list[Element], scale: float = 2.0, shot: bytes | None = None) -> Observation:
    screenshot = shot if shot is not None else jpeg(int(400 * scale), int(300 * scale))
    return observation(elements, viewport=(400, 300), scale=scale, url="u", screenshot=screenshot)


def rows_for(elements: list[Element], limit: int) -> list[GroundingRow]:
    ids = {"run_id": "r", "schema_version": "1", "task_id": "t", "episode_id": "e"}
    return grounding_rows(
        obs(elements), **ids, browser_version="chromium/1", step_index=0, limit=limit
    )


def test_referring_expressions() -> None:
    assert referring_expression(el(name="Add to cart")) == 'the "Add to cart" button'
    assert (
        referring_expression(el(role="searchbox", placeholder="Search products"))
        == 'the search box with placeholder "Search products"'
    )
    assert (
        referring_expression(el(role="switch", name="Dark mode", checked=False))
        == 'the unchecked "Dark mode" toggle'
    )
    assert expressions([el(role="generic", tag="div")])[0] == ("", "")  # nothing to name it by


def test_grounding_boxes_in_screenshot_pixels_and_normalised() -> None:
    (row,) = rows_for([el(name="Go")], limit=10)
    assert row.bbox_px == (20, 40, 220, 100)
    assert row.bbox_norm == (20 / 800, 40 / 600, 220 / 800, 100 / 600)
    assert row.point_px == (120, 70)
    assert row.bbox_css == (10, 20, 110, 50)
    assert check_grounding(row, ValidationConfig()) is None


def test_grounding_rules_give_reasons() -> None:
    def reason(element: Element) -> RejectReason | None:
        (row,) = rows_for([element], limit=1)
        problem = check_grounding(row, ValidationConfig(min_box_px=4))
        return problem[0] if problem else None

    assert reason(el(name="x", hit=False)) == RejectReason.OCCLUDED
    assert reason(el(name="", role="generic", tag="div")) == RejectReason.NO_REFERRING_EXPRESSION
    assert reason(el(name="")) is None  # an unnamed button: "the button" (issue 34)
    assert (
        reason(el(name="x", box={"x": 1, "y": 1, "width": 1, "height": 30}))
        == RejectReason.BOX_TOO_SMALL
    )
    assert (
        reason(el(name="x", box={"x": 390, "y": 1, "width": 50, "height": 30}))
        == RejectReason.BOX_OUTSIDE_IMAGE
    )


def test_step_rules() -> None:
    good = obs([])
    assert check_step(good, Click(x=10, y=10)) is None
    assert check_step(good, Click(x=800, y=10))[0] == RejectReason.ACTION_OFF_SCREEN
    wrong = obs([], shot=jpeg(400, 300))  # a CSS-px screenshot where device px were recorded
    assert check_step(wrong, Click(x=1, y=1))[0] == RejectReason.SCREENSHOT_SIZE_MISMATCH
    assert (
        check_step(obs([], shot=b"not an image"), Click(x=1, y=1))[0]
        == RejectReason.SCREENSHOT_SIZE_MISMATCH
    )


def test_expressions_are_unique_within_a_screenshot() -> None:
    submit_a = el(
        index=0,
        name="Submit",
        context="Sign in",
        box={"x": 10, "y": 200, "width": 80, "height": 30},
    )
    submit_b = el(
        index=1,
        name="Submit",
        context="Create account",
        box={"x": 300, "y": 200, "width": 80, "height": 30},
    )
    edits = [
        el(
            index=2 + i,
            name="Edit",
            context="Addresses",
            box={"x": 400, "y": 300 + 40 * i, "width": 40, "height": 20},
        )
        for i in (2, 0, 1)  # out of reading order on purpose
    ]
    lonely = el(index=5, name="Edit", box={"x": 10, "y": 10, "width": 40, "height": 20})
    named = expressions([submit_a, submit_b, *edits, lonely])
    assert named[0] == ('the "Submit" button under "Sign in"', "context")
    assert named[1] == ('the "Submit" button under "Create account"', "context")
    # same context: ordinal among those under it, in reading order (top to bottom)
    assert named[2] == ('the first "Edit" button under "Addresses"', "position")
    assert named[3] == ('the second "Edit" button under "Addresses"', "position")
    assert named[4] == ('the third "Edit" button under "Addresses"', "position")
    # no context: its place among every "Edit" button on screen (it is the topmost)
    assert named[5] == ('the first "Edit" button', "position")
    texts = [text.lower() for text, _ in named.values()]
    assert len(texts) == len(set(texts))


def test_expression_sources_and_kinds() -> None:
    def one(**kw: object) -> tuple[str, str]:
        return expressions([el(**kw)])[0]

    assert one(
        role="checkbox", tag="input", name="Remember me", name_source="label", checked=False
    ) == (
        'the unchecked "Remember me" checkbox',
        "label",
    )
    assert one(
        role="textbox", tag="input", name="Company name", name_source="nearby", editable=True
    ) == (
        'the "Company name" text field',
        "nearby",
    )
    # the HTML name attribute names nothing (older data's field-name source): role and state
    assert one(
        role="textbox", tag="input", name="tax id", name_source="field-name", editable=True
    ) == ("the empty text field", "role")
    assert one(role="generic", tag="path", name="orange", name_source="appearance") == (
        "the orange graphic",
        "appearance",
    )
    assert one(role="generic", tag="li", name="Only my issues", name_source="content") == (
        'the "Only my issues" list item',
        "name",
    )
    # a checkbox with nothing visible to name it: its role and state (its value "on" is not a
    # label, and it is not dropped: issue 34)
    assert one(role="checkbox", tag="input", text="", checked=True) == (
        "the checked checkbox",
        "role",
    )
    # an icon-only control's accessible name stands in for the icon, unquoted (not on screen)
    assert one(role="button", name="Settings", name_source="aria-label") == (
        "the settings icon button",
        "icon",
    )
    # unnamed controls that read the same: by place, and how many (`of two`)
    pair = [
        el(index=i, selector=f"#c{i}", tag="input", role="checkbox", checked=False, box=box)
        for i, box in enumerate(
            [
                {"x": 10, "y": 10, "width": 13, "height": 13},
                {"x": 40, "y": 10, "width": 13, "height": 13},
            ]
        )
    ]
    assert expressions(pair) == {
        0: ("the first of two unchecked checkboxes", "position"),
        1: ("the second of two unchecked checkboxes", "position"),
    }
    assert one(role="combobox", tag="select", text="Alpha") == (
        'the drop-down showing "Alpha"',
        "value",
    )


def test_unstable_boxes_are_rejected() -> None:
    (row,) = rows_for([el(name="Go", stable=False)], limit=1)
    problem = check_grounding(row, ValidationConfig(), stable=False)
    assert problem is not None and problem[0] == RejectReason.UNSTABLE_BOX
    assert row.expression_kind == "name"


def test_a_sentence_of_an_accessible_name_places_the_icon_instead_of_naming_it() -> None:
    """Issue 34: `Delete "Buy milk"` on an icon-only button is no icon's word: it is said by
    the text beside it on the screen, and the name stays in its own column."""
    row = el(
        name='Delete "Buy milk"',
        name_source="aria-label",
        accessible_name='Delete "Buy milk"',
        anchor="Buy milk",
        anchor_side="left",
    )
    assert expressions([row])[0] == ('the icon button right of "Buy milk"', "relation")
    (grounded,) = rows_for([row], limit=1)
    assert grounded.accessible_name == 'Delete "Buy milk"'


def test_a_password_field_never_quotes_what_it_holds() -> None:
    secret = el(role="textbox", tag="input", input_type="password", editable=True, text="Sun!24")
    assert expressions([secret])[0] == ("the filled text field", "role")
