import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.records import ImageData, RejectRow, StepRow
from datagen.sink.schema import TABLES, arrow_schema
from datagen.sink.writer import parquet_bytes

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_json_schemas_in_sync() -> None:
    result = runner.invoke(app, ["schemas", "--check"])
    assert result.exit_code == 0, result.output


def test_arrow_schema_carries_image_feature_and_fixed_lists() -> None:
    schema = arrow_schema(StepRow)
    features = json.loads(schema.metadata[b"huggingface"])["info"]["features"]
    assert features["screenshot"] == {"_type": "Image"}
    assert str(schema.field("screenshot").type) == "struct<bytes: binary, path: string>"
    assert str(schema.field("target_bbox_px").type) == "fixed_size_list<item: double>[4]"
    assert set(features) == set(schema.names)


def test_datasets_reads_the_features_from_the_schema() -> None:
    datasets = pytest.importorskip("datasets")
    for model in TABLES.values():
        schema = arrow_schema(model)
        features = datasets.Features.from_arrow_schema(schema)
        declared = json.loads(schema.metadata[b"huggingface"])["info"]["features"]
        assert features.to_dict() == datasets.Features.from_dict(declared).to_dict(), model.__name__
    assert set(TABLES) == {"episodes", "steps", "grounding", "rejects", "tasks"}


def test_parquet_round_trip(tmp_path: Path) -> None:
    row = RejectRow(
        run_id="r",
        schema_version="1",
        task_id="t",
        episode_id="e",
        browser_version="chromium/1",
        stage="task",
        reason="navigation_failed",
        detail="d",
    )
    data, rows = parquet_bytes("rejects", [row, row])
    (tmp_path / "p.parquet").write_bytes(data)
    table = pq.read_table(tmp_path / "p.parquet")
    assert rows == 2 and table.to_pylist()[0]["reason"] == "navigation_failed"
    assert table.schema.metadata[b"huggingface"]
    assert ImageData(bytes=b"x").path is None


def test_every_pipeline_file_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAGEN_ENGINE_URL", "http://127.0.0.1:8000")
    files = sorted((REPO / "pipelines").glob("*.yaml"))
    assert files
    for path in files:
        result = runner.invoke(app, ["validate", str(path)])
        assert result.exit_code == 0, (path, result.output)
        assert "run id" in result.output


def test_validate_bad_file_exits_2_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("sources: [{type: sites}]\noutput: {uri: o}\ncluster: {workerz: 2}\n")
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 2
    assert (
        "cluster.workerz: unknown key" in result.output
        and "did you mean 'workers'" in result.output
    )


def test_dry_run_launches_nothing(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", str(REPO / "pipelines" / "demo.yaml"), "--dry-run", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    assert "dry run" in result.output and not (tmp_path / "o").exists()


def test_output_holding_another_run_is_refused(tmp_path: Path) -> None:
    from datagen.errors import OutputError
    from datagen.sink.storage import LocalStorage
    from datagen.sink.writer import claim_output

    storage = LocalStorage(tmp_path)
    assert claim_output(storage, "run-a", {"name": "a"}) is False
    assert claim_output(storage, "run-a", {"name": "a"}) is True  # the same run: resume
    with pytest.raises(OutputError, match="holds run run-a"):
        claim_output(storage, "run-b", {"name": "b"})


def test_foreign_folder_is_refused_and_uncommitted_parts_are_dropped(tmp_path: Path) -> None:
    from datagen.errors import OutputError
    from datagen.sink.manifest import finalize
    from datagen.sink.storage import LocalStorage
    from datagen.sink.writer import claim_output, write_shard
    from tests.helpers import shard_stats

    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not empty and holds no datagen run"):
        claim_output(LocalStorage(tmp_path / "foreign"), "r", {})
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {"name": "t"})
    write_shard(storage, 0, {}, shard_stats(0))
    storage.put("steps/part-00001.parquet", b"half a shard, no marker")
    manifest = finalize(storage, [0, 1])
    assert not manifest.complete and list(manifest.shards.missing) == [1]
    assert not storage.exists("steps/part-00001.parquet") and storage.exists(
        "steps/part-00000.parquet"
    )
