"""Who works on an output right now: a lease per live run, a lease per shard being computed.
Two runs of the same pipeline on one output (started twice, or on two machines) share it: a
shard leased by one is skipped by the other, which waits for it and takes it over if its
holder stops. A killed write's leftovers are swept when a run starts.

    _claims/run-<token>.json        one per live run, rewritten every RENEW_S: its modification
                                    time (the store's clock) is the run's heartbeat
    _claims/shard-<n>.g<gen>.json   created exclusively (Storage.put_new), names its run;
                                    removed by that run when the shard has ended

A shard lease counts while its run's lease does: renewed within TTL_S and, for a run on this
machine, its process still alive (so a killed run's shards are free at once, not TTL_S later).
A lease that does not count is taken over by creating generation gen+1, again exclusively: of
two runs taking over one shard one wins, and no lease is ever deleted by anyone but its holder.
A shard whose marker appears while it is being taken is let go at once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields

import psutil

from datagen.sink.listing import ObjectStat
from datagen.sink.models import ShardClaim
from datagen.sink.storage import Storage, control_json, read_small
from datagen.sink.writer import completed_shards

log = logging.getLogger(__name__)

CLAIMS = "_claims"
TTL_S = 300.0  # a run on another machine that stopped renewing is taken over after this long
RENEW_S = 30.0  # heartbeat: leaves TTL_S for a slow store and clock skew between machines
POLL_S = 2.0  # how often a waiting run looks at the other run's shards
TEMP_AGE_S = 600.0  # a temp file this old is no write in progress (a put takes seconds)
RUN_NAME = re.compile(rf"^{CLAIMS}/run-([0-9a-f]+)\.json$")
SHARD_NAME = re.compile(rf"^{CLAIMS}/shard-(\d+)\.g(\d+)\.json$")
PARALLEL = 8  # concurrent PUTs/GETs of small lease objects (S3 latency bound)
MAX_CLAIM_BYTES = 64 << 10  # a lease is a token, a host name and two numbers: read no more


def shard_lease_key(shard: int, gen: int) -> str:
    return f"{CLAIMS}/shard-{shard:05d}.g{gen:04d}.json"


def _process_started(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.NoSuchProcess:
        return 0.0


@dataclass(frozen=True)
class Holder:
    """A run holding leases: where it runs, so that a dead one is recognised."""

    token: str
    run_id: str
    host: str
    pid: int
    process_started: float  # with the pid: a pid reused by another process is not the run

    def alive(self) -> bool:
        """False only when it is on this machine and its process is gone."""
        if self.host != socket.gethostname():
            return True  # only its heartbeat can tell
        try:
            process = psutil.Process(self.pid)
            same = abs(process.create_time() - self.process_started) < 0.5
            return same and bool(process.status() != psutil.STATUS_ZOMBIE)  # zombie: killed
        except psutil.NoSuchProcess:
            return False
        except psutil.Error:  # not ours to look at: assume it lives
            return True

    def __str__(self) -> str:
        return f"{self.host} pid {self.pid}"


@dataclass(frozen=True)
class _Lease:
    shard: int
    gen: int
    key: str
    version: tuple[str, float]  # key and modification time: a released key may be created again


class ShardLeases:
    """This run's leases on an output; `with` it around everything the run does there."""

    def __init__(
        self,
        storage: Storage,
        run_id: str,
        ttl_s: float = TTL_S,
        renew_s: float = RENEW_S,
        poll_s: float = POLL_S,
    ) -> None:
        self.storage, self.ttl_s, self.renew_s, self.poll_s = storage, ttl_s, renew_s, poll_s
        self.token = uuid.uuid4().hex
        pid = os.getpid()
        self.me = Holder(self.token, run_id, socket.gethostname(), pid, _process_started(pid))
        self.held: dict[int, str] = {}  # shard → its lease key
        self._lease_tokens: dict[tuple[str, float], str] = {}  # a lease version → its run's token
        self._holders: dict[str, Holder] = {}  # token → holder
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def run_key(self) -> str:
        return f"{CLAIMS}/run-{self.token}.json"

    def __enter__(self) -> ShardLeases:
        self._renew()
        self._thread = threading.Thread(target=self._heartbeat, name="datagen-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for shard in list(self.held):
            try:
                self.release(shard)
            except Exception:
                log.warning("lease of shard %d not removed", shard, exc_info=True)
        try:
            self.storage.delete(self.run_key)
        except Exception:
            log.warning("this run's lease %s not removed", self.run_key, exc_info=True)

    def _renew(self) -> None:
        self.storage.put(self.run_key, json.dumps(asdict(self.me)).encode())

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.renew_s):
            try:
                self._renew()
            except Exception:  # a store hiccup: the next beat tries again, TTL_S allows for it
                log.warning("this run's lease %s not renewed", self.run_key, exc_info=True)

    def take(self, shards: Iterable[int]) -> list[int]:
        """Lease those of `shards` that no live run holds and that are not committed; returns
        the shards newly leased."""
        wanted = [s for s in shards if s not in self.held]
        newest, live = self._state()
        tries: dict[str, int] = {}
        found: list[tuple[int, str]] = []
        for shard in wanted:
            lease = newest.get(shard)
            holder = self._holder(lease, live) if lease is not None else None
            if lease is not None and holder is self.me:
                found.append((shard, lease.key))  # ours: a PUT that landed, its answer lost
            elif holder is None:  # free, or its run is gone
                tries[shard_lease_key(shard, lease.gen + 1 if lease else 0)] = shard
        body = json.dumps(ShardClaim(token=self.token, taken_at=time.time()).model_dump()).encode()
        with ThreadPoolExecutor(PARALLEL) as pool:
            won = list(pool.map(lambda key: self.storage.put_new(key, body), tries))
        found += [(shard, key) for (key, shard), ok in zip(tries.items(), won, strict=True) if ok]
        taken = []
        for shard, key in found:
            self.held[shard] = key
            taken.append(shard)
        for shard in completed_shards(self.storage) & set(taken):
            self.release(shard)  # committed by its last holder since the listing
            taken.remove(shard)
        return sorted(taken)

    def release(self, shard: int) -> None:
        """Let go of a shard (committed, or failed for good)."""
        key = self.held.pop(shard, None)
        if key is not None:
            self.storage.delete(key)

    def wait(self, shards: Iterable[int]) -> list[int]:
        """Block until each of `shards` is committed or free of live leases; lease the free
        ones and return them (empty once all are committed). Shards this run holds are not
        waited for."""
        remaining = set(shards) - set(self.held)
        while True:
            remaining -= completed_shards(self.storage)
            if not remaining:
                return []
            taken = self.take(sorted(remaining))
            if taken:
                return taken
            time.sleep(self.poll_s)

    def others(self) -> list[Holder]:
        """The other live runs on this output."""
        _, live = self._state()
        return [h for token, h in live.items() if token != self.token]

    def busy(self) -> set[int]:
        """Shards a live other run holds: their uncommitted parts are being written."""
        newest, live = self._state()
        return {
            s
            for s, lease in newest.items()
            if (h := self._holder(lease, live)) is not None and h.token != self.token
        }

    def sweep(self) -> list[str]:
        """Remove leftovers of killed runs: temp files / unfinished uploads (all of them when
        no other run is live here, else only those older than TEMP_AGE_S: a live run may be
        writing the younger ones) and the leases of runs that are gone."""
        listing = self.storage.stat(CLAIMS)
        live = self._live_runs(listing)
        removed = self.storage.remove_temp(0 if set(live) == {self.token} else TEMP_AGE_S)
        for key in listing:
            match = RUN_NAME.match(key)
            if match and match.group(1) not in live:
                self.storage.delete(key)
                removed.append(key)
        return removed

    def _state(self) -> tuple[dict[int, _Lease], dict[str, Holder]]:
        """The newest lease of each shard and the live runs, from one listing of `_claims/`."""
        listing = self.storage.stat(CLAIMS)
        newest: dict[int, _Lease] = {}
        for key, stat in listing.items():
            match = SHARD_NAME.match(key)
            if match:
                shard, gen = int(match.group(1)), int(match.group(2))
                if shard not in newest or gen > newest[shard].gen:
                    newest[shard] = _Lease(shard, gen, key, (key, stat.modified))
        unknown = [lease for lease in newest.values() if lease.version not in self._lease_tokens]
        with ThreadPoolExecutor(PARALLEL) as pool:
            for lease, token in zip(
                unknown, pool.map(lambda x: self._read_token(x.key), unknown), strict=True
            ):
                if token is not None:  # unreadable now (removed?): looked at again next time
                    self._lease_tokens[lease.version] = token
        return newest, self._live_runs(listing)

    def _live_runs(self, listing: dict[str, ObjectStat]) -> dict[str, Holder]:
        live = {self.token: self.me}
        now = time.time()
        for key, stat in listing.items():
            match = RUN_NAME.match(key)
            # a heartbeat's age within ±TTL_S: one from further ahead than any clock skew (a
            # file touched to year 3000) is no heartbeat, or that run would never end
            if not match or match.group(1) == self.token or abs(now - stat.modified) > self.ttl_s:
                continue
            token = match.group(1)
            holder = self._holders.get(token) or self._read_holder(key)
            if holder is not None:
                self._holders[token] = holder
            if holder is not None and holder.alive():
                live[token] = holder
        return live

    def _holder(self, lease: _Lease, live: dict[str, Holder]) -> Holder | None:
        token = self._lease_tokens.get(lease.version)
        return live.get(token) if token else None

    def _read_token(self, key: str) -> str | None:
        try:
            return ShardClaim.model_validate_json(
                read_small(self.storage, key, MAX_CLAIM_BYTES)
            ).token
        except Exception:  # removed since the listing, or not ours: it holds nothing
            return None

    def _read_holder(self, key: str) -> Holder | None:
        try:
            return parse_holder(read_small(self.storage, key, MAX_CLAIM_BYTES))
        except Exception:  # removed since the listing, or unreadable: no live run
            return None


def parse_holder(raw: bytes) -> Holder:
    """A run lease's body, its types checked (a `pid` of "abc" would fail later, in `alive`,
    outside any guard); ValueError when it is not one `ShardLeases` writes. Keys it does not
    know are left out (another version's lease still names a live run: see `models`)."""
    data = control_json(raw)
    names = [f.name for f in fields(Holder)]
    if not isinstance(data, dict) or not set(names) <= set(data):
        raise ValueError("not a run lease's fields")
    data = {name: data[name] for name in names}
    pid, started = data["pid"], data["process_started"]
    strings = all(
        isinstance(data[k], str) and len(data[k]) <= 256 for k in ("token", "run_id", "host")
    )
    if not strings or type(pid) is not int or not 0 < pid < 1 << 32:
        raise ValueError("a run lease's token, run_id, host or pid of the wrong type")
    if type(started) not in (int, float) or not 0 <= started < math.inf:
        raise ValueError(f"process_started is {started!r}")
    return Holder(**data)
