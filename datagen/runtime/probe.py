"""Before any browser starts: does every worker reach the output the driver claimed?

    driver._execute ─► check_output_reach(client, output) ─► None, or a ConfigError naming
                       the workers that do not see it (or may not write it) and the fix

The driver writes a probe object into the output, every worker reads it and writes one of
its own beside it (`sink.probe`), through `client.run`; then the probes are removed. Workers
that join the cluster after this are not probed.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from typing import Any

from distributed import Client

from datagen.config import OutputConfig
from datagen.errors import ConfigError
from datagen.sink.probe import (
    MISSING,
    NO_BUCKET,
    UNREACHABLE,
    UNREADABLE,
    UNWRITABLE,
    Probe,
    Seen,
    look,
    place,
    probe_storage,
    remove,
)

log = logging.getLogger(__name__)
SHOWN = 5  # workers named in the error; the rest are counted
ORDER = (MISSING, NO_BUCKET, UNREACHABLE, UNREADABLE, UNWRITABLE)  # what explains most, first


def check_output_reach(client: Client, output: OutputConfig) -> None:
    """Raise a ConfigError unless every worker of the cluster sees the driver's probe in the
    output and may write there. Call it once workers have joined: it checks those there."""
    if not client.scheduler_info(n_workers=-1).get("workers"):
        return  # nothing to check yet (the driver waits for workers first)
    storage = probe_storage(output)
    probe = place(storage)
    seen: dict[str, Seen] = {}
    try:
        seen = client.run(_look, output, probe)
    finally:
        remove(storage, [probe.key, *(s.key for s in seen.values() if s.key)])
    names = _names(client)
    failed: defaultdict[str, list[str]] = defaultdict(list)
    for address, found in sorted(seen.items()):
        if found.kind:
            failed[found.kind].append(names.get(address, address))
    for kind in ORDER:
        if kind in failed:
            sample = next(s for s in seen.values() if s.kind == kind)
            raise _error(output, kind, failed[kind], len(seen), sample)
    log.info("output %s reached from %d workers", output.uri, len(seen))


def _look(output: OutputConfig, probe: Probe, dask_worker: Any = None) -> Seen:
    """Runs on each worker (client.run gives it the worker)."""
    me = re.sub(r"[^A-Za-z0-9-]", "-", str(getattr(dask_worker, "id", "worker")))
    return look(output, probe, me)


def _names(client: Client) -> dict[str, str]:
    """Worker address → how the error names it: its name and address, or the address."""
    out = {}
    for address, info in client.scheduler_info(n_workers=-1).get("workers", {}).items():
        name = str(info.get("name", address))
        out[address] = address if name == address else f"{name} ({address})"
    return out


def _who(workers: list[str], total: int) -> str:
    shown = ", ".join(workers[:SHOWN]) + (", …" if len(workers) > SHOWN else "")
    if len(workers) == 1:
        return f"worker {shown}"
    return f"{len(workers)} of {total} workers: {shown}"


def _error(
    output: OutputConfig, kind: str, workers: list[str], total: int, seen: Seen
) -> ConfigError:
    uri, who = output.uri, _who(workers, total)
    if not uri.startswith("s3://"):
        if kind == MISSING:
            return ConfigError(
                f"{uri} is not visible from {who} (a folder on the driver's machine only)",
                path="output.uri",
                fix="use s3://bucket/prefix, or a folder on a filesystem every worker mounts at "
                "the same path",
            )
        verb = "write" if kind == UNWRITABLE else "read"
        return ConfigError(
            f"{who} cannot {verb} {uri} ({seen.detail})",
            path="output.uri",
            fix="let the workers' user read and write that folder (the same user, or a shared "
            "group with umask 002), or use s3://bucket/prefix",
        )
    where = f" at {seen.endpoint}" if seen.endpoint else ""
    if kind == NO_BUCKET:
        bucket = uri.removeprefix("s3://").split("/", 1)[0]
        return ConfigError(
            f"bucket {bucket!r} does not exist{where} as {who} sees it ({seen.detail})",
            path="output.uri",
            fix="create the bucket, or give every worker the endpoint this machine uses (set "
            "output.endpoint_url)",
        )
    if kind == UNREACHABLE:
        return ConfigError(
            f"{who} cannot reach the S3 endpoint{where.replace(' at', '')} ({seen.detail})",
            path="output.uri",
            fix="set output.endpoint_url to an endpoint every worker reaches, or give the "
            "workers the network and AWS_ENDPOINT_URL_S3 this machine has",
        )
    if kind == MISSING:
        return ConfigError(
            f"{uri}{where} as {who} sees it does not hold the object this machine just wrote "
            "there: another S3 store or account",
            path="output.uri",
            fix="set output.endpoint_url, or give every worker the S3 endpoint and credentials "
            "this machine uses",
        )
    verb = "write" if kind == UNWRITABLE else "read"
    return ConfigError(
        f"{who} cannot {verb} {uri} with its credentials ({seen.detail})",
        path="output.uri",
        fix="give the workers' credentials s3:GetObject and s3:PutObject on the prefix",
    )
