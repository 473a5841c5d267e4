"""A `vlm` run against an engine that answers 200 with garbage (issue 42, item 2): in turn a
cut-off `{"choices": [`, an HTML page, `{"choices": []}`, a body past the client's byte bound
and a drip of one byte at a time. Before, every shard failed three times (`JSONDecodeError`,
`IndexError`) and its tasks got no row, rc 1. Now each such answer is a failed request, retried
and then rejected as `engine_error` with the reason: every task ends once, rc as a normal run.
The server is ours, on 127.0.0.1 (tests/hostile_engine.py); the output in a temporary folder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from datagen.engine.wire import MAX_ANSWER_BYTES
from tests.helpers import datagen, each_task_once, rows
from tests.hostile_engine import GARBAGE, HostileEngine, drip, stream

pytestmark = [pytest.mark.browser, pytest.mark.cluster]

TASKS = 5
RETRIES = 1  # each call: 2 answers, so the 5 kinds all come up over the run


def write_pipeline(folder: Path, url: str) -> Path:
    spec = {
        "name": "engine-garbage",
        "sources": [{"type": "sites", "sites": ["todo", "signup", "shop"]}],
        # the drip ends only at the request's time limit: keep it short here
        "policy": {"type": "vlm", "localizer": None, "policy": {"timeout_s": 2}},
        "engine": {"url": url, "retries": RETRIES, "ready_timeout_s": 60},
        "cluster": {"workers": 1, "sessions_per_worker": 2, "dashboard": "127.0.0.1:0"},
        "run": {"max_steps": 2, "tasks_per_shard": 1, "limit": TASKS},  # each_task_once: 1 a shard
        "output": {"uri": "out"},
    }
    path = folder / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_run_against_an_engine_answering_garbage_ends_every_task_once(tmp_path: Path) -> None:
    answers = [
        GARBAGE["cut_off"],
        GARBAGE["html"],
        GARBAGE["no_choices"],
        stream(MAX_ANSWER_BYTES + 2**20, head=b'{"choices": ['),
        drip(every_s=0.25),
    ]
    with HostileEngine(chat=answers) as engine:
        result = datagen("run", str(write_pipeline(tmp_path, engine.url)), cwd=tmp_path)
        chats = engine.hits["/v1/chat/completions"]
    out = tmp_path / "out"
    assert "Traceback" not in result.stdout + result.stderr
    each_task_once(out, TASKS)
    rejects = [r for r in rows(out, "rejects") if r["stage"] in ("task", "episode")]
    assert Counter(r["reason"] for r in rejects) == {"engine_error": TASKS}, rejects
    said = " ".join(r["detail"] or "" for r in rejects)
    for reason in ("cut off", "HTML page", "no choices", f"more than {MAX_ANSWER_BYTES}"):
        assert reason in said, said
    assert chats == TASKS * (RETRIES + 1)  # bounded: each call retried RETRIES times, no more
    # a run whose tasks all ended as rejects exits 1 with its top reasons (test_outcomes_cli),
    # as any run would: not a failed run
    assert result.returncode == 1, result.stdout + result.stderr
    assert "engine_error" in result.stdout + result.stderr
