"""Engine utilisation: how close does datagen's engine client get to what the engine can do?

For each scenario the stand-in runs in its own process (`datagen engine sim`) at capacity C
(`--max-num-seqs`), and N client sessions send navigation-shaped requests back to back through
`EngineClient` (one 1280×800 JPEG screenshot, the profile's prompt and JSON schema). Printed:

- completed requests/s, sustained (middle of the run),
- the theoretical maximum for the same request shape: the stand-in's engine model with a
  queue that never runs dry (`saturated_rate`, virtual clock),
- utilisation = sustained / maximum,
- client CPU per completed request (this process only: the stand-in is elsewhere).

By default the client's in-flight controller (`datagen.engine.control`) decides how many of the
sessions' requests reach the engine, as in a pipeline run; `--static` sends them all.

    python bench/engine_util.py                  # 100 and 1000 sessions, ~1 minute
    python bench/engine_util.py --sessions 100 --seconds 20 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import httpx
from PIL import Image

from datagen.config import SimConfig
from datagen.engine.client import EngineClient
from datagen.engine.control import InFlightController
from datagen.engine.profiles import PROFILES, encode_screenshot
from datagen.engine.sim.engine import saturated_rate
from datagen.engine.sim.server import free_port


@dataclass
class Result:
    sessions: int
    capacity: int
    speed_factor: float
    completed: int
    sustained_rps: float
    theoretical_rps: float
    utilisation: float
    client_cpu_ms_per_request: float
    mean_prompt_tokens: float
    mean_completion_tokens: float
    errors: int


def payload(schema: bool = True) -> dict[str, object]:
    """A navigation request as the vlm policy sends it (a synthetic page as the screenshot);
    without `schema`, the stand-in answers its configured `text_reply`."""
    image = Image.new("RGB", (1280, 800), "white")
    for x in range(0, 1280, 160):
        image.paste((40 + x % 200, 90, 160), (x + 10, 100, x + 140, 140))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=80)
    sent = encode_screenshot(out.getvalue(), "jpeg", 1280, 800, 1280)
    profile = PROFILES["holo2_norm1000"]
    messages = profile.navigation_messages(
        "Add a yoga mat to the cart and check out.", 0, "", [], [sent]
    )
    body: dict[str, object] = {"messages": messages, "temperature": 0.7, "max_tokens": 512}
    if schema:
        body["structured_outputs"] = {"json": profile.navigation_schema(sent)}
    return body


def start_sim(capacity: int, speed: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "datagen",
        "engine",
        "sim",
        "--port",
        str(port),
        "--max-num-seqs",
        str(capacity),
        "--speed-factor",
        str(speed),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


async def drive(
    url: str, sessions: int, seconds: float, adaptive: bool = True
) -> tuple[list[tuple[float, int]], float, EngineClient]:
    """`sessions` loops sending back to back; samples (time, completed) every 0.5 s. With
    `adaptive`, the pipeline's in-flight controller steers how many of them reach the engine."""
    body = payload()
    client = EngineClient(url, max_in_flight=sessions, timeout_s=600, retries=2)
    await client.wait_ready(30)
    stop = time.monotonic() + seconds
    samples: list[tuple[float, int]] = []
    control = (
        asyncio.create_task(client.control(InFlightController(sessions), interval_s=0.5))
        if adaptive
        else None
    )

    async def session() -> None:
        while time.monotonic() < stop:
            await client.chat(body)

    async def sampler() -> None:
        while time.monotonic() < stop:
            samples.append((time.monotonic(), client.stats.requests))
            await asyncio.sleep(0.5)

    cpu = time.process_time()
    await asyncio.gather(sampler(), *(session() for _ in range(sessions)))
    cpu = time.process_time() - cpu
    if control is not None:
        control.cancel()
    await client.close()
    return samples, cpu, client


def sustained(samples: list[tuple[float, int]]) -> float:
    """Rate over the middle 60% of the run (ramp-up and drain left out)."""
    n = len(samples)
    (t0, c0), (t1, c1) = samples[n // 5], samples[n - 1 - n // 5]
    return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0


def scenario(
    sessions: int, capacity: int, speed: float, seconds: float, adaptive: bool = True
) -> Result:
    proc, url = start_sim(capacity, speed)
    try:
        samples, cpu, client = asyncio.run(drive(url, sessions, seconds, adaptive))
        stats = httpx.get(url + "/sim/stats").json()
    finally:
        proc.terminate()
        proc.wait(10)
    done = max(1, client.stats.requests)
    p, o = client.stats.prompt_tokens / done, client.stats.completion_tokens / done
    # fewer sessions than slots: only `sessions` can ever run, and that is the most to expect
    config = SimConfig(max_num_seqs=min(capacity, sessions), speed_factor=speed)
    best = saturated_rate(config, round(p), round(o), requests=1500)
    rate = sustained(samples)
    return Result(
        sessions=sessions, capacity=capacity, speed_factor=speed, completed=stats["completed"],
        sustained_rps=round(rate, 2), theoretical_rps=round(best, 2), utilisation=round(rate / best, 3) if best else 0.0,
        client_cpu_ms_per_request=round(cpu * 1000 / done, 3), mean_prompt_tokens=round(p, 1),
        mean_completion_tokens=round(o, 1), errors=sum(client.stats.failures.values()),
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, nargs="*", default=[100, 1000])
    parser.add_argument(
        "--capacity", type=int, default=0, help="max_num_seqs (default: = sessions, at most 256)"
    )
    parser.add_argument("--speed", type=float, default=10.0, help="stand-in speed factor")
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--json", help="write results here")
    parser.add_argument(
        "--static",
        action="store_true",
        help="every session's request goes straight to the engine (no in-flight controller)",
    )
    args = parser.parse_args()
    results = []
    for n in args.sessions:
        capacity = args.capacity or min(n, 256)
        result = scenario(n, capacity, args.speed, args.seconds, not args.static)
        results.append(result)
        print(
            f"sessions {n:5d}  capacity {capacity:4d}  sustained {result.sustained_rps:7.2f} req/s  "
            f"max {result.theoretical_rps:7.2f} req/s  utilisation {result.utilisation:.3f}  "
            f"client CPU {result.client_cpu_ms_per_request:.2f} ms/request  "
            f"(P {result.mean_prompt_tokens:.0f}, O {result.mean_completion_tokens:.0f} tokens, errors {result.errors})",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([asdict(r) for r in results], fh, indent=1)


if __name__ == "__main__":
    main()
