"""`_hosts.json`: the run's hosts as the end of a run left them, per host its figures and its
block (until when, wall clock; the first cause), so a rerun keeps a block in force until its
TTL ends and then runs that host's tasks again.

    runtime/hosts.py (the scheduler's book, at the run's end) ─► write_hosts ─► _hosts.json
    the next run's start ─► read_hosts ─► blocks still in force ─► the book

Written whole each time (one small object). Read with a size bound and its types checked: the
file is a control file of the output, which anyone with access to the folder can edit, and a
wrong one is refused before the run's cluster starts (OutputError, with the fix), not read as
"no blocks" (that would silently send a run back to hosts an earlier run found failing) nor
left to fail deep inside the run. Values are cut to the bounds the book keeps: a cause to
CAUSE_MAX characters, a block's end to a finite number (the book clamps it to `block_ttl_s`).
"""

from __future__ import annotations

import json
import logging
import math
import time
from typing import Any

from datagen.config.hosts import CAUSE_MAX
from datagen.errors import OutputError
from datagen.sink.storage import Storage, control_json, read_small

log = logging.getLogger(__name__)
HOSTS_KEY = "_hosts.json"
HOSTS_VERSION = 1
# A run over 100,000 hosts writes ~40 MB (about 400 bytes of figures a host): 64 MiB is room
# for that and refuses a file made to exhaust the driver's memory.
HOSTS_MAX_BYTES = 64 * 1024 * 1024
HOST_KEY_MAX = 300  # a registrable domain, or host:port (a DNS name is at most 253)
FIX = f"delete {HOSTS_KEY} to forget the recorded blocks (the next run records them anew)"


def write_hosts(storage: Storage, figures: dict[str, dict[str, Any]]) -> None:
    """Record every host's figures and block; earlier blocks still in force are kept."""
    merged = {k: v for k, v in read_hosts(storage).items() if _in_force(v)}
    merged.update(figures)
    doc = {"version": HOSTS_VERSION, "written_at": round(time.time(), 3), "hosts": merged}
    storage.put(HOSTS_KEY, json.dumps(doc, indent=1, sort_keys=True).encode())


def read_hosts(storage: Storage) -> dict[str, dict[str, Any]]:
    """Host → its figures and block, from `_hosts.json` ({} when there is none). OutputError
    when the file is over HOSTS_MAX_BYTES, not JSON, or not of the shape `write_hosts`
    writes; a host's `cause` comes back cut to CAUSE_MAX."""
    if not storage.exists(HOSTS_KEY):
        return {}
    where = f"{storage.uri.rstrip('/')}/{HOSTS_KEY}"
    try:
        doc = control_json(read_small(storage, HOSTS_KEY, HOSTS_MAX_BYTES))
    except (ValueError, OSError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise OutputError(f"{where} is unreadable: {str(exc)[:300]}\n  fix: {FIX}") from None
    return _checked(doc, where)


def _checked(doc: Any, where: str) -> dict[str, dict[str, Any]]:
    """The `hosts` object of a `_hosts.json` document, each entry's types checked."""

    def bad(what: str) -> OutputError:
        return OutputError(f"{where}: {what}; it is not a file datagen wrote\n  fix: {FIX}")

    if not isinstance(doc, dict):
        raise bad(f"the document is a {_kind(doc)}, not an object")
    hosts = doc.get("hosts", {})
    if not isinstance(hosts, dict):
        raise bad(f'"hosts" is a {_kind(hosts)}, not an object of host → figures')
    out: dict[str, dict[str, Any]] = {}
    for key, entry in hosts.items():
        if len(key) > HOST_KEY_MAX:
            raise bad(f'host "{key[:60]}…" is over {HOST_KEY_MAX} characters')
        if not isinstance(entry, dict):
            raise bad(f'"hosts"."{key[:100]}" is a {_kind(entry)}, not an object')
        until = entry.get("blocked_until")
        if until is not None and (
            isinstance(until, bool)
            or not isinstance(until, int | float)
            or not math.isfinite(until)
        ):
            raise bad(
                f'"hosts"."{key[:100]}".blocked_until is {str(until)[:40]!r}: a block ends at a '
                "finite time (seconds since the epoch) or null"
            )
        cause = entry.get("cause")
        if cause is not None and not isinstance(cause, str):
            raise bad(f'"hosts"."{key[:100]}".cause is a {_kind(cause)}, not text')
        out[key] = {**entry, "cause": cause[:CAUSE_MAX]} if cause is not None else dict(entry)
    return out


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def blocks_in_force(storage: Storage) -> dict[str, dict[str, Any]]:
    """The hosts whose recorded block has not ended yet."""
    return {k: v for k, v in read_hosts(storage).items() if _in_force(v)}


def _in_force(host: dict[str, Any]) -> bool:
    try:
        return float(host.get("blocked_until") or 0) > time.time()
    except (TypeError, ValueError):
        return False
