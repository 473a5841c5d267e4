"""The engine side of the end-to-end benchmarks (`bench/e2e.py`): the stand-in in its own process,
its calibration, an independent sampler of its `/metrics`, and its maximum for a workload.

    bench ─► StandIn (`datagen engine sim` + POST /sim/config) ◄─ datagen run / naive loop
          ─► Sampler: vllm:num_requests_running + waiting and /sim/stats completed, every 0.2 s
          ─► client_alone_max(): EngineClient alone at full concurrency, the run's request mix

Only public interfaces: the stand-in's CLI and HTTP routes (vLLM's /metrics, the stand-in's
/sim/stats and /sim/config), the prompt builders of `datagen.engine.profiles`, and `EngineClient`
(as `bench/engine_util.py` uses it).
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from PIL import Image

from datagen.config import SimConfig
from datagen.engine.client import EngineClient
from datagen.engine.profiles import PROFILES, SentImage, encode_screenshot
from datagen.engine.sim.engine import Shape, virtual_rate
from datagen.engine.sim.server import free_port

# Calibrations this bench applies itself (POST /sim/config), for a stand-in without named ones.
# "linear": every engine step takes t_fixed whatever it holds (no per-sequence, per-prefill-token
# or per-tile cost, and a token budget no prompt reaches), so throughput grows in proportion to
# the requests running up to max_num_seqs, as published for Holotron-12B (linear to 100 agents);
# t_fixed is the step time of the stand-in's `holotron-12b/all-tokens` fit. "standin": the
# stand-in's own defaults (prefill-bound, flat beyond ~16 in flight), as the issue measured.
# Any other name is the stand-in's own (`datagen engine sim --calibration NAME`).
BUILTIN: dict[str, dict[str, float | int]] = {
    "linear": {
        "t_fixed_ms": 635.4,
        "per_seq_ms": 0.0,
        "per_prefill_token_ms": 0.0,
        "per_tile_ms": 0.0,
        "max_num_batched_tokens": 1_000_000,
    },
    "standin": {},
}
PREFERRED = "holotron-12b/all-tokens"  # the published linear workload fit, when the stand-in has it


def named_calibrations() -> bool:
    """Whether this stand-in takes `--calibration NAME`."""
    cmd = [sys.executable, "-m", "datagen", "engine", "sim", "--help"]
    shown = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}
    )
    return "--calibration" in shown.stdout


def describe(name: str) -> str:
    """The calibration in words: the stand-in's own line for a named fit, else ours."""
    if name == "linear":
        return "linear (bench's own: constant 635.4 ms steps, no prefill or per-sequence cost)"
    if name == "standin":
        return "standin (the stand-in's defaults: prefill-bound)"
    try:
        from datagen.config.sim import CALIBRATIONS

        return str(CALIBRATIONS[name].line())
    except (ImportError, KeyError, AttributeError):
        return name


PROFILE = PROFILES["holo2_norm1000"]
HISTORY_IMAGES = 3  # VlmPolicyConfig's default: the mix below assumes it


class StandIn:
    """`datagen engine sim` in its own process (its CPU is not the bench's), calibrated."""

    def __init__(
        self, capacity: int, speed: float, calibration: str, extra: Sequence[str] = ()
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.calibration = calibration
        cmd = [sys.executable, "-m", "datagen", "engine", "sim", "--port", str(self.port)]
        cmd += ["--max-num-seqs", str(capacity), "--speed-factor", str(speed), *extra]
        if calibration not in BUILTIN:
            cmd += ["--calibration", calibration]
        # a file, not a pipe: a full pipe would stall the stand-in; closed in close()
        self.log = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log)

    def __enter__(self) -> StandIn:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.url + "/health", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.log.seek(0)
                    said = self.log.read().decode(errors="replace")[-500:]
                    self.close()
                    raise RuntimeError(f"the stand-in did not come up in 30 s: {said}") from None
                time.sleep(0.2)
        changes = BUILTIN.get(self.calibration)
        if changes:
            httpx.post(self.url + "/sim/config", json=changes, timeout=5).raise_for_status()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()

    def stats(self) -> dict[str, Any]:
        reply: dict[str, Any] = httpx.get(self.url + "/sim/stats", timeout=5).json()
        return reply

    def config(self) -> SimConfig:
        """The stand-in's settings now, for its engine model (`virtual_rate`)."""
        return SimConfig(**self.stats()["config"])


