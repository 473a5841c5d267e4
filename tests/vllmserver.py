"""A real vLLM on the CPU for the `vllm`-marked tests: scripts/vllm-cpu.sh serving its tiny
Qwen2-VL (randomly initialised, steered to answer short valid JSON) on a free loopback port.

`DATAGEN_VLLM_URL=http://127.0.0.1:PORT` uses a server already running instead (the same
script, started by hand), and then nothing is started or stopped here. Without an install
(`scripts/vllm-cpu.sh --install-only`, ~5 min, 4.3 GB) the tests skip with one line saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "vllm-cpu.sh"
SERVED = "tiny-qwen2-vl"
START_TIMEOUT_S = 600  # measured ~30 s to /health on an idle machine, minutes under load


@dataclass
class RealVllm:
    url: str
    log: Path | None


def installed() -> str | None:
    """None when the CPU vLLM is installed, else why the real-server tests skip."""
    if os.environ.get("DATAGEN_VLLM_URL"):
        return None
    check = subprocess.run(["bash", str(SCRIPT), "--check"], capture_output=True, cwd=ROOT)
    if check.returncode != 0:
        return "no CPU vLLM: run scripts/vllm-cpu.sh --install-only (CI's slow step does)"
    return None


def wait_healthy(url: str, process: subprocess.Popen[bytes] | None, log: Path | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log else ""
            pytest.fail(f"vLLM exited with {process.returncode} before it was ready:\n{tail}")
        try:
            if httpx.get(url + "/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    pytest.fail(f"vLLM at {url} not healthy after {START_TIMEOUT_S} s")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(tmp: Path, *extra: str) -> Iterator[RealVllm]:
    """Serve (or reuse DATAGEN_VLLM_URL's server when no extra flags are asked for)."""
    reason = installed()
    if reason:
        pytest.skip(reason)
    given = os.environ.get("DATAGEN_VLLM_URL")
    if given and not extra:
        wait_healthy(given.rstrip("/"), None, None)
        yield RealVllm(given.rstrip("/"), None)
        return
    port = free_port()
    log = tmp / f"vllm-{port}.log"
    env = {**os.environ, "VLLM_EXTRA_ARGS": " ".join(extra)}
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["bash", str(SCRIPT), str(port)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own group: stopping it stops the engine core too
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, log)
        yield RealVllm(url, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
