"""The workers as one run sees them: which started its browser (ready: they advertise the run's
resource, so only they get its shards), which could not and why, which were lost, and which
shards ran more than once.

    plugin events (run topic) ─┐
    scheduler events ("all")  ─┼─► WorkerWatch ─► one log line each; RunSummary fields;
    scheduler_info() polls    ─┘                  WorkersUnavailable when no worker can work

Sources: the run's plugin sends `{"kind": "worker", "state": "ready" | "failed", …}` and
`{"kind": "shard", …}` (a shard's task started) on the run's topic, each with the worker's
name and address (not under "worker": the scheduler writes the sender's address there); the
scheduler's own `remove-worker` event on its "all" topic says a worker left and which tasks it
held; `Client.scheduler_info()` says which workers there are and which advertise the resource.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from typing import Any

from distributed import Client

from datagen.errors import WorkersUnavailable
from datagen.observe.outcome import WorkerReport
from datagen.runtime.plugin import RunNames

log = logging.getLogger(__name__)
POLL_S = 1.0  # how often the scheduler is asked which workers are ready
QUIET_S = 3.0  # workers that just set up advertise a moment later: no "waiting" line for that
SPREAD_WAIT_S = 20.0  # once one worker is ready, how long the first shards wait for the others


class WorkerWatch:
    """Follows the workers for one run. `start()` subscribes to the scheduler's events;
    `on_event` takes the run topic's worker and shard events; `wait_ready()` blocks until a
    worker can take shards; `check()` (called while shards are pending) raises once none could
    for longer than `wait_s`."""

    def __init__(
        self, client: Client, names: RunNames, where: str, wait_s: float, expected: int = 0
    ) -> None:
        self.client, self.names, self.where, self.wait_s = client, names, where, wait_s
        self.expected = expected  # workers there will be (a LocalCluster's); 0: those present
        self.report = WorkerReport()
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}  # address → "ready" | "failed"
        self._labels: dict[str, str] = {}  # address → "name (address)"
        self._starts: Counter[int] = Counter()
        self._ready: set[str] = set()  # addresses advertising the resource, at the last poll
        self._present: set[str] = set()  # addresses of the workers at the last poll
        self._polled = 0.0
        self._none_since: float | None = None  # since when no worker is ready

    def start(self) -> WorkerWatch:
        self.client.subscribe_topic("all", self._scheduler_event)
        return self

    def stop(self) -> None:
        try:
            self.client.unsubscribe_topic("all")
        except Exception:  # the scheduler is gone: nothing left to hear from
            log.debug("unsubscribing from the scheduler's events failed", exc_info=True)

    def catch_up(self) -> None:
        """Events sent before the subscription took effect (a worker that failed at once)."""
        for _, msg in self.client.get_events(self.names.topic):
            if isinstance(msg, dict) and msg.get("kind") == "worker":
                self.on_event(msg)

    def on_event(self, msg: dict[str, Any]) -> bool:
        """A worker or shard event from the run's topic: True when it was one (the rest are
        episodes, for the progress display)."""
        kind = msg.get("kind")
        if kind == "worker":
            self._worker_event(msg)
        elif kind == "shard":
            self._shard_event(msg)
        else:
            return False
        return True

    def _worker_event(self, msg: dict[str, Any]) -> None:
        address, state = str(msg.get("address", "")), str(msg.get("state", ""))
        label = self._label(address, str(msg.get("name", address)))
        with self._lock:
            if self._states.get(address) == state:
                return  # heard twice (subscription and catch-up)
            self._states[address] = state
        if state == "failed":
            why = f"{msg.get('reason', '')}. fix: {msg.get('fix', '')}"
            self.report.failed[label] = why
            log.error("worker %s cannot run this run's shards and takes none: %s", label, why)
        else:
            self.report.failed.pop(label, None)  # restarted (a nanny) and started this time
            log.debug("worker %s is ready", label)

    def _shard_event(self, msg: dict[str, Any]) -> None:
        shard = int(msg.get("shard", -1))
        worker = self._label(str(msg.get("address", "")), str(msg.get("name", "")))
        if msg.get("reused"):
            self.report.reused.append(shard)
            log.warning(
                "shard %d was committed by an earlier run of its task (its worker was lost "
                "before the result was read): not run again",
                shard,
                extra={"shard": shard},
            )
            return
        with self._lock:
            self._starts[shard] += 1
            starts = self._starts[shard]
        if starts > 1:
            self.report.rerun[shard] = starts
            log.warning(
                "shard %d runs again (attempt %d), on worker %s",
                shard,
                starts,
                worker,
                extra={"shard": shard},
            )

    def _scheduler_event(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker":
            return
        address = str(msg.get("worker", ""))
        with self._lock:
            self._ready.discard(address)
        assigned = self._shards(msg.get("processing-tasks"))
        unread = self._shards(msg.get("lost-computed-tasks"))  # done, result not read yet
        label = self._labels.get(address, address)
        if msg.get("expected") and not assigned:
            log.info("worker %s left the cluster", label)
            return
        self.report.lost.append(label)
        said = []
        if assigned:
            said.append(f"{_listed(assigned)} assigned to it go to other workers")
        if unread:
            said.append(
                f"{_listed(unread)} had finished there, unread: run again, they find their "
                "marker and are not recomputed"
            )
        log.warning("worker %s lost: %s", label, "; ".join(said) or "it had none of our shards")

    def _shards(self, keys: Any) -> list[int]:
        """This run's shards among task keys."""
        suffix = f"-{self.names.tag}"
        return sorted(
            int(key.split("-")[1])
            for key in keys or ()
            if isinstance(key, str) and key.startswith("shard-") and key.endswith(suffix)
        )

    def _label(self, address: str, name: str) -> str:
        label = address if not name or name == address else f"{name} ({address})"
        self._labels[address] = label
        return label

    def poll(self, force: bool = False) -> None:
        """Ask the scheduler which workers there are and which advertise the run's resource."""
        now = time.monotonic()
        if not force and now - self._polled < POLL_S:
            return
        self._polled = now
        workers = self.client.scheduler_info().get("workers", {})
        ready = set()
        for address, info in workers.items():
            self._label(address, str(info.get("name", address)))
            if float((info.get("resources") or {}).get(self.names.resource, 0)) >= 1:
                ready.add(address)
        with self._lock:
            self._ready, self._present = ready, set(workers)
        self._none_since = None if ready else (self._none_since or now)

    def wait_joined(self) -> None:
        """Block until a worker has joined; WorkersUnavailable after `wait_s` without one."""
        self.poll(force=True)
        if not self._present:
            log.info("waiting for workers to join %s (up to %gs)", self.where, self.wait_s)
        while not self._present:
            self.check()
            time.sleep(0.2)
            self.poll()

    def wait_ready(self) -> None:
        """Block until some worker can take the run's shards. Raises WorkersUnavailable when
        every worker there has said it cannot, or when none could for `wait_s`."""
        self.poll(force=True)
        said, started = False, time.monotonic()
        while not self._ready:
            failed = self._failed()
            if self._present and self._present <= failed:
                raise self._unavailable()  # each worker there failed: waiting changes nothing
            if not said and time.monotonic() - started > QUIET_S:
                log.info(
                    "waiting for workers: %d joined %s, none has started this run's browser "
                    "yet (waiting up to %gs)",
                    len(self._present),
                    self.where,
                    self.wait_s,
                )
                said = True
            self.check()
            time.sleep(0.2)
            self.poll()
        self._wait_for_the_rest()

    def _wait_for_the_rest(self) -> None:
        """Once one worker is ready, give the others (those there, and those of a LocalCluster
        still joining) up to SPREAD_WAIT_S to be ready or failed. The scheduler hands a task to
        a worker whose resource could ever take it, and that worker holds it until its
        resource frees: shards submitted while one worker alone was ready would all queue
        there, run one after another, and leave the rest idle."""
        deadline = time.monotonic() + SPREAD_WAIT_S
        while time.monotonic() < deadline:
            with self._lock:
                waiting = self._present - self._ready - self._failed()
                missing = self.expected - len(self._present)  # not joined yet
            if not waiting and missing <= 0:
                return
            time.sleep(0.2)
            self.poll()

    def _failed(self) -> set[str]:
        """Addresses of the workers that said they cannot run this run's shards."""
        return {a for a, state in self._states.items() if state == "failed"}

    def check(self) -> None:
        """Raise WorkersUnavailable when no worker could take shards for `wait_s`."""
        self.poll()
        if self._none_since is not None and time.monotonic() - self._none_since > self.wait_s:
            raise self._unavailable()

    def _unavailable(self) -> WorkersUnavailable:
        if not self._present:
            start = (
                f"start workers on machines with Chromium (`dask worker {self.where} --nthreads 1`)"
                if "://" in self.where
                else "see the lines above for why its workers stopped"
            )
            return WorkersUnavailable(
                f"no Dask worker has joined {self.where} for {self.wait_s:g}s",
                fix=f"{start}, or raise cluster.wait_for_workers_s",
            )
        there = len(self._present)
        failed = dict(self.report.failed)
        if failed:
            said = "; ".join(f"worker {w}: {why}" for w, why in failed.items())
            return WorkersUnavailable(
                f"no worker of {self.where} can run this run's shards ({there} there, "
                f"{len(failed)} could not start a browser): {said}"
            )
        return WorkersUnavailable(
            f"no worker of {self.where} has started this run's browser for {self.wait_s:g}s "
            f"({there} there)",
            fix="see the workers' logs (their browser start may hang), or raise "
            "cluster.wait_for_workers_s",
        )


def _listed(shards: list[int]) -> str:
    return f"shard{'s' * (len(shards) > 1)} {', '.join(map(str, shards))}"
