"""Words that decide (issue 43): a synthesised task's instruction names what its check reads,
or the task has no words (annotate/tasks.py, annotate/decide.py). The cases are the ones a
read of the demo's exported tasks found: a product's "Add to cart" among twelve, a table's page
number and sort header checked by one row's text."""

from __future__ import annotations

from dataclasses import replace

from datagen.annotate.decide import decides, labelled, stem
from datagen.annotate.tasks import Act, Effect, effects, instruction
from datagen.records import ElementCheck, PageState, SuccessCheck

TABLE = "http://127.0.0.1:8000/table/"
ADD = Act("click", "button", "Add to cart", label="Add Smart Watch to cart", equals=12)
PAGE_5 = Act("click", "button", "5", label="Page 5")
SALARY = Act("click", "button", "SALARY", label="Sort by Salary, currently ascending")


def text(line: str) -> Effect:
    return Effect("text", f"text:{line}", SuccessCheck(text_present=line), line)


def url(part: str) -> Effect:
    return Effect("url", f"url:{part}", SuccessCheck(url_contains=part), part)


def element(kind: str, role: str, name: str, state: str = "present") -> Effect:
    check = SuccessCheck(element=ElementCheck(role=role, name=name, state=state))
    return Effect(kind, f"{kind}:{role}:{name}:{state}:", check, name, role)


def test_one_of_many_like_buttons_is_named_by_what_is_drawn_with_it() -> None:
    told = Act(**{**ADD.__dict__, "context": "Smart Watch"})
    assert instruction(text("Smart Watch added to cart"), [told]) == 'Add "Smart Watch" to cart'
    # the check must read the product the words name: "Added ✓" shows for any of them
    assert instruction(element("appeared", "button", "Added ✓"), [told]) is None
    # its accessible name alone, with no drawn part in it, names nothing on the screen
    assert instruction(text("Smart Watch added to cart"), [ADD]) is None
    # no label, but a drawn heading that tells it apart
    plain = Act("click", "button", "Add to cart", context="Smart Watch", equals=12)
    assert (
        instruction(text("Smart Watch added to cart"), [plain])
        == 'Press "Add to cart" in "Smart Watch"'
    )
    bare = Act("click", "button", "Add to cart", equals=12)
    assert instruction(text("Smart Watch added to cart"), [bare]) is None


def test_a_page_number_and_a_sort_are_checked_by_the_url_not_by_a_row() -> None:
    start = PageState(url=TABLE + "#page=1&size=10", text="Ann Lee")
    paged = PageState(url=TABLE + "#page=5&size=10", text="Chloe Mensah")
    sorted_ = PageState(url=TABLE + "#page=1&size=10&sort=salary&dir=asc", text="Grace Quinn")
    assert {e.key for e in effects(start, start, paged)} == {"url:#page=5&", "text:Chloe Mensah"}
    assert [e.subject for e in effects(start, start, sorted_) if e.kind == "url"] == [
        "&sort=salary&",
        "&dir=asc",
    ]
    assert instruction(url("#page=5&"), [PAGE_5]) == "Go to page 5"
    assert instruction(text("Chloe Mensah"), [PAGE_5]) is None
    assert instruction(url("&sort=salary&"), [SALARY]) == 'Sort by "SALARY"'
    assert instruction(url("&dir=asc"), [SALARY]) is None  # the words do not say which way
    assert instruction(text("Grace Quinn"), [SALARY]) is None
    following = Act("click", "button", "Next ›", label="Next page")
    assert instruction(url("#page=2&"), [following]) == "Go to the next page"
    assert instruction(element("appeared", "button", "‹ Prev"), [following]) is None
    link = Act("click", "link", "Next page")
    assert instruction(url("?page=2"), [link]) == "Go to the next page"
    assert (
        instruction(url("/pricing"), [Act("click", "link", "Pricing")]) == 'Open the "Pricing" page'
    )


def test_words_that_name_the_message_or_the_element_stay() -> None:
    save = Act("click", "button", "Save changes", label="Save changes")
    assert instruction(text("✓ Settings saved"), [save]) == 'Press "Save changes"'
    assert instruction(text("All changes saved"), [save]) == 'Press "Save changes"'
    shown = Act("click", "button", "Show password", label="Show password")
    assert instruction(element("appeared", "button", "Hide password"), [shown]) is not None
    # the pressed control gone (or disabled: "Clear completed" with nothing completed left)
    # says it was pressed, not what it did
    went = element("disappeared", "button", "Show password", "absent")
    assert instruction(went, [shown]) is None
    # an error the button's words do not speak of is no task of pressing it
    create = Act("click", "button", "Create account")
    assert instruction(text("Please choose a password."), [create]) is None
    tab = Act("click", "tab", "Notifications")
    assert (
        instruction(element("appeared", "switch", "Push notifications"), [tab])
        == 'Switch to the "Notifications" tab'
    )
    completed = Act("click", "tab", "Completed")
    gone = element("disappeared", "checkbox", "Schedule dentist appointment", "absent")
    assert instruction(gone, [completed]) is None  # deleting it would pass that check too


