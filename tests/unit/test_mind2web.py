"""The Mind2Web reader (source/mind2web.py) on small fixture files: Mind2Web's array of task
records (website names, recorded actions with document-space boxes in JSON-string
attributes) and Online-Mind2Web's (website URLs), as JSON arrays and JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datagen.config import parse_pipeline
from datagen.errors import SourceError
from datagen.records import Click, Key, Scroll, TypeText
from datagen.runplan import make_plan
from datagen.source import load_tasks, mind2web
from datagen.source.mind2web import read_mind2web

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mind2web"
TRAIN = FIXTURES / "train_sample.json"
ONLINE = FIXTURES / "online_sample.json"
URLS = {"exploretock": "https://www.exploretock.com/", "united": "https://www.united.com/"}


def test_mind2web_records_become_tasks_with_their_recorded_actions() -> None:
    first, second = read_mind2web(TRAIN, URLS)
    assert (first.id, first.start_url, first.site, first.source) == (
        "a1b2c3d4-0001",
        "https://www.exploretock.com/",
        "exploretock",
        "mind2web",
    )
    assert first.instruction == "Find a table for 4 in Seattle tonight"
    assert first.reference[1] == "[button]  Search -> CLICK"  # the original action_reprs kept
    # TYPE: click the box's centre, type; the CLICK at document y=1718 (below an 800 px
    # viewport) is scrolled to first and clicked in viewport pixels; SELECT: click, type, Enter
    assert first.actions == (
        Click(x=200, y=65),
        TypeText(text="Seattle"),
        Scroll(dy=1318),
        Click(x=133.1, y=400),
        Click(x=110, y=492),  # already in view after that scroll
        TypeText(text="4 guests"),
        Key(combo="Enter"),
    )
    # the second record's TYPE has no positive candidate: its actions stop there
    assert second.actions == (Click(x=35, y=20),)


def test_device_scale_factor_gives_screenshot_pixels() -> None:
    (first, _) = read_mind2web(TRAIN, URLS, viewport=(1280, 800), scale=2.0)
    assert first.actions[0] == Click(x=400, y=130)


def test_online_mind2web_records_start_at_their_website() -> None:
    tasks = read_mind2web(ONLINE, {})
    assert [(t.id, t.start_url, t.site) for t in tasks] == [
        ("0123456789abcdef0123456789abcdef", "https://www.example.com/", "www.example.com"),
        (
            "fedcba9876543210fedcba9876543210",
            "https://shop.example.org/laptops",
            "shop.example.org",
        ),
    ]
    assert tasks[1].instruction == "Compare two laptops under $1000"  # task_description
    assert all(t.actions == () and t.reference == () for t in tasks)


def test_jsonl_and_limit(tmp_path: Path) -> None:
    records = json.loads(TRAIN.read_text())
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert [t.id for t in read_mind2web(path, URLS, limit=1)] == ["a1b2c3d4-0001"]


def test_a_record_without_a_start_url_names_its_line() -> None:
    with pytest.raises(SourceError) as caught:
        read_mind2web(TRAIN, {"exploretock": "https://www.exploretock.com/"})
    lines = TRAIN.read_text().splitlines()
    second = [i for i, text in enumerate(lines, start=1) if text == "{"][1]
    assert f"{TRAIN}:{second}: record 'a1b2c3d4-0002'" in str(caught.value)
    assert "'united'" in str(caught.value) and "start_urls" in str(caught.value)


def test_bad_records_are_errors_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n{"annotation_id": "x", "website": "https://a.example/"}\n]\n')
    with pytest.raises(SourceError, match=r"bad.json:2: .*confirmed_task"):
        read_mind2web(path, {})
    path.write_text('[\n{"annotation_id": "x",\n "confirmed_task": }\n]')
    with pytest.raises(SourceError, match=r"bad.json:3: not valid JSON"):
        read_mind2web(path, {})


def test_a_pipeline_reads_it_and_old_task_lists_keep_their_run_id(tmp_path: Path) -> None:
    config = parse_pipeline(
        {
            "name": "m2w",
            "sources": [
                {"type": "mind2web", "path": str(TRAIN), "start_urls": URLS, "limit": 2},
                {"type": "mind2web", "path": str(ONLINE)},
            ],
            "output": {"uri": str(tmp_path / "out")},
            "policy": {"type": "scripted"},
            "base_dir": str(tmp_path),
        }
    )
    tasks = load_tasks(config)
    assert len(tasks) == 4 and {t.source for t in tasks} == {"mind2web"}
    assert "reference" in tasks[0].model_dump() and "reference" not in tasks[2].model_dump()
    assert make_plan(config).run_id  # plans like any other source


RECORD = '{"annotation_id": "r%d", "website": "https://a.example/", "confirmed_task": "go"'


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (', "actions": 7}', "record 'r1': actions must be a list of actions, got int"),
        (
            ', "actions": [{"operation": {"op": "CLICK"}, "pos_candidates": 5}]}',
            "record 'r1': actions[0].pos_candidates must be a list of candidates, got int",
        ),
        (', "actions": ["click"]}', "record 'r1': actions[0] must be an object, got str"),
        (', "action_reprs": {"a": 1}}', "record 'r1': action_reprs must be a list of strings"),
        (', "website": ["x"]}', "record 'r1': website must be a string, got list"),
        (', "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests deeper than a JSON reader"),
    ],
)
def test_a_bad_record_is_one_line_naming_it(tmp_path: Path, bad: str, says: str) -> None:
    """Fields of the wrong type and brackets nested 100,000 deep: a SourceError naming the
    record's line (and id), never a TypeError or RecursionError (a traceback)."""
    path = tmp_path / "bad.json"
    path.write_text("[\n" + RECORD % 0 + "},\n" + RECORD % 1 + bad + "\n]\n")
    with pytest.raises(SourceError) as caught:
        read_mind2web(path, {})
    assert "bad.json:3: " in str(caught.value) and says in str(caught.value)
    jsonl = tmp_path / "bad.jsonl"  # the same record as a JSONL line
    jsonl.write_text(RECORD % 0 + "}\n" + RECORD % 1 + bad + "\n")
    with pytest.raises(SourceError, match=r"bad.jsonl:2: "):
        read_mind2web(jsonl, {})


