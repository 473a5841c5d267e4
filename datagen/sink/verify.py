"""Integrity of an output: is what the markers commit what is stored?

    _markers/*.json + one listing per table ─► verify_output(full) ─► Report
    Report ─► distrust()  ─► the failing shards' markers removed: readers stop trusting them,
                             and the run that called it redoes those shards

A marker records each part's key, rows, bytes and sha256 (`writer.write_shard`). Checked here:
the marker is JSON of that shape; each part exists as a regular file inside the output
(`missing`: a symlink, a FIFO or a device is no part); its size is the recorded one
(`truncated`, `size mismatch`); and with `full`, its sha256 too (`swapped`: it holds another
committed part's bytes; `altered`: any other change), and what a reader checks before decoding
(`malformed`: the committed bytes, but not the table's schema or out of a row group's bounds:
`sink.checked`). Sizes come from listings (no downloads),
so the check every rerun makes is cheap; `full` reads every part.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from datagen.errors import OutputError
from datagen.sink.checked import check_part, part_chunks
from datagen.sink.listing import ObjectStat
from datagen.sink.models import Marker, PartFile
from datagen.sink.schema import TABLES
from datagen.sink.storage import Storage
from datagen.sink.writer import RUN_FILE, marker_key, marker_keys, part_key, read_marker

READERS = 8  # parallel GETs: S3 latency, not bandwidth, bounds a serial read of many objects


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a committed shard."""

    shard: int
    kind: str  # unreadable marker | missing | unreadable | malformed | truncated | size mismatch | swapped | altered
    key: str  # the marker's or the part's
    detail: str

    def __str__(self) -> str:
        return f"{self.key}: {self.kind}: {self.detail}"


@dataclass
class Report:
    """What `verify_output` found."""

    full: bool  # sha256 checked, not only sizes
    shards: int = 0  # markers found
    parts: int = 0  # parts the readable markers commit
    hashed_bytes: int = 0
    seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)
    markers: dict[int, str] = field(default_factory=dict)  # shard → its marker's key
    uncommitted: list[str] = field(default_factory=list)  # parts no readable marker commits

    @property
    def ok(self) -> bool:
        return not self.problems

    def by_shard(self) -> dict[int, list[Problem]]:
        out: dict[int, list[Problem]] = {}
        for problem in self.problems:
            out.setdefault(problem.shard, []).append(problem)
        return dict(sorted(out.items()))

    def lines(self) -> Iterator[str]:
        """What `datagen verify` prints: one line per problem, notes, then the verdict."""
        for shard, problems in self.by_shard().items():
            for problem in problems:
                yield f"shard {shard}: {problem}"
        if self.uncommitted:
            shown = ", ".join(self.uncommitted[:5]) + (", …" if len(self.uncommitted) > 5 else "")
            yield (
                f"note: {len(self.uncommitted)} part{'s' * (len(self.uncommitted) != 1)} not "
                f"committed by any marker ({shown}): a shard not finished or not trusted; no "
                "reader sees them, a rerun rewrites them"
            )
        checked = "sha256" if self.full else "sizes only"
        if self.ok:
            yield f"ok: {self.shards} shards, {self.parts} parts verified ({checked}, {self.seconds:.2f} s)"
        else:
            bad = len(self.by_shard())
            yield (
                f"FAILED: {len(self.problems)} problem{'s' * (len(self.problems) != 1)} in {bad} "
                f"of {self.shards} shards ({checked}); a rerun of the pipeline"
                f"{'' if self.full else ' (with --verify for sha256)'} redoes them"
            )


