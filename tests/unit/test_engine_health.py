"""The engine-health watchdog's conditions, each from the readings that raise it, named once
in the log, and shown on the dashboard's /datagen page and in the run report."""

from __future__ import annotations

import logging

import pytest

from datagen.engine.health import CONDITIONS, FIGURE, EngineWatchdog, health_html, raised_anywhere
from datagen.runtime.dashboard import page
from datagen.runtime.report import Timeline, health_divs

RUNNING, WAITING = "vllm:num_requests_running", "vllm:num_requests_waiting"
KV, PREEMPTED = "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total"
PROMPTS, HITS = "vllm:prompt_tokens_total", "vllm:prefix_cache_hits_total"
SYSTEM = {"role": "system", "content": "You are a web agent. " * 40}


def reading(**values: float) -> dict[str, float]:
    base = {RUNNING: 4.0, WAITING: 0.0, KV: 0.2, PREEMPTED: 0.0, PROMPTS: 0.0, HITS: 0.0}
    return base | {
        {"running": RUNNING, "waiting": WAITING, "kv": KV, "preempted": PREEMPTED,
         "prompts": PROMPTS, "hits": HITS}[k]: v
        for k, v in values.items()
    }  # fmt: skip


def shared(dog: EngineWatchdog, n: int) -> None:
    for i in range(n):
        dog.sent({"messages": [SYSTEM, {"role": "user", "content": f"step {i}"}]})


def test_cold_prefix_cache_where_prompts_share_a_prefix() -> None:
    dog = EngineWatchdog("http://e")
    dog.read(reading(prompts=100, hits=7))
    shared(dog, 6)
    dog.read(reading(prompts=900, hits=7))  # prompts processed, no new hit
    assert list(dog.raised) == ["prefix_cache_cold"]


def test_a_warm_cache_or_unshared_prompts_raise_nothing() -> None:
    warm = EngineWatchdog()
    warm.read(reading(prompts=100, hits=0))
    shared(warm, 6)
    warm.read(reading(prompts=900, hits=500))
    assert not warm.raised
    unshared = EngineWatchdog()
    unshared.read(reading(prompts=100))
    for i in range(6):  # every prompt different from the first message on
        unshared.sent({"messages": [{"role": "user", "content": f"task {i}"}]})
    unshared.read(reading(prompts=900))
    assert not unshared.raised


def test_requests_waiting_while_none_run() -> None:
    dog = EngineWatchdog()
    for t in (0.0, 5.0):
        dog.read(reading(running=0, waiting=5), now=t)
    assert not dog.raised  # two readings could be requests between arrival and admission
    dog.read(reading(running=0, waiting=5), now=6.0)
    assert not dog.raised  # three, but within moments: a starved engine loop, not a stall
    dog.read(reading(running=0, waiting=5), now=10.0)
    assert list(dog.raised) == ["queue_stalled"]
    busy = EngineWatchdog()
    for t in range(20):
        busy.read(reading(running=8, waiting=5), now=float(t))  # a queue behind running: full
    assert not busy.raised
    blip = EngineWatchdog()
    for t in range(20):  # stalls that clear before they last
        blip.read(reading(running=0 if t % 3 else 1, waiting=5), now=float(t))
    assert not blip.raised


def test_server_errors_after_preprocessing() -> None:
    dog = EngineWatchdog()
    dog.answered(400)  # a refused request: the client's fault, not the engine's
    assert not dog.raised
    dog.answered(500)
    assert list(dog.raised) == ["server_errors"]


def test_kv_cache_full_with_preemptions() -> None:
    dog = EngineWatchdog()
    dog.read(reading(kv=0.99, preempted=3))
    dog.read(reading(kv=0.5, preempted=3))
    assert not dog.raised  # full, but nothing preempted since the last look
    dog.read(reading(kv=0.98, preempted=5))
    assert list(dog.raised) == ["kv_thrash"]
    roomy = EngineWatchdog()
    roomy.read(reading(kv=0.3, preempted=0))
    roomy.read(reading(kv=0.4, preempted=2))  # preempted, but not for want of cache
    assert not roomy.raised


def test_each_condition_is_named_once_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    dog = EngineWatchdog("http://e")
    with caplog.at_level(logging.WARNING, logger="datagen.engine.health"):
        for t in range(5):
            dog.answered(503)
            dog.read(reading(running=0, waiting=2), now=t * 5.0)
    lines = [r.getMessage() for r in caplog.records]
    for name in ("server_errors", "queue_stalled"):
        assert sum(name in line for line in lines) == 1
    assert all("fix:" in line for line in lines)


def test_the_dashboard_and_the_report_name_raised_conditions() -> None:
    dog = EngineWatchdog()
    dog.answered(500)
    assert dog.figures() == {FIGURE + name: float(name == "server_errors") for name in CONDITIONS}
    workers = {"w0": dog.figures(), "w1": EngineWatchdog().figures()}
    assert [c.name for c in raised_anywhere(workers)] == ["server_errors"]
    html = page(workers)
    assert "engine health" in html and "server_errors" in html and "fix:" in html
    assert "kv_thrash" not in html
    assert "no condition raised" in health_html([])
    timeline = Timeline(client=None)
    timeline.samples = [(0.0, "w0", EngineWatchdog().figures()), (1.0, "w0", dog.figures())]
    (div,) = health_divs(timeline)
    assert "server_errors" in div.text and CONDITIONS["server_errors"].fix[:20] in div.text
    assert health_divs(Timeline(client=None)) == []  # no engine: no section
