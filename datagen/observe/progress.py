"""The live progress display of `datagen run` (rich), fed by the runtime's events."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from datagen.observe.safe import safe
from datagen.records import Resumed, ShardResult


class RichProgress:
    """Tasks × repeats ended (as episodes or rejects), steps/s, solved, rejects by reason.
    Thread-safe: events arrive on the Dask client's thread.

    Episodes count by id: a shard run again (retried, or its worker lost) reports its episodes
    again, and they replace the first report instead of adding to it (before: 71 of 60)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._lock = threading.Lock()
        self._steps = 0
        self._solved = 0
        self._episodes = 0
        self._rejected = 0
        self._rejects: Counter[str] = Counter()
        self._shards = 0
        self._ended: dict[str, dict[str, Any]] = {}  # episode id → its last event
        self._t0 = time.perf_counter()
        self._progress = Progress(
            TextColumn("[bold]ended"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self._task = self._progress.add_task("run", total=None)
        self._text = Text("starting the cluster and the browsers…")
        self._live = Live(Group(self._progress, self._text), console=console, refresh_per_second=4)

    def __enter__(self) -> RichProgress:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()
        self.console.print()

    def started(self, dashboard: str, episodes: int, resumed: Resumed) -> None:
        if dashboard:
            shown = safe(dashboard, newlines=False)
            link = shown if shown.startswith(("http://", "https://")) and " " not in shown else ""
            self.console.print(f"Dask dashboard: [link={link}]{shown}[/link]" if link else shown)
        if resumed.shards:
            self.console.print(resuming(resumed))
        self._t0 = time.perf_counter()
        self._progress.update(self._task, total=episodes, completed=resumed.ended)
        self._text.plain = "running"

    def episode(self, event: dict[str, Any]) -> None:
        with self._lock:
            key = event.get("episode_id")
            before = self._ended.get(key) if key else None
            if before is not None:
                self._count(before, -1)  # the same episode again: its new outcome replaces it
            else:
                self._progress.update(self._task, advance=1)
            if key:
                self._ended[key] = event
            self._count(event, 1)
            self._text.plain = self._stats()

    def _count(self, event: dict[str, Any], sign: int) -> None:
        self._steps += sign * int(event.get("steps", 0))
        self._solved += sign * int(bool(event.get("solved")))
        self._episodes += sign * int(bool(event.get("episode")))
        self._rejected += sign * int(not event.get("episode"))
        rejects = Counter(event.get("rejects", {}))
        if sign > 0:
            self._rejects.update(rejects)
        else:
            self._rejects.subtract(rejects)
            self._rejects = +self._rejects  # drop the zeros

    @property
    def ended(self) -> int:
        """Episodes ended in this run so far, each once."""
        with self._lock:
            return len(self._ended)

    def shard(self, result: ShardResult) -> None:
        with self._lock:
            self._shards += 1
            self._text.plain = self._stats()

    def _stats(self) -> str:
        rate = self._steps / max(time.perf_counter() - self._t0, 1e-6)
        top = ", ".join(f"{k} {v}" for k, v in self._rejects.most_common(3))
        return (
            f"episodes {self._episodes} · tasks rejected {self._rejected} · steps {self._steps} "
            f"({rate:.1f}/s) · solved {self._solved} · shards {self._shards}"
            # rows of `rejects`: a task's, an episode's, and a grounding element's (occluded)
            + (f" · reject rows: {top}" if top else "")
        )


def resuming(resumed: Resumed) -> str:
    """The line a resumed run starts with: what is already there, episodes and rejects apart."""
    shards = f"{resumed.shards} shard{'s' * (resumed.shards != 1)}"
    return (
        f"resuming: {shards} already committed ({resumed.episodes} episodes, "
        f"{resumed.rejected} ended as rejects), skipped"
    )