def in_flight_of(metrics: str) -> float:
    """vllm:num_requests_running + vllm:num_requests_waiting from a /metrics text."""
    total = 0.0
    for line in metrics.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
            total += float(line.rsplit(" ", 1)[1])
    return total


@dataclass
class Sampler:
    """Samples the stand-in every `interval_s` on a thread: (time, in flight, completed)."""

    url: str
    interval_s: float = 0.2
    samples: list[tuple[float, float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as http:
            while not self._stop.is_set():
                try:
                    flight = in_flight_of(http.get(self.url + "/metrics").text)
                    done = int(http.get(self.url + "/sim/stats").json()["completed"])
                    self.samples.append((time.monotonic(), flight, done))
                except httpx.HTTPError:
                    pass  # a missed sample: the time average simply has one point fewer
                self._stop.wait(self.interval_s)

    def window(self) -> tuple[float, float, float, int]:
        """The busy window, from the first sample with a request at the engine to the last
        completion: (seconds, mean in flight, completed req/s, completed)."""
        s = self.samples
        bounds = self._bounds()
        if bounds is None:
            return 0.0, 0.0, 0.0, 0
        start, last = bounds
        if last <= start:
            return 0.0, 0.0, 0.0, 0
        span = s[last][0] - s[start][0]
        done = s[last][2] - s[start][2]
        return span, self._mean_in_flight(start, last), (done / span if span else 0.0), done

    def before_tail(self, tail_s: float) -> float:
        """Mean in flight over the busy window less its last `tail_s` (an episode's length:
        from about when the last episode started, the run has fewer left than sessions)."""
        s = self.samples
        bounds = self._bounds()
        if bounds is None:
            return 0.0
        start, last = bounds
        cut = s[last][0] - tail_s
        end = max((i for i in range(last + 1) if s[i][0] <= cut), default=0)
        return self._mean_in_flight(start, end)

    def _bounds(self) -> tuple[int, int] | None:
        """(the sample before the first request at the engine, the last completion seen)."""
        s = self.samples
        first = next((i for i, x in enumerate(s) if x[1] > 0 or x[2] > s[0][2]), None)
        if first is None or len(s) < 3:
            return None
        last = next(i for i, x in enumerate(s) if x[2] == s[-1][2])
        return max(0, first - 1), last

    def _mean_in_flight(self, start: int, end: int) -> float:
        """Time-weighted mean of in flight from sample `start` to `end` (each sample holds
        until the next)."""
        s = self.samples
        span = s[end][0] - s[start][0] if end > start else 0.0
        held = sum(s[i][1] * (s[i + 1][0] - s[i][0]) for i in range(start, end))
        return held / span if span else 0.0


# ----------------------------------------------------------------------- the request mix


@dataclass(frozen=True)
class Kind:
    """One kind of request the vlm policy sends: navigation with `images` screenshots (the rest
    of the history as placeholders), or a click's localization."""

    name: str
    images: int
    weight: float


def synthetic_image() -> SentImage:
    """A 1280×800 JPEG as the policy sends it: the stand-in counts image tokens by size, so a
    drawn page costs the engine what a real screenshot of that size does."""
    image = Image.new("RGB", (1280, 800), "white")
    for x in range(0, 1280, 160):
        image.paste((40 + x % 200, 90, 160), (x + 10, 100, x + 140, 140))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=80)
    return encode_screenshot(out.getvalue(), "jpeg", 1280, 800, 1280)


def body_of(kind: Kind, image: SentImage) -> dict[str, Any]:
    """The request body the vlm policy would send for `kind` (its default roles' settings)."""
    if kind.name == "localizer":
        messages = PROFILE.localization_messages(image, "the blue button at the top")
        schema, temperature, max_tokens = PROFILE.point_schema(image), 0.0, 64
    else:
        step = kind.images - 1
        history: list[SentImage | None] = [None] * max(0, step - HISTORY_IMAGES + 1)
        history += [image] * min(kind.images, HISTORY_IMAGES)
        previous = ['{"type": "click", "element": "a link"}'] * step
        messages = PROFILE.navigation_messages(
            "Add a product to the cart.", step, "", previous, history
        )
        schema, temperature, max_tokens = PROFILE.navigation_schema(image), 0.7, 512
    return {
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "structured_outputs": {"json": schema},
    }


def mix_of(step_indices: Sequence[int], localized: int) -> list[Kind]:
    """The run's request mix from its step rows: one navigation request per step (its images:
    step index + 1, at most HISTORY_IMAGES) and `localized` localizations."""
    kinds: dict[int, int] = {}
    for index in step_indices:
        n = min(index + 1, HISTORY_IMAGES)
        kinds[n] = kinds.get(n, 0) + 1
    mix = [Kind(f"navigation/{n}", n, float(c)) for n, c in sorted(kinds.items())]
    return mix + ([Kind("localizer", 1, float(localized))] if localized else [])


@dataclass(frozen=True)
class Maximum:
    """The client alone at full concurrency on the stand-in: completed req/s (middle 60% of
    the run), mean prompt and completion tokens per request, and what it sent."""

    rps: float
    prompt_tokens: float
    completion_tokens: float
    sessions: int
    seconds: float
    errors: int
    shapes: list[Shape]


async def _drive(url: str, mix: list[Kind], sessions: int, seconds: float) -> Maximum:
    image = synthetic_image()
    bodies = [(k, body_of(k, image)) for k in mix]
    total = sum(k.weight for k in mix)
    client = EngineClient(url, max_in_flight=sessions, timeout_s=600, retries=2)
    await client.wait_ready(30)
    stop = time.monotonic() + seconds
    samples: list[tuple[float, int]] = []
    usage: dict[str, list[tuple[int, int]]] = {k.name: [] for k in mix}
    owed = [0.0] * len(bodies)

    def pick() -> tuple[Kind, dict[str, Any]]:  # the largest deficit next: the mix's proportions
        for i, (k, _) in enumerate(bodies):
            owed[i] += k.weight
        i = max(range(len(bodies)), key=owed.__getitem__)
        owed[i] -= total
        return bodies[i]

    async def session() -> None:  # at least `seconds`, and 10 requests a session: at a slow
        while time.monotonic() < stop or client.stats.requests < 10 * sessions:  # stand-in the
            kind, body = pick()  # answers come in waves, and a short window would cut one
            result = await client.chat(body)
            usage[kind.name].append((result.prompt_tokens, result.completion_tokens))

    async def sampler() -> None:
        while time.monotonic() < stop or client.stats.requests < 10 * sessions:
            samples.append((time.monotonic(), client.stats.requests))
            await asyncio.sleep(0.5)

    await asyncio.gather(sampler(), *(session() for _ in range(sessions)))
    await client.close()
    n = len(samples)
    (t0, c0), (t1, c1) = samples[n // 5], samples[n - 1 - n // 5]
    done = max(1, client.stats.requests)
    shapes = [
        Shape(
            round(sum(p for p, _ in got) / len(got)),
            max(1, round(sum(o for _, o in got) / len(got))),
            weight=k.weight,
        )
        for k in mix
        if (got := usage[k.name])
    ]
    return Maximum(
        rps=(c1 - c0) / (t1 - t0) if t1 > t0 else 0.0,
        prompt_tokens=client.stats.prompt_tokens / done,
        completion_tokens=client.stats.completion_tokens / done,
        sessions=sessions,
        seconds=seconds,
        errors=sum(client.stats.failures.values()),
        shapes=shapes,
    )


def client_alone_max(url: str, mix: list[Kind], capacity: int, seconds: float) -> Maximum:
    """What the stand-in completes with a queue that never runs dry (2 × its capacity of
    sessions, every request sent as soon as the last one answered, no in-flight controller)."""
    return asyncio.run(_drive(url, mix, 2 * capacity, seconds))


def model_gain(config: SimConfig, shapes: list[Shape], concurrency: int) -> tuple[float, float]:
    """The engine model's own rates for this mix: (req/s at `concurrency` in flight, at 1)."""
    many = virtual_rate(config, shapes, in_flight=concurrency, requests=max(600, 6 * concurrency))
    one = virtual_rate(config, shapes, in_flight=1, requests=300)
    return many, one
