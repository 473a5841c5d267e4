"""Reading vLLM's /metrics without trusting it: bounded in bytes and in line length, only the
watched series kept while reading, every value finite.

    GET /metrics ─► read_watched(response) ─► {series: value}  | MetricsUnreadable(why)

vLLM's page is tens of KB, mostly histograms that nothing here reads. Before this bound a single
100 MB line starting with a watched name held the worker's event loop for a minute at 1.8 GB,
and a GB of comments read as "running 0". Now the body is scanned chunk by chunk (64 KiB, so the
loop gets control back between chunks), a line longer than MAX_LINE is dropped as it streams,
and only the few watched sample lines are kept and parsed; past MAX_METRICS_BYTES the reading is
unreadable. A reading without finite running, waiting and KV-usage gauges is unreadable too: the
in-flight control keeps its limit and the watchdog names it, instead of steering on zeros.
"""

from __future__ import annotations

import math
import re

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from datagen.engine.wire import CHUNK, MetricsUnreadable, redirected

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_USAGE = "vllm:kv_cache_usage_perc"
KV_USAGE_OLD = "vllm:gpu_cache_usage_perc"  # its name before vLLM 0.10 (engine-spec §3.6)
PREEMPTIONS = "vllm:num_preemptions_total"
WATCHED_METRICS = (
    RUNNING,
    WAITING,
    KV_USAGE,
    PREEMPTIONS,
    "vllm:prompt_tokens_total",  # the watchdog's: prompts processed…
    "vllm:prefix_cache_hits_total",  # …and how many of their tokens came from the cache
)
REQUIRED = (RUNNING, WAITING, KV_USAGE)  # what the control law cannot do without
MAX_METRICS_BYTES = 4 * 2**20  # vLLM 0.14.1's page: tens of KB
MAX_LINE = 4096  # a watched sample line, labels included, is under 300 bytes
MAX_SAMPLES = 512  # one sample per watched series and data-parallel engine
_NAMES = "|".join(re.escape(n) for n in (*WATCHED_METRICS, KV_USAGE_OLD))
_WATCHED_LINE = re.compile(rb"^(?:" + _NAMES.encode() + rb")[{ \t][^\n]*", re.MULTILINE)


async def read_watched(response: aiohttp.ClientResponse) -> dict[str, float]:
    """The watched series of one /metrics answer, summed over label sets (vLLM labels each
    data-parallel engine), the KV usage the fullest engine's; MetricsUnreadable otherwise."""
    if (where := redirected(response)) is not None:
        raise MetricsUnreadable(f"/metrics redirects to {where} (not followed)")
    if response.status != 200:
        raise MetricsUnreadable(f"/metrics answered HTTP {response.status}")
    if (response.content_length or 0) > MAX_METRICS_BYTES:
        raise MetricsUnreadable(f"/metrics: {response.content_length} bytes, over its bound")
    lines = await _watched_lines(response.content)
    values = _parse(lines)
    kind = response.content_type
    return checked(values, "" if kind.startswith("text/plain") else f" (a {kind} page)")


async def _watched_lines(content: aiohttp.StreamReader) -> list[bytes]:
    """The watched sample lines, streamed: a line over MAX_LINE is dropped, never buffered."""
    kept: list[bytes] = []
    partial, skipping, size = b"", False, 0
    async for chunk in content.iter_chunked(CHUNK):
        size += len(chunk)
        if size > MAX_METRICS_BYTES:
            raise MetricsUnreadable(f"/metrics: more than {MAX_METRICS_BYTES} bytes")
        if skipping:  # the rest of an over-long line, up to its end
            end = chunk.find(b"\n")
            if end < 0:
                continue
            chunk, skipping = chunk[end + 1 :], False
        buffer = partial + chunk
        cut = buffer.rfind(b"\n") + 1
        kept += (
            m.group() for m in _WATCHED_LINE.finditer(buffer, 0, cut) if len(m.group()) <= MAX_LINE
        )
        if len(kept) > MAX_SAMPLES:
            raise MetricsUnreadable(f"/metrics: more than {MAX_SAMPLES} watched samples")
        partial = buffer[cut:]
        if len(partial) > MAX_LINE:
            partial, skipping = b"", True
    if not skipping and _WATCHED_LINE.fullmatch(partial) and len(partial) <= MAX_LINE:
        kept.append(partial)  # the last line, without its newline
    return kept


def _parse(lines: list[bytes]) -> dict[str, float]:
    text = b"\n".join(lines).decode("utf-8", errors="replace") + "\n"
    out: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if not math.isfinite(sample.value):  # one NaN engine must not hide in a max
                    raise MetricsUnreadable(f"/metrics: {sample.name} is {sample.value}")
                name = KV_USAGE if sample.name == KV_USAGE_OLD else sample.name
                if name == KV_USAGE:
                    out[name] = max(out.get(name, -math.inf), sample.value)
                elif name in WATCHED_METRICS:
                    out[name] = out.get(name, 0.0) + sample.value
    except (ValueError, TypeError, IndexError) as exc:
        raise MetricsUnreadable(f"/metrics: a watched line does not parse ({exc})") from None
    return out


def checked(values: dict[str, float], note: str = "") -> dict[str, float]:
    """`values` if the required gauges are there and every value is finite and not negative."""
    for name in REQUIRED:
        if name not in values:
            raise MetricsUnreadable(f"/metrics has no {name}{note}")
    for name, value in values.items():
        if not math.isfinite(value) or value < 0:
            raise MetricsUnreadable(f"/metrics: {name} is {value}")
    return values
