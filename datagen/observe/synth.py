"""The run report's section on synthesised tasks (issue 43), from the committed `tasks` rows.

    committed `tasks` rows, specificity decided run-wide (sink/synthesised.py; runtime/
    report.py reads them) ─► synthesis_html() ─► the report
    the same rows ─► run_counts() ─► the run summary's line (observe/summary.py)

Counts only: kept tasks by effect kind and by site, candidates dropped at each proof step,
kept tasks with a `fail` check, and the writes their demonstrations sent by method. The same
candidates are in the run summary's line; duplicates of a
(start URL, effect) across shards are counted here as kept, as in the table (the task list of
`datagen export OUT -f tasks` keeps one of each).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from datagen.records.taskrow import DROPS
from datagen.sink.storage import open_storage
from datagen.sink.synthesised import chosen, synthesised

log = logging.getLogger(__name__)


def run_counts(uri: str, endpoint_url: str | None = None) -> tuple[int, dict[str, int], int] | None:
    """The output's synthesised tasks kept, those dropped by proof step, specificity decided
    over the whole run (sink/synthesised.py), and the tasks the task list gives of the kept
    (`chosen`: one per start URL and effect, instruction, demonstration); None when they
    cannot be read (the summary then says what the shards proved, the reason logged) or hold
    none."""
    try:
        rows = synthesised(open_storage(uri, endpoint_url))
    except Exception:
        log.info("no run-wide synthesis counts", exc_info=True)
        return None
    if not rows:
        return None
    dropped = Counter(str(r["dropped_at"]) for r in rows if not r["kept"])
    return sum(1 for r in rows if r["kept"]), dict(dropped), len(chosen(rows))


def _table(title: str, counts: Mapping[str, int]) -> str:
    rows = "".join(
        f"<tr><td>{escape(str(k) or '(none)')}</td><td>{n}</td></tr>"
        for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    )
    return f"<table border=1><tr><th>{escape(title)}</th><th>tasks</th></tr>{rows}</table>"


def synthesis_html(rows: Iterable[Mapping[str, Any]]) -> str:
    """The section's HTML ("" when the run synthesised nothing). Every value from the pages
    (sites, paths) is escaped."""
    rows = list(rows)
    if not rows:
        return ""
    kept = [r for r in rows if r.get("kept")]
    dropped = Counter(r.get("dropped_at") or "" for r in rows if not r.get("kept"))
    writes = Counter(w.split(" ")[1] for r in kept for w in r.get("writes") or [] if " " in w)
    failing = sum(1 for r in kept if r.get("fail_json"))
    steps = ", ".join(f"{k} {dropped.get(k, 0)}" for k in DROPS)
    said = ", ".join(f"{escape(m)} {n}" for m, n in sorted(writes.items())) or "none"
    return (
        "<h2>synthesised tasks (annotation.tasks)</h2>"
        f"<p>{len(kept)} kept of {len(rows)} candidates; dropped by proof step: {steps}. "
        f"{failing} kept with a <code>fail</code> check; writes their demonstrations sent: "
        f"{said}. The task list: <code>datagen export OUT -f tasks</code> (one per start URL "
        "and effect).</p>"
        + _table("effect kind", Counter(str(r.get("effect_kind")) for r in kept))
        + _table("site", Counter(str(r.get("site") or "") for r in kept))
    )
