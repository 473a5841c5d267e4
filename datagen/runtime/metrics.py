"""A worker's meter as Dask worker metrics: what the heartbeat carries to the scheduler.

    observe.meter.Meter (counters, browser loop thread) ─► register(worker, meter)
    Dask heartbeat ─► worker.metrics[...] ─► Meter.figures() (worker's event loop)
                   ─► scheduler ─► dashboard "Workers" page, /datagen (runtime.dashboard),
                                   and the driver's run report (runtime.report)

Every figure goes to the scheduler as one dict, `worker.metrics["datagen"]`: the dashboard's
`/datagen` page and the run report read it. Dask's own Workers page (/workers) shows each
*numeric* metric as a column titled by its key, with a total row that sums it, and skips dicts:
it gets the HEADLINE figures only, those a sum suits, under short keys.
"""

from __future__ import annotations

from typing import Any

from datagen.observe.meter import Meter

METRIC = "datagen"  # worker.metrics key of the dict of every figure
# Figures on Dask's Workers page: key there (its column title) ← figure. Rates, counts and
# memory only: that page's total row sums every column (not latency means, nor limits).
HEADLINE = {
    "steps/s": "steps_per_s",
    "screenshots/s": "screenshots_per_s",
    "episodes/s": "episodes_per_s",
    "engine tokens/s": "engine_tokens_per_s",
    "engine in flight": "engine_in_flight",
    "browser MB": "browser_memory_mb",
    "rejects": "rejects",
}


def register(worker: Any, meter: Meter) -> None:
    """Expose the meter's figures as Dask worker metrics: all of them as one dict, and the
    HEADLINE ones as numbers (a plugin registered again replaces the entries). Call on the
    worker's event loop, or before it runs: heartbeats iterate `worker.metrics` there."""
    worker.metrics[METRIC] = lambda w: dict(meter.figures())
    for key, name in HEADLINE.items():
        worker.metrics[key] = lambda w, name=name: meter.figures().get(name, 0.0)


def unregister(worker: Any) -> None:
    """Remove the meter's metrics from a worker (its plugin is torn down)."""
    for key in (METRIC, *HEADLINE):
        worker.metrics.pop(key, None)
