"""The Dask dashboard listens where `cluster.dashboard` says, this machine only by default, and
the link datagen prints is the address it listens on."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest

from datagen.config import ClusterConfig
from datagen.runtime.driver import connect, dashboard_link

pytestmark = pytest.mark.cluster


def listening(port: int) -> set[str]:
    """The addresses this process listens on at `port` (the LocalCluster's scheduler, and so
    its dashboard, runs in it)."""
    return {
        c.laddr.ip
        for c in psutil.Process(os.getpid()).net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
    }


def other_address() -> str | None:
    """An IPv4 address of this machine that is not loopback, if it has one."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


def answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
        return True
    return False


def test_the_dashboard_listens_on_loopback_by_default_and_the_link_says_so() -> None:
    config = ClusterConfig(workers=1)
    assert config.dashboard == "127.0.0.1:8787"
    with connect(config) as client:
        link = dashboard_link(client)
        parts = urlsplit(link)
        assert parts.port is not None  # 8787, or a free port when another run holds it
        bound = listening(parts.port)
        outside = other_address()
        reachable_outside = outside is not None and answers(outside, parts.port)
        reachable_here = answers("127.0.0.1", parts.port)
    assert bound == {"127.0.0.1"}, bound  # not 0.0.0.0
    assert parts.hostname == "127.0.0.1" and parts.path == "/status", link
    assert reachable_here and not reachable_outside


def test_an_exposed_dashboard_is_printed_as_exposed() -> None:
    """`0.0.0.0:port` listens on every interface: the link says 0.0.0.0, not 127.0.0.1 (what
    Dask's own link said), so whoever reads it sees that it is open."""
    with connect(ClusterConfig(workers=1, dashboard="0.0.0.0:0")) as client:
        link = dashboard_link(client)
        parts = urlsplit(link)
        assert parts.port is not None
        bound = listening(parts.port)
        dask_link = client.dashboard_link
    assert bound == {"0.0.0.0"} and parts.hostname == "0.0.0.0", (bound, link)
    assert urlsplit(dask_link).hostname == "127.0.0.1"  # why datagen prints its own


def _report_figures(dask_worker: Any) -> None:  # a distributed Worker (run by client.run)
    """On a worker: a meter with known figures, registered as the browser plugin does."""
    from datagen.observe.meter import Meter
    from datagen.runtime.metrics import register

    meter = Meter()
    meter.gauges["browser"] = lambda: {"browser_memory_mb": 100.0}
    meter.gauges["engine"] = lambda: {"engine_in_flight": 2.0, "engine_limit": 8.0}
    meter.add("steps", 7)
    meter.add("reject:timeout_step", 1)
    register(dask_worker, meter)


def test_datagen_figures_are_readable_on_the_dashboard() -> None:
    """Dask's Workers page gets datagen's summable figures under short names; `/datagen` has
    every figure, a total only where one adds up."""
    from distributed.dashboard.components.scheduler import WorkerTable

    from datagen.runtime.dashboard import add_page
    from datagen.runtime.metrics import HEADLINE

    with connect(ClusterConfig(workers=2)) as client:
        client.run(_report_figures)
        assert add_page(client) and add_page(client)  # added once, asked twice
        scheduler = client.cluster.scheduler
        deadline = time.monotonic() + 60  # the next heartbeats carry the figures
        while time.monotonic() < deadline and not all(
            ws.metrics.get("datagen", {}).get("steps") == 7 for ws in scheduler.workers.values()
        ):
            time.sleep(0.2)
        workers_page = WorkerTable(scheduler)
        workers_page.update()
        port = urlsplit(dashboard_link(client)).port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/datagen", timeout=10) as answer:
            html = answer.read().decode()
    ours = [n for n in workers_page.extra_names if n in HEADLINE or "datagen" in n]
    assert sorted(ours) == sorted(HEADLINE)  # short titles; none cut to "datagen_"
    data = workers_page.source.data
    assert data["name"][0] == "Total (2)" and data["browser MB"][0] == 200  # a sum that adds up
    assert "engine_latency_ms" not in str(workers_page.extra_names)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", html)
    cells = [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in rows]
    head, total = cells[0], next(c for c in cells if c[0] == "total")
    figures = dict(zip(head, total, strict=True))
    assert figures["steps"] == "14" and figures["browser MB"] == "200"
    assert figures["in flight"] == "4" and figures["in-flight limit"] == ""
    assert ["timeout_step", "1", "1", "2"] in cells  # rejects by reason, per worker


def _run_figures(dask_worker: Any) -> None:  # a distributed Worker (run by client.run)
    """On a worker: a meter whose figures move as a run's do (steps, memory, rejects), with no
    engine: what a browser-only run (explore) reports."""
    import time as clock

    from datagen.observe.meter import Meter
    from datagen.runtime.metrics import register

    meter, t0 = Meter(window_s=2.0), clock.monotonic()
    meter.totals["run"] = lambda: {
        "steps": (clock.monotonic() - t0) * 5,
        "reject:occluded": float(int(clock.monotonic() - t0)),
    }
    meter.gauges["browser"] = lambda: {
        "browser_memory_mb": 300 + 20 * ((clock.monotonic() - t0) % 5),
        "browser_sessions": 3.0,
    }
    register(dask_worker, meter)


@pytest.mark.browser
def test_the_datagen_page_draws_live_curves_and_no_engine_column_without_an_engine(
    chromium: str,
) -> None:
    """In Chromium, while the figures move: the page's curves (steps/s, sessions, browser
    memory, rejects by reason) grow without a reload, no engine curve or column appears, and the
    tables stay for the exact figures."""
    from playwright.sync_api import sync_playwright

    from datagen.runtime.dashboard import add_page

    with connect(ClusterConfig(workers=1)) as client, sync_playwright() as pw:
        client.run(_run_figures)
        assert add_page(client)
        port = urlsplit(dashboard_link(client)).port
        browser = pw.chromium.launch(executable_path=chromium)
        try:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/datagen")
            page.evaluate("window.samePage = true")  # gone if the page reloaded itself
            count = "n => document.querySelectorAll('svg.chart polyline').length >= n"
            page.wait_for_function(count, arg=4, timeout=30_000)
            points = "() => document.querySelector('svg.chart polyline').points.length"
            before = page.evaluate(points)
            page.wait_for_function(f"() => ({points})() >= {before + 2}", timeout=30_000)
            titles = page.evaluate(
                "() => [...document.querySelectorAll('svg.chart')].map(s => s.dataset.title)"
            )
            headers = page.evaluate(
                "() => [...document.querySelectorAll('#tables th')].map(h => h.textContent)"
            )
            assert page.evaluate("window.samePage") is True  # updated in place, not reloaded
            rows = page.evaluate("+document.body.dataset.updates")
            if os.environ.get("DATAGEN_SHOT_DASHBOARD"):  # docs/img/dashboard.png
                page.set_viewport_size({"width": 1100, "height": 760})
                page.screenshot(path=os.environ["DATAGEN_SHOT_DASHBOARD"])
        finally:
            browser.close()
    assert titles == ["steps/s", "sessions in flight", "browser memory MB", "rejects by reason"]
    assert rows >= 2
    assert "steps" in headers and "browser MB" in headers
    assert not [h for h in headers if "engine" in h or h in ("in flight", "in-flight limit")]
