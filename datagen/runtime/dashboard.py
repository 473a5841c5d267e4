"""datagen's page on the Dask dashboard: `/datagen`, every live figure per worker under a short
name, with a total row only where a total means something.

    worker heartbeat ─► scheduler: ws.metrics["datagen"] (Meter.figures(), one dict per worker)
    GET /datagen     ─► page(): live curves (steps/s, sessions in flight, browser memory,
                        rejects by reason, engine tokens/s when there is an engine: live.py),
                        then the tables for exact figures: one row per worker, the totals,
                        what held sessions in flight, rejects by reason
    GET /datagen/data.json ─► the curves and the tables again, fetched by the page every 2 s
                        (nothing fetched from elsewhere; without script the page reloads)

A run without an engine has no engine columns (the meter reports engine rates of 0 all along).

Dask's own Workers page shows each numeric worker metric as a column titled by its key, in
columns too narrow for long keys, with a total row that sums every column: a sum of per-worker
mean latencies or of limits is no figure at all. So the meter gives that page only the
figures a sum suits, under short keys (`runtime.metrics.HEADLINE`), and everything else lives
here. The page is added to the running scheduler from the driver (`add_page`); a scheduler
that cannot import datagen simply has no such page.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Mapping
from typing import Any

from distributed import Client
from distributed.http.utils import RequestHandler

from datagen.browser.admission import BINDINGS, binding_name
from datagen.engine.health import FIGURE, health_html, raised_anywhere
from datagen.observe.meter import REASONS
from datagen.runtime.hosts import host_table
from datagen.runtime.live import SCRIPT, History, has_engine
from datagen.runtime.metrics import METRIC

log = logging.getLogger(__name__)
PATH = "datagen"
REFRESH_S = 2

# figure → (header, total): "sum" (rates, counts, memory, requests in flight), "mean" (the
# request-weighted mean of per-worker means), "" (none: a limit is each worker's own)
COLUMNS: dict[str, tuple[str, str]] = {
    "steps_per_s": ("steps/s", "sum"),
    "screenshots_per_s": ("screenshots/s", "sum"),
    "episodes_per_s": ("episodes/s", "sum"),
    "steps": ("steps", "sum"),
    "episodes": ("episodes", "sum"),
    "rejects": ("rejects", "sum"),
    "browser_sessions": ("sessions", "sum"),
    "browser_memory_mb": ("browser MB", "sum"),
    "engine_requests_per_s": ("engine req/s", "sum"),
    "engine_tokens_per_s": ("engine tokens/s", "sum"),
    "engine_latency_ms": ("engine ms (mean)", "mean"),
    "engine_in_flight": ("in flight", "sum"),
    "engine_limit": ("in-flight limit", ""),
    "engine_queued": ("queued", "sum"),
    "session_limit": ("session limit", ""),
    "binding": ("binds now", ""),
    "observe_work_ms": ("observe work ms (median)", ""),
    "loop_lag_ms": ("loop lag ms", ""),
    "cpu_busy_pct": ("CPU busy %", ""),
}


def table(workers: Mapping[str, Mapping[str, float]]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows (workers by name, then "total") of the figures any worker has; no
    engine column where no worker has an engine."""
    engine = has_engine(workers)
    shown = [
        k
        for k in COLUMNS
        if any(k in figures for figures in workers.values())
        and (engine or not k.startswith("engine_"))
    ]
    rows = [[name] + [_cell(k, figures.get(k)) for k in shown] for name, figures in workers.items()]
    total = ["total"] + [_number(_total(k, workers)) for k in shown]
    return ["worker"] + [COLUMNS[k][0] for k in shown], [*rows, total]


def _total(key: str, workers: Mapping[str, Mapping[str, float]]) -> float | None:
    how = COLUMNS[key][1]
    values = [(f.get(key), f) for f in workers.values() if f.get(key) is not None]
    if how == "sum":
        return sum(v for v, _ in values if v is not None)
    if how == "mean":  # each worker's mean over its own requests: weight by those requests
        weights = [(v, f.get("engine_requests_per_s") or 0.0) for v, f in values]
        requests = sum(w for _, w in weights)
        return sum(v * w for v, w in weights if v is not None) / requests if requests else None
    return None


def _cell(key: str, value: float | None) -> str:
    if key == "binding" and value is not None:
        return binding_name(value)  # a code in the figures (they are numbers): its name here
    return _number(value)


def binding_table(workers: Mapping[str, Mapping[str, float]]) -> tuple[list[str], list[list[str]]]:
    """What held each worker's sessions in flight since its browser started: seconds per
    limit, a column per worker, the total and its share (rows for limits that held at all)."""
    names = list(workers)
    seconds = {b: [workers[n].get(f"bound_{b}_s", 0.0) for n in names] for b in BINDINGS}
    everything = sum(sum(v) for v in seconds.values())
    rows = [
        [b, *map(_number, v), _number(sum(v)), f"{sum(v) / everything:.0%}"]
        for b, v in seconds.items()
        if sum(v)
    ]
    return ["limit", *names, "total s", "share"], rows


