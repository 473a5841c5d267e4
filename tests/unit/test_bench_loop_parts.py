"""bench/browser_loop.py --variants: processes classified by Chromium's --type, and its arguments."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from bench.browser_loop import VARIANTS, cpu_by_type, parse_args

BUSY = "import sys, time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass\ntime.sleep(30)"


def test_children_are_counted_by_their_type() -> None:
    """Three children of this process, as Chromium names its processes: each one's CPU lands
    under its kind (the network service by its utility sub-type; no --type: the browser)."""
    args = [
        ["--type=renderer"],
        ["--type=utility", "--utility-sub-type=network.mojom.NetworkService"],
        [],
    ]
    children = [subprocess.Popen([sys.executable, "-c", BUSY, *a]) for a in args]
    try:
        by_type = _wait_for_cpu(psutil.Process())
    finally:
        for child in children:
            child.kill()
            child.wait()
    assert set(by_type) == {"renderer", "NetworkService", "browser"}
    assert all(seconds >= 0.15 for seconds in by_type.values()), by_type


def _wait_for_cpu(me: psutil.Process) -> dict[str, float]:
    """Once each child has spent its CPU (at most 30 s: a loaded machine)."""
    for _ in range(300):
        by_type = cpu_by_type(me)
        if len(by_type) == 3 and all(s >= 0.15 for s in by_type.values()):
            return by_type
        time.sleep(0.1)
    return cpu_by_type(me)


def test_variants_named_or_all_and_bad_counts_refused() -> None:
    assert parse_args([]).variants == []
    assert parse_args(["--variants", "all"]).variants == list(VARIANTS)
    assert parse_args(["--variants", "record"]).variants == ["record"]
    with pytest.raises(SystemExit):
        parse_args(["--rounds", "0"])
    with pytest.raises(SystemExit):
        parse_args(["--variants", "no-such-part"])
