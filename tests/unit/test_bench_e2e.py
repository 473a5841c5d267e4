"""The end-to-end bench's own arithmetic (bench/engine.py): what it reads from the stand-in's
/metrics, the busy window it averages over, and the request mix it replays. No browser, no
cluster, no stand-in: the bench itself is run by hand (docs/benchmarks.md)."""

from __future__ import annotations

from bench.engine import Sampler, body_of, in_flight_of, mix_of, synthetic_image

METRICS = """# HELP vllm:num_requests_running Number of requests running.
vllm:num_requests_running{engine="0",model_name="datagen-sim"} 3.0
vllm:num_requests_waiting{engine="0",model_name="datagen-sim"} 2.0
vllm:num_requests_running_total_unrelated{model_name="datagen-sim"} 9.0
vllm:kv_cache_usage_perc{engine="0",model_name="datagen-sim"} 0.5
"""


def test_in_flight_is_running_plus_waiting_and_nothing_else() -> None:
    assert in_flight_of(METRICS) == 5.0
    assert in_flight_of("") == 0.0


def test_window_runs_from_first_request_to_last_completion() -> None:
    sampler = Sampler("http://unused")
    # (time, in flight, completed): idle, busy from t=2, last completion at t=5, idle after
    sampler.samples = [(0, 0, 0), (1, 0, 0), (2, 4, 0), (3, 4, 2), (4, 2, 5), (5, 0, 6), (6, 0, 6)]
    span, mean, rate, done = sampler.window()
    assert (span, done) == (4, 6)  # from the sample before the first request (t=1) to t=5
    assert mean == 2.5  # (0 + 4 + 4 + 2) / 4: each sample holds until the next
    assert rate == 1.5


def test_window_of_an_idle_engine_is_empty() -> None:
    sampler = Sampler("http://unused")
    sampler.samples = [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
    assert sampler.window() == (0.0, 0.0, 0.0, 0)


def test_mix_follows_the_step_rows() -> None:
    mix = mix_of([0, 1, 2, 5, 0], localized=3)
    assert [(k.name, k.images, k.weight) for k in mix] == [
        ("navigation/1", 1, 2.0),
        ("navigation/2", 1 + 1, 1.0),
        ("navigation/3", 3, 2.0),  # step 5 sends 3 images too: history_images is 3
        ("localizer", 1, 3.0),
    ]
    image = synthetic_image()
    for kind in mix:
        content = body_of(kind, image)["messages"][-1]["content"]
        sent = [p for p in content if p["type"] == "image_url"]
        assert len(sent) == kind.images
