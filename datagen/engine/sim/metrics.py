"""vLLM 0.14.1's Prometheus metrics, same names, types, labels and buckets (spec §3.6),
exposed with the real prometheus_client so the text format matches."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
ITERATION_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)  # fmt: skip


def _token_buckets(max_model_len: int) -> list[float]:
    """vLLM's 1-2-5 series up to max_model_len."""
    out: list[float] = []
    exponent = 0
    while True:
        for m in (1, 2, 5):
            value = m * 10**exponent
            if value > max_model_len:
                return out
            out.append(float(value))
        exponent += 1


class SimMetrics:
    """The metric objects of one stand-in, in their own registry."""

    def __init__(self, model_name: str, max_model_len: int) -> None:
        self.registry = CollectorRegistry()
        labels = ["model_name", "engine"]
        self.values = {"model_name": model_name, "engine": "0"}
        reg = self.registry
        tokens = _token_buckets(max_model_len)
        self.running = Gauge(
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            labels,
            registry=reg,
        )
        self.waiting = Gauge(
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            labels,
            registry=reg,
        )
        self.kv_usage = Gauge(
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            labels,
            registry=reg,
        )
        self.prompt_tokens = Counter(
            "vllm:prompt_tokens", "Number of prefill tokens processed.", labels, registry=reg
        )
        self.generation_tokens = Counter(
            "vllm:generation_tokens", "Number of generation tokens processed.", labels, registry=reg
        )
        self.success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [*labels, "finished_reason"],
            registry=reg,
        )
        self.preemptions = Counter(
            "vllm:num_preemptions",
            "Cumulative number of preemption from the engine.",
            labels,
            registry=reg,
        )
        self.ttft = Histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.itl = Histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            labels,
            buckets=ITL_BUCKETS,
            registry=reg,
        )
        self.e2e = Histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            labels,
            buckets=REQUEST_LATENCY_BUCKETS,
            registry=reg,
        )
        self.queue = Histogram(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            labels,
            buckets=REQUEST_LATENCY_BUCKETS,
            registry=reg,
        )
        self.req_prompt = Histogram(
            "vllm:request_prompt_tokens",
            "Number of prefill tokens processed.",
            labels,
            buckets=tokens,
            registry=reg,
        )
        self.req_generation = Histogram(
            "vllm:request_generation_tokens",
            "Number of generation tokens processed.",
            labels,
            buckets=tokens,
            registry=reg,
        )
        self.iteration = Histogram(
            "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.",
            labels,
            buckets=ITERATION_BUCKETS,
            registry=reg,
        )
        self.prefix_queries = Counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            labels,
            registry=reg,
        )
        self.prefix_hits = Counter(
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            labels,
            registry=reg,
        )
        # vLLM makes each labelled series at start: counters read 0 before the first event
        # (a client that waits for `vllm:num_preemptions_total` to appear would wait forever).
        for metric in (self.running, self.waiting, self.kv_usage, self.prompt_tokens,
                       self.generation_tokens, self.preemptions, self.ttft, self.itl, self.e2e,
                       self.queue, self.req_prompt, self.req_generation, self.iteration,
                       self.prefix_queries, self.prefix_hits):  # fmt: skip
            self.labelled(metric)
        for reason in ("stop", "length", "abort", "error"):
            self.success.labels(finished_reason=reason, **self.values)

    def labelled(self, metric: Any) -> Any:
        """The child of a metric for this engine's labels."""
        return metric.labels(**self.values)
