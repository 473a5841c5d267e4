"""The live curves of the `/datagen` dashboard page: a short history of the cluster's totals,
served as JSON and drawn in the page as inline SVG that updates itself.

    GET /datagen/data.json ─► History.sample(figures by worker) ─► {t, series, rejects, tables}
    the page's script      ─► fetch every REFRESH_S ─► SVG polylines + the tables replaced

Dask's own pages (Bokeh) stream their figures into the open page; this page does the same with
less: a few lines of script and SVG, nothing fetched from elsewhere (a dashboard is often seen
through an SSH tunnel, with no internet). The history lives on the scheduler, sampled when the
page asks (at most once a second), so a page opened late still shows the last `KEEP` samples
of whoever watched before; with nobody watching, nothing is sampled.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from datagen.observe.meter import REASONS

KEEP = 900  # samples: 15 minutes at one a second
ENGINE = ("engine_limit", "engine_requests_per_s", "engine_tokens_per_s")
# chart title → the summed figure it draws (engine tokens/s only when there is an engine)
CURVES = {
    "steps/s": "steps_per_s",
    "sessions in flight": "browser_sessions",
    "browser memory MB": "browser_memory_mb",
    "engine tokens/s": "engine_tokens_per_s",
}


def has_engine(workers: Mapping[str, Mapping[str, float]]) -> bool:
    """Does any worker have an engine (a limit on requests in flight) or call one? The meter
    reports engine rates of 0 on a run without one."""
    return any(f.get(k, 0.0) > 0 for f in workers.values() for k in ENGINE)


class History:
    """The cluster's totals over time, at most one sample a second, the last `KEEP` kept."""

    def __init__(self, keep: int = KEEP, every_s: float = 1.0) -> None:
        self.samples: deque[tuple[float, dict[str, float]]] = deque(maxlen=keep)
        self.every_s = every_s
        self.engine = False  # once seen, an engine's curve stays (its rate may fall to 0)

    def sample(self, workers: Mapping[str, Mapping[str, float]], now: float | None = None) -> None:
        """Record the totals of the workers' figures now (unless sampled under a second ago)."""
        now = time.time() if now is None else now
        if not workers or (self.samples and now - self.samples[-1][0] < self.every_s):
            return
        self.engine = self.engine or has_engine(workers)
        keys = [*CURVES.values(), *(f"rejects_{r}" for r in REASONS)]
        totals = {k: sum(f.get(k, 0.0) for f in workers.values()) for k in keys}
        self.samples.append((now, totals))

    def data(self) -> dict[str, Any]:
        """The curves as JSON: seconds from the first sample, each curve's values, and the
        cumulative rejects of each reason that occurred."""
        if not self.samples:
            return {"t": [], "series": {}, "rejects": {}, "engine": self.engine}
        t0 = self.samples[0][0]
        series = {
            title: [s[1].get(key, 0.0) for s in self.samples]
            for title, key in CURVES.items()
            if self.engine or not key.startswith("engine")
        }
        rejects = {
            r: [s[1].get(f"rejects_{r}", 0.0) for s in self.samples]
            for r in REASONS
            if self.samples[-1][1].get(f"rejects_{r}", 0.0)
        }
        return {
            "t": [round(s[0] - t0, 1) for s in self.samples],
            "series": series,
            "rejects": rejects,
            "engine": self.engine,
        }


# The page's script: polls data.json, replaces the tables, redraws each chart as SVG. No
# library: a polyline per curve, the y range from 0 to the curve's largest value.
SCRIPT = """
<script>
(() => {
  const colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const W = 360, H = 150, L = 44, B = 18;
  const fmt = v => Math.abs(v) >= 100 ? Math.round(v).toLocaleString() : (+v.toFixed(2)).toString();
  function chart(title, t, lines) {
    const all = Object.values(lines).flat();
    const top = Math.max(1e-9, ...all), span = Math.max(1, t[t.length - 1] || 0);
    const x = s => L + (W - L - 6) * s / span, y = v => 6 + (H - B - 6) * (1 - v / top);
    let svg = `<svg class="chart" data-title="${title}" width="${W}" height="${H}"
      viewBox="0 0 ${W} ${H}"><rect x="${L}" y="6" width="${W - L - 6}" height="${H - B - 6}"
      fill="#fafafa" stroke="#ccc"/><text x="${L - 4}" y="14" text-anchor="end">${fmt(top)}</text>
      <text x="${L - 4}" y="${H - B}" text-anchor="end">0</text>
      <text x="${W - 6}" y="${H - 4}" text-anchor="end">${fmt(span)} s</text>`;
    let legend = "";
    Object.entries(lines).forEach(([name, values], i) => {
      const c = colours[i % colours.length];
      const points = values.map((v, k) => `${x(t[k]).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
      svg += `<polyline data-name="${name}" fill="none" stroke="${c}" stroke-width="2" points="${points}"/>`;
      legend += `<span style="color:${c}">■</span> ${name} ${fmt(values[values.length - 1])} `;
    });
    return `<div class="curve"><strong>${title}</strong><br>${svg}</svg><br><small>${legend}</small></div>`;
  }
  async function update() {
    try {
      const answer = await fetch(location.pathname.replace(/\\/?$/, "") + "/data.json",
                                 {cache: "no-store"});
      const data = await answer.json();
      let html = "";
      for (const [title, values] of Object.entries(data.series)) {
        html += chart(title, data.t, {[title]: values});
      }
      if (Object.keys(data.rejects).length) html += chart("rejects by reason", data.t, data.rejects);
      document.getElementById("curves").innerHTML = data.t.length ? html : "";
      document.getElementById("tables").innerHTML = data.tables;
      document.body.dataset.updates = (+(document.body.dataset.updates || 0) + 1).toString();
    } catch (e) {
      document.getElementById("curves").dataset.error = String(e);
    }
  }
  update();
  setInterval(update, REFRESH_MS);
})();
</script>"""
