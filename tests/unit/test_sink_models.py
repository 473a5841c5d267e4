"""The sink's typed files (`sink.models`) against files earlier versions of datagen wrote.

Fixtures in tests/fixtures/output-0.1.0/ (datagen 0.1.0, before the models):
- `demo/`: `_run.json`, `_manifest.json`, `README.md` and one marker of a real
  `datagen run pipelines/demo.yaml` (the parts left out: megabytes of screenshots);
- `small/`: a whole output of one shard (real demo rows: 100 grounding rows, 30 rejects)
  written by that version's `claim_output` and `write_shard`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.records import ShardResult
from datagen.sink.manifest import dataset_card, finalize
from datagen.sink.models import EngineEndpoint, EngineInfo, Manifest, RunInfo, ShardClaim, to_json
from datagen.sink.read import read_committed
from datagen.sink.storage import LocalStorage
from datagen.sink.verify import verify_output
from datagen.sink.writer import claim_output, parse_marker, read_markers, read_run
from tests.helpers import FIXTURES

OLD = FIXTURES / "output-0.1.0"
# the manifest's keys, in the order 0.1.0 wrote them (`engine` only when a model was called)
MANIFEST_KEYS = [
    "run_id",
    "schema_version",
    "complete",
    "shards",
    "tables",
    "reject_reasons",
    "solved",
    "tasks",
    "steps_dropped",
    "packages",
    "engine",
    "pipeline",
    "finished_at",
]


@pytest.fixture
def old_output(tmp_path: Path) -> LocalStorage:
    """A copy of the one-shard output 0.1.0 wrote."""
    shutil.copytree(OLD / "small", tmp_path / "out")
    return LocalStorage(tmp_path / "out")


def test_files_of_a_real_run_read_and_write_back_byte_for_byte() -> None:
    demo = OLD / "demo"
    marker_raw = (demo / "_markers" / "shard-00000.json").read_bytes()
    marker = parse_marker(marker_raw, 0)
    assert isinstance(marker.stats, ShardResult) and marker.stats.episodes == 8
    assert [f.table for f in marker.files] == ["episodes", "steps", "grounding", "rejects"]
    assert to_json(marker) == marker_raw
    run_raw = (demo / "_run.json").read_bytes()
    assert to_json(RunInfo.model_validate_json(run_raw)) == run_raw
    manifest_raw = (demo / "_manifest.json").read_bytes()
    manifest = Manifest.model_validate_json(manifest_raw)
    assert manifest.to_json() == manifest_raw
    assert manifest.output == ("/tmp/typed-demo", None)
    # the card lists the features of today's schema: all but those added since, as 0.1.0 wrote it
    added = ADDED_IN_1_2 | ADDED_IN_1_3 | ADDED_IN_1_4 | ADDED_IN_1_5 | ADDED_IN_1_8
    assert _without(dataset_card(manifest), added) == (demo / "README.md").read_text()


ADDED_IN_1_2 = {  # schema 1.2: descriptions, groups, relabeling (added columns only)
    "action_description",
    "model_action_description",
    "group_id",
    "sample_index",
    "relabeled_instruction",
    "instruction_source",
    "relabel_accepted",
    "relabel_model",
    "relabel_standin",
    "relabel_output",
    "relabel_check_output",
    "relabel_prompt_version",
}
ADDED_IN_1_3 = {  # schema 1.3: replay verification (added columns only)
    "needed",
    "verification",
    "verified_steps",
    "verify_replays",
    "verify_ms",
    "settle_timed_out",  # steps: the settle gave up at its limit
    "name_source",  # grounding: where the name came from
    "consent_action",  # episodes: the cookie-consent dialog answered before step 0
}
ADDED_IN_1_4 = {  # schema 1.4: replays from recorded traffic, the minimal path observed
    "path_screenshot",
    "path_action_description",
    "path_url",
    "stop_note",
    "verify_note",
    "verify_network",
    "verify_aborted",
    "accessible_name",  # grounding: the accessible name, shown or not (issue 34)
}


ADDED_IN_1_5 = {"verify_requests"}  # schema 1.5: every request of the replays, by fate
# schema 1.8: what run-wide specificity reads of each episode (synthesised tasks)
ADDED_IN_1_8 = {"final_state_json", "acted_json"}


def _without(card: str, names: set[str]) -> str:
    """The card with the YAML feature entries (`- name: X` and its `dtype:` line) of `names`
    left out."""
    lines = card.splitlines(keepends=True)
    kept: list[str] = []
    skip = False
    for line in lines:
        if line.strip().startswith("- name: "):
            skip = line.strip().removeprefix("- name: ") in names
        elif not line.startswith("    "):
            skip = False
        if not skip:
            kept.append(line)
    return "".join(kept)


def test_an_old_output_verifies_reads_and_resumes(old_output: LocalStorage) -> None:
    report = verify_output(old_output)
    assert report.ok and report.shards == 1 and report.parts == 4, list(report.lines())
    result = CliRunner().invoke(app, ["verify", str(old_output.root)])
    assert result.exit_code == 0, result.output
    assert "ok: 1 shards, 4 parts verified (sha256" in result.output
    assert read_committed(str(old_output.root), "grounding").count_rows() == 100
    assert read_committed(str(old_output.root), "rejects").count_rows() == 30
    assert read_committed(str(old_output.root), "tasks").count_rows() == 0  # added since
    (marker,) = read_markers(old_output)
    assert marker.shard == 7 and marker.stats.rejects == 30
    run = read_run(old_output)
    assert run is not None and claim_output(old_output, run.run_id, run.pipeline) is True


def test_finalize_over_an_old_output_writes_the_keys_0_1_0_wrote(old_output: LocalStorage) -> None:
    manifest = finalize(old_output, [6, 7])
    written = json.loads((old_output.root / "_manifest.json").read_text())
    assert list(written) == [k for k in MANIFEST_KEYS if k != "engine"]
    assert written["shards"] == {"expected": 2, "committed": 1, "missing": [6]}
    assert written["tables"]["grounding"]["rows"] == 100
    assert list(written["tables"]["rejects"]["files"][0]) == ["key", "rows", "bytes", "sha256"]
    assert written["tasks"] == {"committed": 2, "with_episodes": 2}
    assert written["reject_reasons"] == {"occluded": 30}
    assert Manifest.model_validate(written) == manifest

    engine = EngineInfo(
        standin=True, endpoints=(EngineEndpoint(model="m", max_model_len=None, standin=True),)
    )
    with_engine = json.loads(finalize(old_output, [7], engine).to_json())
    assert list(with_engine) == MANIFEST_KEYS
    assert with_engine["engine"] == {
        "standin": True,
        "endpoints": [{"model": "m", "max_model_len": None, "standin": True}],
    }


def test_markers_of_earlier_versions_and_odd_leases() -> None:
    raw = json.loads((OLD / "demo" / "_markers" / "shard-00000.json").read_text())
    for later in ("peak_sessions", "browser_memory_mb", "browser_episodes", "tasks_with_episodes"):
        del raw["stats"][later]  # stats before these were added: defaults
    assert parse_marker(json.dumps(raw).encode(), 0).stats.peak_sessions == 0
    with pytest.raises(ValueError, match=r"not a marker's shape: stats\.tasks"):
        parse_marker(json.dumps({**raw, "stats": {"shard": 0}}).encode(), 0)
    with pytest.raises(ValueError, match="not a marker's shape: note"):
        parse_marker(json.dumps({**raw, "note": "edited"}).encode(), 0)
    # a lease from a version with more keys still names its holder (else it would be taken over)
    claim = ShardClaim.model_validate_json(b'{"token": "ab", "taken_at": 1.0, "host": "h"}')
    assert claim.token == "ab"
