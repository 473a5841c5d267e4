"""The run report: what the dashboard showed live, kept as one HTML file in the output. In
`runtime/` because its timeline samples the Dask scheduler (the figures of runtime.metrics).

Timeline (driver thread) ─ every `interval_s` ─► scheduler_info()["workers"][*]["metrics"]
run ends ─► write_report(): throughput, engine, session-limit and browser-memory curves from
            the timeline, what held sessions in flight, latency histograms from the
            committed steps table, rejects by reason ─► <output>/_report.html (bokeh,
            self-contained: no network needed)
"""

from __future__ import annotations

import html
import logging
import threading
import time
from dataclasses import dataclass, field
from html import escape  # write_report's own `html` is the page
from typing import Any

import numpy as np
from bokeh.embed import file_html
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, FactorRange
from bokeh.models.widgets import Div
from bokeh.palettes import Category10_10
from bokeh.plotting import figure
from bokeh.resources import INLINE

from datagen.browser.admission import BINDINGS
from datagen.engine.health import FIGURE, health_html, raised_anywhere
from datagen.observe.roles import run_measures
from datagen.observe.solves import solve_html, solve_rates
from datagen.observe.summary import counted, counts_text, verification_line
from datagen.observe.synth import synthesis_html
from datagen.runtime.hosts import HOST_COLUMNS
from datagen.runtime.metrics import METRIC
from datagen.sink.hosts import read_hosts
from datagen.sink.models import Manifest
from datagen.sink.read import iter_committed
from datagen.sink.storage import Storage
from datagen.sink.synthesised import synthesised

log = logging.getLogger(__name__)
REPORT = "_report.html"
LATENCIES = {
    "observe_ms": "observe (screenshot + DOM), ms",
    "act_ms": "act, ms",
    "engine_latency_ms": "engine per step, ms",
}