def verify_output(storage: Storage, full: bool = True) -> Report:
    """Check every marker and every part it commits (see the module docstring)."""
    started = time.perf_counter()
    report = Report(full=full)
    keys = marker_keys(storage)
    if not keys and not storage.exists(RUN_FILE):
        raise OutputError(f"{storage.uri} holds no datagen output (no {RUN_FILE}, no markers)")
    report.shards, report.markers = len(keys), keys
    markers: dict[int, Marker] = {}
    with ThreadPoolExecutor(READERS) as pool:
        for (shard, key), outcome in zip(
            keys.items(), pool.map(lambda k: _read_marker(storage, *k), keys.items()), strict=True
        ):
            if isinstance(outcome, str):
                report.problems.append(Problem(shard, "unreadable marker", key, outcome))
            else:
                markers[shard] = outcome
        # Listed after the markers were read: a marker written meanwhile has its parts in place
        # already (markers come last), so no part of a marker read above is missed.
        listing: dict[str, ObjectStat] = {}
        for table in TABLES:
            listing.update(storage.stat(table))
        files = [(shard, f) for shard, m in markers.items() for f in m.files]
        report.parts = len(files)
        digests: dict[str, str] = {}
        if full:
            # Sizes first, from the listing: a part is read (hashed) only when its size is
            # that of a committed part, its own (same size: altered?) or another's (swapped?).
            # Any other size is a problem the listing shows alone, and a 3 GB file there is
            # never read.
            sizes = {f.bytes for _, f in files}
            wanted = [f for _, f in files if f.key in listing and listing[f.key].size in sizes]
            hashed = pool.map(lambda f: _sha256(storage, f, listing[f.key].size), wanted)
            digests = {f.key: digest for f, digest in zip(wanted, hashed, strict=True)}
            report.hashed_bytes = sum(listing[f.key].size for f in wanted)
    recorded = {f.sha256: (shard, f.table) for shard, f in files}
    for shard, f in files:
        problem = _check(shard, f, listing.get(f.key), digests.get(f.key), recorded)
        if problem is not None:
            report.problems.append(problem)
    # parts of a shard whose marker is unreadable are reported with it, not again here
    vouched = {part_key(t, shard) for shard in keys for t in TABLES}
    vouched |= {f.key for _, f in files}
    report.uncommitted = sorted(k for k in listing if k.endswith(".parquet") and k not in vouched)
    report.seconds = time.perf_counter() - started
    return report


def _read_marker(storage: Storage, shard: int, key: str) -> Marker | str:
    """The marker, or why it cannot be trusted."""
    try:
        if key != marker_key(shard):  # listed under another spelling (shard-7.json)
            return f"not the marker key of shard {shard} ({marker_key(shard)})"
        return read_marker(storage, shard)
    except Exception as exc:  # a parse error, or the object went away / cannot be read
        return str(exc) or type(exc).__name__


def _sha256(storage: Storage, part: PartFile, size: int) -> str:
    """The part's sha256, streamed through the checked reader (a regular file inside the
    output, at most the `size` its listing gave), READERS parts at once. When it is the size
    its marker records (it may be the committed bytes), those bytes are kept, once, for what
    a reader checks before decoding (schema, row groups' bounds), so that `--verify` redoes a
    part the marker vouches for but no reader would take. "unreadable: …" or "malformed: …"
    instead of a digest when it fails."""
    digest = hashlib.sha256()
    kept: bytearray | None = bytearray() if size == part.bytes else None
    try:
        for chunk in part_chunks(storage, part.key, size):
            digest.update(chunk)
            if kept is not None:
                kept += chunk
    except Exception as exc:  # removed since the listing, or unreadable
        return f"unreadable: {type(exc).__name__}: {exc}"
    if kept is None or digest.hexdigest() != part.sha256:
        return digest.hexdigest()  # not the committed bytes: what a reader checks is moot
    try:
        check_part(kept, part.table)
    except ValueError as exc:
        return f"malformed: {digest.hexdigest()} {exc}"
    return digest.hexdigest()


def _check(
    shard: int,
    f: PartFile,
    stat: ObjectStat | None,
    digest: str | None,
    recorded: dict[str, tuple[int, str]],
) -> Problem | None:
    key, size = f.key, f.bytes
    if stat is None:
        return Problem(shard, "missing", key, f"not in the output (the marker says {size} bytes)")
    if digest is not None and digest.startswith("unreadable: "):
        return Problem(shard, "unreadable", key, digest.removeprefix("unreadable: "))
    if digest is not None and digest.startswith("malformed: "):
        digest, _, why = digest.removeprefix("malformed: ").partition(" ")
        if digest == f.sha256:  # the committed bytes, but no reader takes them
            return Problem(shard, "malformed", key, why)
    if digest == f.sha256:
        return None
    owner = recorded.get(digest or "")
    if owner is not None:
        return Problem(shard, "swapped", key, f"holds shard {owner[0]}'s {owner[1]} part")
    if stat.size < size:
        return Problem(shard, "truncated", key, f"{stat.size} of {size} bytes")
    if stat.size > size:
        return Problem(shard, "size mismatch", key, f"{stat.size} bytes, the marker says {size}")
    if digest is None:  # sizes only: nothing more to say
        return None
    return Problem(
        shard,
        "altered",
        key,
        f"sha256 {digest[:12]}…, the marker says {f.sha256[:12]}… (same size)",
    )


def distrust(storage: Storage, report: Report) -> dict[int, str]:
    """Remove the markers of the shards that failed: they count as not committed from now on
    (readers skip them, `finalize` drops their parts, a run redoes them). Shard → why."""
    reasons = {}
    for shard, problems in report.by_shard().items():
        storage.delete(report.markers[shard])
        reasons[shard] = "; ".join(str(p) for p in problems)
    return reasons
