"""The worker meter: counters in, rates and gauges out, as Dask's heartbeat reads them."""

from __future__ import annotations

import pickle
import time

from datagen.observe.meter import Meter, register, unregister


class FakeWorker:  # only the attribute Dask's Worker offers for custom metrics
    def __init__(self) -> None:
        self.metrics: dict = {}  # type: ignore[type-arg]


def test_rates_over_the_window_gauges_and_rejects() -> None:
    meter = Meter(window_s=10)
    meter.gauges["browser"] = lambda: {"browser_memory_mb": 123.45}
    meter.totals["engine"] = lambda: {"engine_requests": 4.0, "engine_latency_ms": 800.0}
    first = meter.figures(max_age_s=0)
    assert first["steps_per_s"] == 0 and first["browser_memory_mb"] == 123.5
    meter.add("steps", 30)
    meter.add("reject:occluded", 2)
    time.sleep(0.2)
    figures = meter.figures(max_age_s=0)
    assert 30 / 0.5 < figures["steps_per_s"] <= 30 / 0.2  # 30 steps in ≈ 0.2 s
    assert figures["rejects_occluded"] == 2 and figures["rejects"] == 2 and figures["steps"] == 30


def test_registered_as_numeric_worker_metrics_and_pickles_empty() -> None:
    meter = Meter()
    meter.add("steps", 5)
    worker = FakeWorker()
    register(worker, meter)
    assert worker.metrics["datagen_steps"](worker) == 5
    assert all(isinstance(f(worker), float | int) for f in worker.metrics.values())
    # every reject reason has its entry from the start: the dict never grows during a run
    assert worker.metrics["datagen_rejects_renderer_crash"](worker) == 0
    again = Meter()  # a plugin registered again: its meter replaces the old one's
    register(worker, again)
    assert worker.metrics["datagen_steps"](worker) == 0
    worker.metrics["other"] = lambda w: 1
    unregister(worker)
    assert list(worker.metrics) == ["other"]
    assert pickle.loads(pickle.dumps(meter)).counts() == {}
