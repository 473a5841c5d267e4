"""Synthesised tasks out (issue 43): their `fail` check (annotate/failure.py), the writes their
demonstrations sent, and their place in the `sft` and `rl` exports, the task list and the run
report, on an output written without a browser (tests/unit/synthetic_run.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from rich.console import Console

from datagen.annotate.failure import fail_check, failure_lines
from datagen.export import export_output, parse_options
from datagen.export.tasks import TaskExport, card, export_tasks
from datagen.observe import roles
from datagen.observe.outcome import RunSummary
from datagen.observe.summary import show_summary
from datagen.observe.synth import synthesis_html
from datagen.pipeline.recording import Entry, Recording
from datagen.pipeline.replay import Screens
from datagen.pipeline.synthesis import _writes
from datagen.records import PageState, SuccessCheck, TaskRow
from datagen.runtime.report import Timeline, write_report
from datagen.sink.manifest import finalize
from datagen.sink.storage import LocalStorage
from datagen.sink.synthesised import chosen
from datagen.sink.writer import write_shard
from tests.helpers import shard_stats
from tests.unit.synthetic_run import RUN, Task, _episode, write_run

START = PageState(url="http://a/form", text="Time 10:00\nContact us")
SENT = PageState(url="http://a/form", text="Time 10:01\nContact us\nThanks, your message was sent")
REFUSED = PageState(url="http://a/form", text="Time 10:02\nContact us\nYou must agree to the terms")


def test_a_failure_message_that_appeared_is_a_fail_line_a_clock_is_not() -> None:
    ticked = PageState(url="http://a/form", text="Time 10:09\nContact us\nAll good, 3 sent")
    assert failure_lines([START], REFUSED) == ["You must agree to the terms"]
    assert failure_lines([START], ticked) == []  # new, but no failure in its words
    assert failure_lines([REFUSED], REFUSED) == []  # on the start already


def test_the_fail_check_is_false_at_the_start_on_the_way_and_where_it_was_solved() -> None:
    found = fail_check([START], [START, SENT], [("e1", REFUSED), ("e2", REFUSED)], [SENT])
    assert found == (SuccessCheck(text_present="You must agree to the terms"), ["e1", "e2"])
    # a message that also shows where the effect was made would end a solving episode
    both = PageState(url=SENT.url, text=SENT.text + "\nYou must agree to the terms")
    assert fail_check([START], [START, SENT], [("e1", REFUSED)], [both]) is None
    assert fail_check([START], [START, both], [("e1", REFUSED)], []) is None
    assert fail_check([START], [START, SENT], [], []) is None


def entry(method: str, url: str) -> Entry:
    return Entry(method, url, b"", 0, 200, {}, b"")


def test_each_demonstration_step_names_the_writes_it_sent() -> None:
    class Replayed:  # what _writes reads of a Replayer: the episode's recording
        recording = Recording(
            writes=[entry("POST", "http://a/todos?x=1"), entry("DELETE", "http://a/todos/3")]
        )

    path = Screens(writes=[0, 0, 1, 2])  # before step 2, before 5, before 7, after 7
    assert _writes(Replayed(), path, (2, 5, 7)) == ["5 POST /todos", "7 DELETE /todos/3"]  # type: ignore[arg-type]
    assert _writes(Replayed(), path, (2,)) == []  # type: ignore[arg-type]


def task_row(task: Task, synth_id: str, demo: list[int], **more: object) -> TaskRow:
    return TaskRow(
        run_id=RUN,
        schema_version="1.7",
        task_id=f"{task.site}-{task.name}",
        episode_id=f"{task.site}-{task.name}-0",
        browser_version="chromium/1.0",
        synth_id=synth_id,
        site=task.site,
        start_url=f"site://{task.site}/",
        effect_kind="text",
        effect="text:Thanks, your message was sent",
        instruction='Press "Send message"',
        check_json=json.dumps({"text_present": "Thanks, your message was sent"}),
        actions_json=json.dumps([{"type": "click", "x": 40.0, "y": 20.0}] * len(demo)),
        demo_steps=demo,
        demo_descriptions=['Click the "Go" button'] * len(demo),
        kept=True,
        proof_replays=2,
        false_on_start=3,
        **more,
    )


def commit(storage: LocalStorage, shard: int, task: Task, demo: list[int], **more: object) -> None:
    """A shard of `task`'s two repeats with one synthesised task from its first."""
    tables: dict[str, list[object]] = {"episodes": [], "steps": [], "grounding": [], "rejects": []}
    for repeat in (0, 1):
        episode, steps, _ = _episode(task, repeat)
        tables["episodes"].append(episode)
        tables["steps"] += steps
    tables["tasks"] = [task_row(task, "s1", demo, **more)]
    write_shard(storage, shard, tables, shard_stats(shard))  # type: ignore[arg-type]