@dataclass
class Timeline:
    """Samples every worker's datagen metrics from the scheduler while a run goes on; at most
    `max_samples` (worker × time) are kept, thinned evenly over the run."""

    client: Any
    interval_s: float = 2.0
    max_samples: int = 20_000  # then every other one goes and the interval doubles
    samples: list[tuple[float, str, dict[str, float]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Timeline:
        self._t0 = time.time()
        self._thread = threading.Thread(target=self._loop, name="datagen-timeline", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sample()  # the last figures, after the last shard

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> None:
        try:
            workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        except Exception:  # the report is a by-product: never fail a run for it
            log.debug("timeline sample failed", exc_info=True)
            return
        now = time.time() - self._t0
        for address, info in workers.items():
            reported = info.get("metrics", {}).get(METRIC)
            figures = {
                k: float(v)
                for k, v in (reported if isinstance(reported, dict) else {}).items()
                if isinstance(v, int | float)
            }
            if figures:
                self.samples.append((now, str(info.get("name", address)), figures))
        if len(self.samples) > self.max_samples:  # long runs, many workers: bounded memory
            times = sorted({t for t, _, _ in self.samples})
            kept = set(times[::2])
            self.samples = [s for s in self.samples if s[0] in kept]
            self.interval_s *= 2

    def series(self, name: str) -> dict[str, tuple[list[float], list[float]]]:
        """Per worker: times and values of one figure."""
        out: dict[str, tuple[list[float], list[float]]] = {}
        for t, worker, figures in self.samples:
            if name in figures:
                ts, vs = out.setdefault(worker, ([], []))
                ts.append(t)
                vs.append(figures[name])
        return out

    def bound_seconds(self) -> dict[str, float]:
        """Worker-seconds each limit held sessions in flight (`browser.admission.BINDINGS`),
        summed over workers: each worker's figures count since its browser started, so its
        latest sample has them all."""
        out = dict.fromkeys(BINDINGS, 0.0)
        for name in BINDINGS:
            for _, values in self.series(f"bound_{name}_s").values():
                out[name] += max(values, default=0.0)
        return {name: round(seconds, 1) for name, seconds in out.items() if seconds}


def has_engine(timeline: Timeline) -> bool:
    """Did any worker have an engine (a limit on requests in flight) or call one? A run
    without one reports engine rates of 0 all along: no chart to draw."""
    engine = ("engine_limit", "engine_requests_per_s", "engine_tokens_per_s")
    return any(figures.get(k, 0.0) > 0 for _, _, figures in timeline.samples for k in engine)


def binding_line(bound: dict[str, float]) -> str:
    """The share of worker-time each limit held sessions in flight: "engine 61%, cpu 30%"."""
    total = sum(bound.values())
    shares = sorted(bound.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{name} {seconds / total:.0%}" for name, seconds in shares) if total else ""


def _curves(timeline: Timeline, name: str, title: str, y_label: str) -> Any:
    plot = figure(title=title, x_axis_label="seconds", y_axis_label=y_label, height=260)
    plot.sizing_mode = "stretch_width"
    for i, (worker, (ts, vs)) in enumerate(sorted(timeline.series(name).items())):
        color = Category10_10[i % 10]
        plot.line(ts, vs, legend_label=f"worker {worker}", color=color, line_width=2)
    if plot.legend:
        plot.legend.location = "top_left"
    return plot


def _histogram(values: np.ndarray, title: str) -> Any:
    p50, p95 = np.percentile(values, [50, 95])
    title = f"{title}: p50 {p50:.0f}, p95 {p95:.0f}, n {len(values)}"
    plot = figure(title=title, y_axis_label="steps", height=240)
    plot.sizing_mode = "stretch_width"
    counts, edges = np.histogram(values, bins=40)
    source = ColumnDataSource({"top": counts, "left": edges[:-1], "right": edges[1:]})
    plot.quad(top="top", bottom=0, left="left", right="right", source=source, alpha=0.7)
    return plot


def write_report(
    storage: Storage,
    timeline: Timeline,
    manifest: Manifest,
    steps: dict[str, np.ndarray],
    seconds: float,
    measures: list[str] | None = None,
) -> str:
    """Render the report into the output; returns its key. `measures`: the roles' lines
    (`run_measures`), when read already."""
    verification = verification_figures(storage)  # replays' share of session time
    rows = {name: info.rows for name, info in manifest.tables.items()}
    tasks, dropped = manifest.tasks, manifest.steps_dropped
    head = Div(
        text=(
            f"<h1>datagen run report</h1><p>run <code>{manifest.run_id}</code>, "
            f"{seconds:.1f} s; episodes {rows.get('episodes', 0)} from "
            f"{tasks.with_episodes} of {tasks.committed} tasks, "
            f"steps {rows.get('steps', 0)}, "
            f"grounding rows {rows.get('grounding', 0)}, solved {manifest.solved}; "
            f"rejects by reason: {escape(counts_text(manifest.reject_reasons))}.</p>"
            f"<p>Observations dropped on pages out of scope, error or blank pages (never data): "
            f"{dropped.total}, {dropped.share:.1%} of all "
            f"({escape(counts_text(dropped.by_reason))}). "
            "Curves: the workers' figures as the Dask dashboard showed them (10 s windows).</p>"
            f"<p>What held sessions in flight (share of worker-time): "
            f"{binding_line(timeline.bound_seconds()) or 'not reported'} (engine: requests "
            "waited for an engine slot; cpu: the session limit, lowered while the browsers "
            "starved; memory: the browser's memory limit; sessions: sessions_per_worker; "
            "tasks: no more work to start).</p>"
            + (f"<p>{escape(verification)}</p>" if verification else "")
        ),
        sizing_mode="stretch_width",
    )
    parts: list[Any] = [
        head,
        *health_divs(timeline),
        *[
            Div(text=f"<p>{escape(line)}</p>", sizing_mode="stretch_width")
            for line in (run_measures(manifest) if measures is None else measures)
        ],
        *hosts_table(read_hosts(storage)),
        *synthesis_divs(storage),
        *solve_divs(storage),
        _curves(timeline, "steps_per_s", "browser steps per second", "steps/s"),
        _curves(timeline, "screenshots_per_s", "screenshots per second", "screenshots/s"),
        _curves(timeline, "browser_memory_mb", "browser memory (USS)", "MB"),
    ]
    if timeline.series("session_limit"):
        parts += [
            _curves(timeline, "session_limit", "session limit (CPU-aware admission)", "sessions"),
            _curves(timeline, "sessions_in_flight", "sessions in flight", "sessions"),
            _curves(timeline, "observe_work_ms", "observation work (median)", "ms"),
        ]
    if has_engine(timeline):  # the meter reports engine rates of 0 for a run with none
        parts += [
            _curves(timeline, "engine_tokens_per_s", "engine tokens per second", "tokens/s"),
            _curves(timeline, "engine_latency_ms", "engine latency (mean)", "ms"),
            _curves(timeline, "engine_limit", "in-flight limit (adaptive)", "requests"),
            _curves(timeline, "engine_in_flight", "requests at the engine", "requests"),
        ]
    for name, title in LATENCIES.items():
        values = steps.get(name)
        if values is not None and len(values):
            parts.append(_histogram(values, title))
    reasons = manifest.reject_reasons
    if reasons:
        names = sorted(reasons, key=lambda r: -reasons[r])
        bars = figure(x_range=FactorRange(factors=names), title="rejects by reason", height=260)
        bars.sizing_mode = "stretch_width"
        bars.vbar(x=names, top=[reasons[n] for n in names], width=0.8)
        parts.append(bars)
    html = file_html(column(*parts, sizing_mode="stretch_width"), INLINE, "datagen run report")
    storage.put(REPORT, html.encode())
    return REPORT


def health_divs(timeline: Timeline) -> list[Div]:
    """The engine-health watchdog's conditions raised during the run, with what to do
    (datagen.engine.health); nothing when the run called no engine."""
    latest: dict[str, dict[str, float]] = {}
    for _, worker, figures in timeline.samples:
        if any(k.startswith(FIGURE) for k in figures):
            seen = latest.setdefault(worker, {})
            for key, value in figures.items():
                if key.startswith(FIGURE):
                    seen[key] = max(seen.get(key, 0.0), value)
    if not latest:
        return []
    return [Div(text=health_html(raised_anywhere(latest)), sizing_mode="stretch_width")]


# the live figures a run's end leaves no meaning in (sessions now, the last 10 s's rate)
LIVE_ONLY = ("sessions", "requests_per_s")


def hosts_table(hosts: dict[str, dict[str, Any]]) -> list[Div]:
    """The run's hosts (`_hosts.json`, run.hosts) as one table; none when no host was limited.
    Host names and causes come from pages and URLs: escaped."""
    if not hosts:
        return []
    columns = {k: v for k, v in HOST_COLUMNS.items() if k not in LIVE_ONLY}
    columns["host_blocked_rejects"] = "host_blocked rejects"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["host", *columns.values()])
    body = ""
    for name, figures in sorted(hosts.items()):
        cells = [name] + [
            "" if figures.get(k) is None else str(figures.get(k))[:200] for k in columns
        ]
        body += "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
    text = (
        "<h2>hosts (run.hosts)</h2><p>Per host of the run: the most sessions it held at once, "
        "its requests and the waits for its pace or its session limit, 429/503 answers that "
        f"slowed it, and its block (_hosts.json has all of it).</p><table border=1>"
        f"<tr>{head}</tr>{body}</table>"
    )
    return [Div(text=text, sizing_mode="stretch_width")]


def step_latencies(dataset: Any, limit: int = 500_000) -> dict[str, np.ndarray]:
    """The latency columns of the committed steps (column projection: no screenshots read)."""
    table = dataset.head(limit, columns=list(LATENCIES))
    out: dict[str, np.ndarray] = {}
    for name in LATENCIES:
        values = table.column(name).drop_null().to_numpy()
        if len(values):
            out[name] = values
    return out


def synthesis_divs(storage: Storage) -> list[Div]:
    """The synthesised tasks' section (observe/synth.py); none when the run made none."""
    try:
        rows = synthesised(storage)  # specificity decided over the whole run
    except Exception:  # the report is a by-product: never fail a run for it
        log.info("no synthesis figures for the report", exc_info=True)
        return []
    return _section(synthesis_html(rows))


def solve_divs(storage: Storage) -> list[Div]:
    """The solve rate per task's section (observe/solves.py); none when no task had more than
    one episode."""
    try:
        rates = solve_rates(storage)
    except Exception:  # the report is a by-product: never fail a run for it
        log.info("no solve rates for the report", exc_info=True)
        return []
    return _section(solve_html(rates))


def _section(text: str) -> list[Div]:
    """An HTML section of the report, or nothing for no text."""
    return [Div(text=text, sizing_mode="stretch_width")] if text else []


def verification_figures(storage: Storage) -> str:
    """The report's verification line, from the committed episodes ("" when it cannot say:
    none verified, or an output of schema < 1.4 without the columns)."""
    columns = [
        "duration_s",
        "verify_ms",
        "verify_replays",
        "verify_network",
        "verify_aborted",
        "verification",
    ]
    try:
        table = [
            r for _, part in iter_committed(storage, "episodes", columns) for r in part.to_pylist()
        ]
    except Exception:
        log.info("no verification figures for the report", exc_info=True)
        return ""
    verify_s = sum((r["verify_ms"] or 0.0) for r in table) / 1000
    network = counted(line for r in table for line in r["verify_network"] or [])
    refused = counted(line for r in table for line in r["verify_aborted"] or [])
    session_s = sum(r["duration_s"] for r in table) + verify_s
    replays = sum((r["verify_replays"] or 0) for r in table)
    verified = sum(1 for r in table if r["verification"] is not None)
    return verification_line(session_s, verify_s, replays, network, refused, verified)
