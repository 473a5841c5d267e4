import json
from pathlib import Path

import pytest

from datagen.errors import ConfigError, SourceError
from datagen.runplan import make_plan
from datagen.source import BUNDLED_SITES, shard_tasks, task_key
from datagen.source.readers import list_sites, read_native, read_sites, read_urls, read_webvoyager
from tests.helpers import make_config


def test_native_reader(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "a",
                "start_url": "http://127.0.0.1/",
                "instruction": "x",
                "check": {"js": "1"},
                "max_steps": 3,
            }
        )
        + "\n\n"
        + json.dumps(
            {
                "id": "b",
                "start_url": "site://todo/",
                "instruction": "y",
                "actions": [{"type": "click", "x": 1, "y": 2}],
            }
        )
        + "\n"
    )
    a, b = read_native(path)
    assert (a.id, a.check.js, a.max_steps, a.source) == ("a", "1", 3, "native")
    assert b.actions[0].type == "click"


def test_native_reader_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "start_url": "u", "instruction": "x"}\n{"id": "b"}\n')
    with pytest.raises(SourceError, match=r"t.jsonl:2: .*start_url"):
        read_native(path)
    path.write_text("{not json\n")
    with pytest.raises(SourceError, match=r"t.jsonl:1: not valid JSON"):
        read_native(path)
    with pytest.raises(SourceError, match="not found"):
        read_native(tmp_path / "missing.jsonl")


def test_webvoyager_reader(tmp_path: Path) -> None:
    path = tmp_path / "wv.jsonl"
    rows = [
        {
            "web_name": "Allrecipes",
            "id": f"Allrecipes--{i}",
            "ques": "Find a recipe",
            "web": "https://www.allrecipes.com/",
        }
        for i in range(3)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))  # like the original: no final newline
    tasks = read_webvoyager(path, limit=2)
    assert [t.id for t in tasks] == ["Allrecipes--0", "Allrecipes--1"]
    assert (
        tasks[0].site == "Allrecipes" and tasks[0].check is None and tasks[0].source == "webvoyager"
    )


def test_url_list_reader(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_text(
        "# comment\nhttp://127.0.0.1:1/a\n\nhttp://127.0.0.1:1/#/settings  # trailing\n"
    )
    tasks = read_urls(path, "Explore.")
    assert [(t.id, t.start_url) for t in tasks] == [
        ("urls-2", "http://127.0.0.1:1/a"),
        ("urls-4", "http://127.0.0.1:1/#/settings"),  # a fragment is not a comment
    ]
    path.write_text("not a url\n")
    with pytest.raises(SourceError, match=r"urls\.txt:1"):
        read_urls(path, "x")


def test_bundled_sites() -> None:
    sites = list_sites(BUNDLED_SITES)
    assert len(sites) >= 5
    tasks = read_sites(BUNDLED_SITES)
    assert {t.site for t in tasks} == set(sites)
    assert all(t.start_url.startswith("site://") and t.check for t in tasks)
    with pytest.raises(SourceError, match="unknown site"):
        read_sites(BUNDLED_SITES, ["nope"])


def test_sharding_is_stable_balanced_and_complete() -> None:
    tasks = read_sites(BUNDLED_SITES)
    shards = shard_tasks(tasks, 4)
    assert [len(s) for s in shards] == [4] * (len(tasks) // 4) + (
        [len(tasks) % 4] if len(tasks) % 4 else []
    )
    assert sorted(t.id for s in shards for t in s) == sorted(t.id for t in tasks)
    # fixed, machine-independent order: sha256 of the id (not Python's salted hash)
    assert (
        task_key("todo-add-item")
        == "4c1228fe4ceaaac102b0389c8ab1cf36cbeae4f968b57390cb891dd4e07f229c"
    )
    assert shard_tasks(list(reversed(tasks)), 4) == shards  # file order does not matter


def test_plan_duplicate_ids_and_empty_lists(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps({"id": "todo-add-item", "start_url": "u", "instruction": "x"}) + "\n"
    )
    config = make_config(
        tmp_path, sources=[{"type": "sites"}, {"type": "jsonl", "path": "t.jsonl"}]
    )
    with pytest.raises(
        ConfigError, match=r"duplicate task id 'todo-add-item' \(sources\[0\] and sources\[1\]\)"
    ):
        make_plan(config)
    path.write_text("")
    with pytest.raises(ConfigError, match="hold no tasks"):
        make_plan(make_config(tmp_path, sources=[{"type": "jsonl", "path": "t.jsonl"}]))


def test_run_id_changes_with_tasks(tmp_path: Path) -> None:
    one = make_plan(make_config(tmp_path))
    two = make_plan(make_config(tmp_path, run={"max_steps": 4, "limit": 5}))
    assert one.run_id != two.run_id and len(two.tasks) == 5
    assert make_plan(make_config(tmp_path)).run_id == one.run_id


def test_a_misspelt_task_key_gets_the_key_it_meant(tmp_path: Path) -> None:
    """A user's own task list: `instrution`, `text_presnt`, an element check's `nam` each name
    the key meant as the fix (they got only "correct the task list")."""
    start = '{"id": "a", "start_url": "http://127.0.0.1:8765/", '
    cases = {
        start + '"instrution": "x"}': "instrution: did you mean 'instruction'?",
        start + '"instruction": "x", "check": {"text_presnt": "y"}}': (
            "check.text_presnt: did you mean 'text_present'?"
        ),
        start + '"instruction": "x", "check": {"element": {"role": "button", "nam": "y"}}}': (
            "check.element.nam: did you mean 'name'?"
        ),
    }
    for line, fix in cases.items():
        (tmp_path / "t.jsonl").write_text(line + "\n")
        with pytest.raises(SourceError) as caught:
            read_native(tmp_path / "t.jsonl")
        assert caught.value.fix == fix and "t.jsonl:1:" in str(caught.value)


def test_an_empty_check_is_refused_with_the_line(tmp_path: Path) -> None:
    """`"check": {}` holds on every page: validate passed it and every episode became a
    check_passes_at_start reject. Now the task list is refused by line."""
    line = '{"id": "a", "start_url": "http://127.0.0.1:8765/", "instruction": "x", "check": {}}'
    (tmp_path / "t.jsonl").write_text(line + "\n")
    with pytest.raises(SourceError, match=r"t\.jsonl:1: check: .*an empty check holds on every"):
        read_native(tmp_path / "t.jsonl")