def synth_output(tmp_path: Path) -> Path:
    """Two shards: the first task's demonstration (step 0, with a fail check and a write) and,
    in the second shard, the same (start URL, effect) found again with a longer one."""
    out = write_run(tmp_path / "out", [])
    storage = LocalStorage(out)
    commit(
        storage,
        0,
        Task("form", "a"),
        [0],
        false_on_episodes=["form-a-1"],
        fail_json=json.dumps({"text_present": "You must agree to the terms"}),
        fail_episodes=["form-a-1"],
        writes=["0 POST /form/send"],
    )
    commit(storage, 1, Task("form", "b"), [0, 1])
    return out


def rows(folder: Path) -> list[dict[str, Any]]:
    return [r for f in sorted(folder.glob("data/*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_a_synthesised_task_is_sft_samples_once_with_its_instruction(tmp_path: Path) -> None:
    out = synth_output(tmp_path)
    result = export_output(str(out), parse_options("sft"), to=str(tmp_path / "sft"))
    samples = [r for r in rows(tmp_path / "sft") if r["instruction_source"] == "synthesised"]
    # one task (the shorter demonstration of the two), its step and a done on the next screen
    assert [(s["synth_task_id"], s["step_index"]) for s in samples] == [
        ("synth-form-s1", i) for i in (0, 1)
    ]
    assert {s["instruction"] for s in samples} == {'Press "Send message"'}
    assert "done" in samples[1]["action"] or "terminate" in samples[1]["action"]
    assert samples[1]["previous_steps"] == [0]
    others = [r for r in rows(tmp_path / "sft") if r["instruction_source"] != "synthesised"]
    assert all(r["synth_task_id"] is None for r in others)
    card = (tmp_path / "sft" / "README.md").read_text()
    assert "synthesised tasks" in card and "1 with a `fail` check" in card and "POST 1" in card
    assert result.state is not None and result.state.totals().tally["synth.samples"] == 2


def test_a_synthesised_task_is_an_rl_group_its_check_rewards(tmp_path: Path) -> None:
    out = synth_output(tmp_path)
    export_output(str(out), parse_options("rl"), to=str(tmp_path / "rl"))
    group = [r for r in rows(tmp_path / "rl") if r["synth_task_id"]]
    assert [(r["episode_id"], r["reward"]) for r in group] == [("form-a-0", 1.0), ("form-a-1", 0.0)]
    assert {r["group_id"] for r in group} != {None} and len({r["group_id"] for r in group}) == 1
    assert all(r["group_size"] == 2 and r["task_id"] == "synth-form-s1" for r in group)
    assert json.loads(str(group[0]["check"])) == {"text_present": "Thanks, your message was sent"}
    assert json.loads(str(group[0]["fail"])) == {"text_present": "You must agree to the terms"}
    assert [s["step_index"] for s in group[0]["steps"]] == [0, 1]  # the step, then done
    assert "groups of 2 rollouts" in (tmp_path / "rl" / "README.md").read_text()


def test_the_task_list_carries_the_fail_check_and_the_writes(tmp_path: Path) -> None:
    out = synth_output(tmp_path)
    export_tasks(str(out))
    [line] = (out / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    task = json.loads(line)
    assert task["fail"] == {"text_present": "You must agree to the terms"}
    assert task["provenance"]["writes"] == "0 POST /form/send"
    assert task["provenance"]["fail_from"] == "form-a-1"
    card = (out / "exports" / "tasks" / "README.md").read_text()
    assert "1 tasks have a `fail` check" in card and "| POST /form/send | 1 |" in card
    assert "0 of them met no such episode" in card  # form-a-1 ended with its check false


def test_the_card_says_which_tasks_no_other_episode_spoke_against() -> None:
    """The shop's cart task: every other episode from its start clicked "Add to cart" too, so
    only its start states were read against it; the card says how many such tasks it lists."""
    row = task_row(Task("shop", "cart"), "s1", [0]).model_dump()
    other = row | {"synth_id": "s2", "false_on_episodes": ["shop-b-0"]}
    said = card([row, other], [row, other])
    assert "1 of them met no such episode" in said


def test_the_report_section_counts_by_kind_site_and_proof_step() -> None:
    assert synthesis_html([]) == ""
    html = synthesis_html(
        [
            {"kept": True, "effect_kind": "text", "site": "<b>form</b>", "writes": ["0 POST /x"]},
            {"kept": False, "dropped_at": "not_again", "effect_kind": "url", "site": "form"},
        ]
    )
    assert "1 kept of 2 candidates" in html and "not_again 1" in html and "POST 1" in html
    assert "&lt;b&gt;form&lt;/b&gt;" in html and "<b>form" not in html


def test_the_run_report_has_the_synthesis_section(tmp_path: Path) -> None:
    out = synth_output(tmp_path)
    storage = LocalStorage(out)
    write_report(storage, Timeline(client=None), finalize(storage, [0, 1]), {}, 1.0)
    html = (out / "_report.html").read_text()
    assert "synthesised tasks (annotation.tasks)" in html and "2 kept of 2 candidates" in html


def test_a_task_exported_once_is_not_given_again_by_a_later_shard(tmp_path: Path) -> None:
    out = write_run(tmp_path / "out", [])
    storage = LocalStorage(out)
    commit(storage, 0, Task("form", "b"), [0, 1])  # found first with a longer demonstration
    export_output(str(out), parse_options("sft"), to=str(tmp_path / "sft"))
    commit(storage, 1, Task("form", "a"), [0])  # then with a shorter one, committed since
    export_output(str(out), parse_options("sft"), to=str(tmp_path / "sft"))
    samples = [r for r in rows(tmp_path / "sft") if r["synth_task_id"]]
    assert {r["episode_id"] for r in samples} == {"form-b-0"} and len(samples) == 2


def test_the_run_summary_line_sums_every_shard_of_the_run(tmp_path: Path) -> None:
    out = synth_output(tmp_path)
    manifest = finalize(LocalStorage(out), [0, 1])
    results = [
        shard_stats(0).model_copy(
            update={
                "session_s": 60.0,
                "synth_s": 3.0,
                "tasks_synthesised": 2,
                "tasks_dropped": {"not_again": 1},
            }
        ),
        shard_stats(1).model_copy(
            update={
                "session_s": 40.0,
                "synth_s": 2.0,
                "tasks_synthesised": 3,
                "tasks_dropped": {"not_again": 2, "volatile": 1},
            }
        ),
    ]
    console = Console(record=True, width=400)
    summary = RunSummary(manifest=manifest, results=results, seconds=1.0)
    show_summary(console, Console(file=io.StringIO()), summary, tasks=2)
    text = console.export_text()
    assert (
        "task synthesis: 9 tasks synthesised, 5 kept, dropped by proof step: not_again 3, " in text
    )
    assert "volatile 1 (4.8% of session time with it, 5.0 s;" in text  # 5 of 100 + 5 s


def kept_row(
    site: str, kind: str, episode: str, effect: str, instruction: str, steps: list[int]
) -> dict[str, Any]:
    """A kept row of the tasks table, as `chosen` reads it (its check from its effect)."""
    what, _, rest = effect.partition(":")
    role, _, name = rest.partition(":")
    check: dict[str, Any] = {"element": {"role": role, "name": name.split(":")[0]}}
    if what in ("text", "url"):
        check = {"text_present" if what == "text" else "url_contains": rest}
    return {
        "check_json": json.dumps(check),
        "kept": True,
        "start_url": f"site://{site}/",
        "site": site,
        "effect": effect,
        "effect_kind": kind,
        "synth_id": f"{episode}-{effect}",
        "instruction": instruction,
        "episode_id": episode,
        "demo_steps": steps,
    }


def test_two_checks_of_one_instruction_are_one_task() -> None:
    """ "Press "Save changes"" read by either of two messages, from two episodes: one task (the
    shorter demonstration's); another instruction from the same start stays a task."""

    def row(episode: str, effect: str, instruction: str, steps: list[int]) -> dict[str, Any]:
        return kept_row("settings", "text", episode, effect, instruction, steps)

    save = 'Press "Save changes"'
    rows = [
        row("e2", "text:All changes saved", save, [1, 2]),
        row("e1", "text:Settings saved", save, [3]),
        row("e1", "text:All changes saved", save, [3]),
        row("e3", "url:#tab=privacy", 'Open the "Privacy" tab', [0]),
    ]
    kept = chosen(rows)
    assert [(r["episode_id"], r["effect"]) for r in kept] == [
        ("e1", "text:All changes saved"),
        ("e3", "url:#tab=privacy"),
    ]


def test_two_effects_of_one_demonstration_are_one_task() -> None:
    """A todo added: its checkbox and its Delete button appeared, two checks and two wordings
    of one demonstration: one task (the one whose check reads what its words quote: the item
    itself, not its Delete button, which the demo's task list kept); the same steps of another
    episode, or more steps of the same one, stay tasks of their own."""

    def row(episode: str, effect: str, instruction: str, steps: list[int]) -> dict[str, Any]:
        return kept_row("todo", "appeared", episode, effect, instruction, steps)

    rows = [
        row("e1", "appeared:checkbox:Call the dentist", 'Add "Call the dentist" to the list', [0, 1, 2]),
        row("e1", 'appeared:button:Delete "Call the dentist"', 'Add "Call the dentist"', [0, 1, 2]),
        row("e1", "state:checkbox:Call the dentist:checked", 'Check "Call the dentist"', [0, 1, 2, 3]),
        row("e2", "appeared:checkbox:Walk the cat", 'Add "Walk the cat" to the list', [0, 1, 2]),
    ]  # fmt: skip
    kept = chosen(rows)
    assert [(r["episode_id"], r["instruction"]) for r in kept] == [
        ("e1", 'Add "Call the dentist" to the list'),
        ("e1", 'Check "Call the dentist"'),
        ("e2", 'Add "Walk the cat" to the list'),
    ]


def test_the_roles_are_read_from_the_output_once_for_the_report_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = roles.read_measures

    def counted(uri: str, endpoint_url: str | None, standin: bool) -> roles.RoleMeasures:
        reads.append(uri)
        return real(uri, endpoint_url, standin)

    monkeypatch.setattr(roles, "read_measures", counted)
    storage = LocalStorage(synth_output(tmp_path))
    manifest = finalize(storage, [0, 1])
    summary = RunSummary(manifest=manifest, seconds=1.0)
    show_summary(Console(file=io.StringIO()), Console(file=io.StringIO()), summary, tasks=2)
    assert len(reads) == 1  # no lines read yet: the summary reads them
    summary.measures = ["localizer error vs the DOM box: median 7 px"]
    console = Console(record=True, width=400)
    show_summary(console, Console(file=io.StringIO()), summary, tasks=2)
    key = write_report(storage, Timeline(client=None), manifest, {}, 1.0, summary.measures)
    assert len(reads) == 1  # the driver's read, not a second or third one
    assert "localizer error vs the DOM box: median 7 px" in (storage.root / key).read_text()
    assert "localizer error vs the DOM box: median 7 px" in console.export_text()


def test_an_empty_task_list_says_why() -> None:
    """A run without task synthesis exports an empty list: the line says how to get one (it
    said only "0 tasks (of 0 candidates) written")."""
    assert "annotation.tasks" in TaskExport("tasks.jsonl", 0, 0).summary()
    assert "annotation.tasks" not in TaskExport("tasks.jsonl", 0, 3).summary()  # all dropped
