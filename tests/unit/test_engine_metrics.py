"""/metrics from a server of our own that answers garbage (issue 42, items 3 and 4): the reading
is bounded in bytes and line length and keeps only the watched series; a reading with NaN,
infinite or missing gauges, an HTML page or a redirect is "unreadable": the in-flight control
keeps its limit and lives on, warns once, and the watchdog names it. Servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest

from datagen.engine.client import EngineClient, MetricsUnreadable
from datagen.engine.control import EngineLoad, InFlightController
from datagen.engine.health import EngineWatchdog
from datagen.engine.metrics import MAX_LINE, MAX_METRICS_BYTES, MAX_SAMPLES
from tests.helpers import eventually
from tests.hostile_engine import METRICS, Answer, HostileEngine, body, redirect, stream

TEXT = "text/plain"


def read(engine: HostileEngine) -> dict[str, float]:
    async def go() -> dict[str, float]:
        async with EngineClient(engine.url) as client:
            return await client.metrics()

    return asyncio.run(go())


def test_a_watched_line_longer_than_its_bound_is_dropped_as_it_streams() -> None:
    huge = b"vllm:num_requests_running " + b"9" * (MAX_METRICS_BYTES // 2) + b"\n"
    with HostileEngine(metrics=stream(len(huge) + len(METRICS), head=huge + METRICS.encode())) as e:
        values = read(e)
    assert values["vllm:num_requests_running"] == 3.0  # the 2 MB line is not a reading of 9…9
    assert values["vllm:kv_cache_usage_perc"] == 0.25


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            stream(2 * MAX_METRICS_BYTES, head=b"vllm:num_requests_running ", filler=b"1"),
            "more than",
        ),
        (stream(2 * MAX_METRICS_BYTES, filler=b"# a comment\n", kind=TEXT), "more than"),
        (body(b"# only comments\n" * 100, kind=TEXT), "no vllm:num_requests_running"),
        (body(METRICS.encode() * (MAX_SAMPLES // 4 + 1), kind=TEXT), f"more than {MAX_SAMPLES}"),
        (body(b'vllm:num_requests_running{a="\n', kind=TEXT), "does not parse"),
    ],
    ids=["one_huge_line", "a_flood_of_comments", "no_gauges", "too_many_samples", "broken_label"],
)
def test_a_reading_past_its_bounds_or_without_gauges_is_unreadable(
    answer: Answer, says: str
) -> None:
    with HostileEngine(metrics=answer) as engine, pytest.raises(MetricsUnreadable, match=says):
        read(engine)


def test_the_line_bound_leaves_room_for_vllms_longest_labels() -> None:
    labels = 'engine="0",model_name="' + "m" * 200 + '"'
    line = f"vllm:num_requests_waiting{{{labels}}} 2.0\n"
    assert len(line) < MAX_LINE
    with HostileEngine(metrics=body(METRICS + line, kind=TEXT)) as engine:
        assert read(engine)["vllm:num_requests_waiting"] == 2.0


def test_non_finite_loads_are_no_reading() -> None:
    controller = InFlightController(64, start=32)
    for load in (
        EngineLoad(math.nan, 0, 0.2),
        EngineLoad(3, 0, math.inf),
        EngineLoad(3, 0, 0.2, math.nan),
    ):
        assert controller.update(load) == 32
    with pytest.raises(ValueError, match="nan"):
        EngineLoad.from_metrics({"vllm:num_requests_running": math.nan})


UNREADABLE = {
    "nan_running": body(METRICS.replace("} 3.0", "} NaN"), kind=TEXT),
    "inf_kv_use": body(METRICS.replace("} 0.25", "} +Inf"), kind=TEXT),
    "html_page": body(b"<!doctype html><title>Gateway</title>", kind="text/html"),
    "redirect": redirect("http://127.0.0.1:9/metrics"),  # never followed: nothing is dialled
    "missing_gauges": body(b"vllm:prompt_tokens_total 5\n", kind=TEXT),
}


@pytest.mark.parametrize("kind", list(UNREADABLE))
def test_the_control_keeps_its_limit_on_unreadable_metrics_and_lives_on(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="datagen.engine.client")

    async def go(engine: HostileEngine) -> None:
        async with EngineClient(engine.url, max_in_flight=64) as client:
            task = asyncio.create_task(client.control(InFlightController(64, start=32), 1.0, 0.01))
            assert await eventually(lambda: engine.hits["/metrics"] >= 5)
            assert not task.done(), task  # the control task is alive…
            assert client.gate.limit == 32  # …and kept the limit
            assert "metrics_unreadable" in client.health.raised
            engine.answer("/metrics", body(METRICS, kind=TEXT))  # readable again
            assert await eventually(lambda: client.gate.limit != 32)
            assert client.gate.limit == 11  # 3 running at 25% of the cache: the cache's cap
            task.cancel()

    with HostileEngine(metrics=UNREADABLE[kind]) as engine:
        asyncio.run(go(engine))
    warned = [r for r in caplog.records if "unreadable" in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in warned]


def test_the_watchdog_names_unreadable_metrics_once(caplog: pytest.LogCaptureFixture) -> None:
    dog = EngineWatchdog("http://engine")
    with caplog.at_level(logging.WARNING):
        dog.unreadable("/metrics: vllm:num_requests_running is nan")
        dog.unreadable("/metrics answered HTTP 500")
    assert list(dog.raised) == ["metrics_unreadable"]
    assert len(caplog.records) == 1 and "fix:" in caplog.records[0].getMessage()
