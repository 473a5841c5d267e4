"""The run summary and `_report.html` print rejects readably, and a run without an engine gets
no engine chart (the meter reports engine rates of 0 all along)."""

from __future__ import annotations

from pathlib import Path

from datagen.observe.summary import counts_text
from datagen.runtime.dashboard import table
from datagen.runtime.report import Timeline, write_report
from datagen.sink.manifest import finalize
from datagen.sink.storage import LocalStorage
from tests.unit.synthetic_run import Task, write_run

NO_ENGINE = {"steps_per_s": 3.0, "browser_memory_mb": 200.0, "engine_requests_per_s": 0.0,
             "engine_tokens_per_s": 0.0, "engine_latency_ms": 0.0}  # fmt: skip


def test_counts_read_as_words_most_first() -> None:
    assert counts_text({"timeout_step": 3, "occluded": 141, "none_here": 0}) == (
        "occluded 141, timeout_step 3"
    )
    assert counts_text({}) == "none"


def test_report_without_an_engine_has_no_engine_chart_and_readable_rejects(
    tmp_path: Path,
) -> None:
    out = write_run(tmp_path / "out", [[Task("alpha", "a1")]])
    storage = LocalStorage(out)
    manifest = finalize(storage, [0]).model_copy(
        update={"reject_reasons": {"occluded": 141, "timeout_step": 3}}
    )
    timeline = Timeline(client=None)
    timeline.samples += [(t, "0", dict(NO_ENGINE)) for t in (1.0, 2.0, 3.0)]
    write_report(storage, timeline, manifest, {}, 3.0)
    html = (out / "_report.html").read_text()
    assert "browser steps per second" in html
    assert "engine tokens per second" not in html and "requests at the engine" not in html
    assert "rejects by reason: occluded 141, timeout_step 3." in html
    assert "{&#x27;occluded" not in html and "{'occluded" not in html
    timeline.samples.append((4.0, "0", NO_ENGINE | {"engine_tokens_per_s": 900.0}))
    write_report(storage, timeline, manifest, {}, 4.0)
    assert "engine tokens per second" in (out / "_report.html").read_text()


def test_dashboard_table_has_no_engine_column_without_an_engine() -> None:
    headers, _ = table({"0": NO_ENGINE, "1": NO_ENGINE})
    assert headers == ["worker", "steps/s", "browser MB"]
    headers, _ = table({"0": NO_ENGINE | {"engine_limit": 8.0}})
    assert "engine tokens/s" in headers and "in-flight limit" in headers