def reject_table(workers: Mapping[str, Mapping[str, float]]) -> tuple[list[str], list[list[str]]]:
    """Rejects by reason (those that occurred), a column per worker and the total."""
    names = list(workers)
    rows = []
    for reason in REASONS:
        counts = [workers[n].get("rejects_" + reason, 0.0) for n in names]
        if any(counts):
            rows.append([reason, *map(_number, counts), _number(sum(counts))])
    return ["reason", *names, "total"], rows


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}" if value == int(value) or abs(value) >= 100 else f"{value:,.2f}"


def figures_by_worker(scheduler: Any) -> dict[str, dict[str, float]]:
    """Worker name → its datagen figures, from the scheduler's last heartbeats."""
    out = {}
    for ws in sorted(scheduler.workers.values(), key=lambda ws: str(ws.name)):
        figures = ws.metrics.get(METRIC)
        if isinstance(figures, dict):
            out[str(ws.name)] = {k: float(v) for k, v in figures.items()}
    return out


def tables(
    workers: Mapping[str, Mapping[str, float]], hosts: tuple[list[str], list[list[str]]] = ([], [])
) -> str:
    """The page's tables, as HTML (`hosts`: the run's hosts table, runtime.hosts.host_table)."""
    headers, rows = table(workers)
    reasons = reject_table(workers)
    bound = binding_table(workers)
    body = _html_table(headers, rows, total=True) if workers else "<p>no worker reports yet</p>"
    if bound[1]:
        body += (
            "<h2>what held sessions in flight (seconds)</h2><p>engine: requests wait for an "
            "engine slot; cpu: the session limit, lowered while the browsers starve; memory: "
            "the browser's memory limit; sessions: sessions_per_worker; tasks: no more work to "
            "start.</p>" + _html_table(*bound, total=False)
        )
    if any(k.startswith(FIGURE) for f in workers.values() for k in f):  # a run with an engine
        body += health_html(raised_anywhere({k: dict(v) for k, v in workers.items()}))
    if reasons[1]:
        body += "<h2>rejects by reason</h2>" + _html_table(*reasons, total=False)
    if hosts[1]:  # run.hosts: one book for the whole cluster, so one row per host
        body += "<h2>hosts (the whole cluster)</h2>" + _html_table(*hosts, total=False)
    return body


def page(
    workers: Mapping[str, Mapping[str, float]], hosts: tuple[list[str], list[list[str]]] = ([], [])
) -> str:
    """The whole HTML page: the curves (drawn by its script) above the tables."""
    script = SCRIPT.replace("REFRESH_MS", str(REFRESH_S * 1000))
    return f"""<!doctype html><html><head><meta charset="utf-8">
<noscript><meta http-equiv="refresh" content="{REFRESH_S}"></noscript><title>datagen</title><style>
body {{ font: 14px system-ui, sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; }}
th, td {{ padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
tr.total td {{ font-weight: bold; border-top: 2px solid #888; }}
.curve {{ display: inline-block; margin: 0 16px 12px 0; vertical-align: top; }}
svg.chart text {{ font-size: 10px; fill: #555; }}
</style></head><body><h1>datagen</h1>
<p>The cluster's totals, live (sampled each second while this page is open), then per worker:
rates over the last 10 s, counts since the worker's browser started, gauges now. The total
row sums what adds up; the engine's mean latency is weighted by requests; limits have no
total. <a href="status">Dask dashboard</a></p>
<div id="curves"></div>
<div id="tables">{tables(workers, hosts)}</div>{script}</body></html>"""


def _html_table(headers: list[str], rows: list[list[str]], total: bool) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    lines = []
    for i, row in enumerate(rows):
        cls = ' class="total"' if total and i == len(rows) - 1 else ""
        lines.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(lines)}</table>"


class DatagenPage(RequestHandler):
    """GET /datagen on the scheduler's HTTP server."""

    def get(self) -> None:
        workers = figures_by_worker(self.server)
        _history(self.server).sample(workers)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.write(page(workers, host_table(self.server)))


class DatagenData(RequestHandler):
    """GET /datagen/data.json: the curves and the tables, for the page's script."""

    def get(self) -> None:
        workers = figures_by_worker(self.server)
        history = _history(self.server)
        history.sample(workers)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(
            json.dumps(history.data() | {"tables": tables(workers, host_table(self.server))})
        )


def _history(scheduler: Any) -> History:
    """The scheduler's curve history (one per scheduler, kept on it: no module state)."""
    history = getattr(scheduler, "datagen_history", None)
    if not isinstance(history, History):
        history = History()
        scheduler.datagen_history = history
    return history


def _add(dask_scheduler: Any) -> bool:
    """On the scheduler: route /datagen and its data to the page, once."""
    app = dask_scheduler.http_application
    if not getattr(app, "datagen_page", False):
        given = {"dask_server": dask_scheduler}
        app.add_handlers(
            r".*$",
            [(f"/{PATH}", DatagenPage, given), (f"/{PATH}/data.json", DatagenData, given)],
        )
        app.datagen_page = True
    return True


def add_page(client: Client) -> bool:
    """Add the page to the cluster's scheduler; False (and a log line) where it cannot be (a
    scheduler without datagen installed)."""
    try:
        return bool(client.run_on_scheduler(_add))
    except Exception as exc:
        log.info("no /%s page on the dashboard: %s", PATH, exc)
        return False