@pytest.mark.parametrize(
    ("tail", "says"),
    [
        ("]\ngarbage", "bad.json:5: text after the array's closing `]`: 'garbage'"),
        ("] []", "bad.json:4: text after the array's closing `]`: '[]'"),
        ("", "bad.json:4: the JSON array never closes"),
        (",]", "bad.json:4: a record expected, found ']'"),
        (",," + RECORD % 2 + "}]", "bad.json:4: a record expected, found ','"),
        (RECORD % 2 + "}]", "bad.json:4: `,` or `]` expected, found '{"),
    ],
)
def test_the_array_ends_with_its_bracket(tmp_path: Path, tail: str, says: str) -> None:
    """The array's own grammar: one comma between records, `]` and nothing after it."""
    path = tmp_path / "bad.json"
    path.write_text("[\n" + RECORD % 0 + "},\n" + RECORD % 1 + "}\n" + tail)
    with pytest.raises(SourceError) as caught:
        read_mind2web(path, {})
    assert says in str(caught.value)


def test_line_numbers_cost_one_pass_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20,000 records (a few MB): each line counted once, not from the start for every record
    (that was quadratic: 73 s for 1.8 MB). Counted, not timed: the characters the line counter
    scanned stay within the file's size."""
    counters: list[mind2web.Lines] = []

    class Counted(mind2web.Lines):
        def __init__(self, text: str) -> None:
            super().__init__(text)
            counters.append(self)

    monkeypatch.setattr(mind2web, "Lines", Counted)
    records = ",\n".join((RECORD % i).replace(", ", ",\n ") + "}" for i in range(20_000))
    path = tmp_path / "big.json"
    path.write_text("[\n" + records + "\n]\n")
    tasks = read_mind2web(path, {})
    assert len(tasks) == 20_000 and tasks[-1].id == "r19999"
    (counter,) = counters
    size = path.stat().st_size
    assert counter.scanned <= size, (counter.scanned, size)
    assert counter.line == 2 + 3 * 19_999  # the last record's first line: 3 lines a record


def test_a_comma_before_the_first_record_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("[,\n" + RECORD % 0 + "}]")
    with pytest.raises(SourceError, match=r"bad.json:1: a record or `\]` expected, found ','"):
        read_mind2web(path, {})
    path.write_text("[ ]")
    assert read_mind2web(path, {}) == []