def test_a_label_the_site_quotes_its_drawn_subject_in() -> None:
    delete = Act("click", "button", "Delete", label='Delete "Buy milk"', equals=3)
    gone = element("disappeared", "checkbox", "Buy milk", "absent")
    assert instruction(gone, [delete]) == 'Delete "Buy milk"'
    assert instruction(element("disappeared", "checkbox", "Walk dog", "absent"), [delete]) is None
    # an icon's button named by its label alone: the name is the act, quoted once
    icon = Act("click", "button", 'Delete "Buy milk"', label='Delete "Buy milk"')
    assert instruction(gone, [icon]) == 'Delete "Buy milk"'


def test_the_pure_parts() -> None:
    assert stem("saved") == stem("save") and stem("added") == stem("add") == "add"
    assert labelled("5", "Page 5", ["5"]) == ("Go to page 5", "5")
    assert labelled("×", "Close cart", ["×"]) is None  # nothing drawn in it
    assert labelled("Cart 0", "Cart, 0 items", ["Cart 0"]) is None  # no instruction
    assert labelled("Add to cart", "Add to cart", ["Add to cart"]) is None  # says no more
    assert decides("Smart Watch added to cart", 'Add "Smart Watch" to cart', ["Smart Watch"])
    assert not decides("Yoga Mat added to cart", 'Add "Smart Watch" to cart', ["Smart Watch"])
    assert not decides("Chloe Mensah 5", "Go to page 5", [])  # a bare number names nothing


def test_a_drawn_name_that_is_the_labels_verb_is_no_thing_to_quote() -> None:
    # a drawn "Add" labelled "Add to cart": quoting the verb (`"Add" to cart`) says no more
    assert labelled("Add", "Add to cart", ["", "Add"]) is None
    assert labelled("Sort", "Sort by salary", ["Sort", "SALARY"]) == ('Sort by "SALARY"', "SALARY")
    bare = Act("click", "button", "Add", label="Add to cart")
    typed = Act("type", "textbox", "New item", text="Milk")
    added = element("appeared", "listitem", "Milk", "present")
    assert instruction(added, [typed, bare]) == 'Add "Milk" to the list'
    assert instruction(added, [typed, bare, bare, bare]) == (
        'Type "Milk" into "New item", then press "Add", then press "Add", then press "Add"'
    )


def test_a_name_or_text_with_quotes_in_it_is_quoted_as_it_reads() -> None:
    said = Act("type", "textbox", "Message", text='Say "hi"')
    send = Act("click", "button", "Send")
    shown = element("appeared", "listitem", 'Say "hi"', "present")
    # the text to type is the demonstration's, whole: never `"Say "hi""`
    assert instruction(shown, [said, send]) == "Add 'Say \"hi\"' to the list"
    both = Act("type", "textbox", "Message", text='Bob\'s "big" day')
    assert instruction(replace(shown, subject=both.text), [both, send, send, send]) == (
        'Type \u201cBob\'s "big" day\u201d into "Message", then press "Send", then press '
        '"Send", then press "Send"'
    )


def count(was: str, now: str, role: str = "button") -> Effect:
    return replace(element("count", role, now), was=was)


def test_a_controls_new_number_is_worded_from_the_control_and_its_values() -> None:
    # whichever "Add to cart" made it: the check reads the cart's button, and so do the words
    assert instruction(count("Cart 0", "Cart 1"), [ADD]) == 'Make the "Cart" button show 1'
    assert (
        instruction(count("Inbox (3)", "Inbox (2)", "link"), []) == 'Make the "Inbox" link show 2'
    )
    # a number that is not the name's last: the names as they read
    assert (
        instruction(count("Page 1 of 5", "Page 2 of 5", "tab"), [])
        == 'Make the "Page 1 of 5" tab read "Page 2 of 5"'
    )
    assert instruction(count("Qty 1", "Qty 2", "spinbutton"), []) == 'Make "Qty" show 2'


def test_an_icon_only_controls_name_is_said_as_its_icon_never_quoted() -> None:
    """The signup page's eye button: "Show password" is its aria-label, not drawn. The demo's
    tasks export said `Press "Show password"`, quoting words the screen does not show."""
    eye = Act("click", "button", "Show password", label="Show password", shown=False)
    shown = element("appeared", "button", "Hide password")
    assert instruction(shown, [eye]) == "Press the show password icon button"
    gear = Act("click", "link", "Settings", label="Settings", shown=False)
    assert instruction(url("/settings"), [gear]) == "Open the settings icon link"
    tab = Act("click", "tab", "Alerts", label="Alerts", shown=False)
    assert instruction(url("#tab=alerts"), [tab]) == "Switch to the alerts tab"
    # a sentence of a name is no icon's word: no words, no task
    long = replace(eye, name="Show the password you typed", label="Show the password you typed")
    assert instruction(shown, [long]) is None
    # one of several like icons, told apart by what is drawn beside it
    delete = Act("click", "button", "Remove", label="Remove", context="Buy milk", equals=3)
    gone = element("disappeared", "checkbox", "Buy milk", "absent")
    assert instruction(gone, [replace(delete, shown=False)]) == (
        'Press the remove icon button in "Buy milk"'
    )
    mute = Act("click", "switch", "Mute", label="Mute", shown=False)
    muted = element("state", "switch", "Mute", "checked")
    assert instruction(muted, [mute]) == "Toggle the mute switch"  # never `Turn on "Mute"`
