"""Keys read from control files stay inside the output (issue 42, item 1): an edited
`_export.json` that lists `../canary.txt` or an absolute path for a shard the next export
redoes is refused, and nothing outside the export folder is deleted; `Storage.put`/`delete`
refuse keys that leave the root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.sink.storage import LocalStorage
from tests.unit.synthetic_run import Task, write_run


def _tampered(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """An output exported once, then its state edited: shard 0's digests changed (so the next
    export redoes it) and two files outside the folder added to its `files`."""
    out = write_run(tmp_path / "out", [[Task("alpha", "a1")]])
    folder = tmp_path / "exp"
    first = CliRunner().invoke(app, ["export", str(out), "-f", "sft", "--to", str(folder)])
    assert first.exit_code == 0, first.output
    canaries = [tmp_path / "canary.txt", tmp_path / "elsewhere" / "absolute.txt"]
    for canary in canaries:
        canary.parent.mkdir(exist_ok=True)
        canary.write_text("keep me")
    state = json.loads((folder / "_export.json").read_text())
    record = state["shards"]["0"]
    record["parts"] = {table: "0" * 64 for table in record["parts"]}
    record["files"] += ["../canary.txt", str(canaries[1])]
    (folder / "_export.json").write_text(json.dumps(state))
    return out, folder, canaries


def test_an_edited_export_state_deletes_nothing_outside_the_folder(tmp_path: Path) -> None:
    out, folder, canaries = _tampered(tmp_path)
    again = CliRunner().invoke(app, ["export", str(out), "-f", "sft", "--to", str(folder)])
    assert all(c.read_text() == "keep me" for c in canaries)
    assert again.exit_code != 0
    assert "'../canary.txt' for shard 0, not a file this export writes" in again.output
    assert "Traceback" not in again.output


@pytest.mark.parametrize("key", ["../x", "/etc/x", "a/../../x", "a//b", "./a", "", "a/..", "a\0b"])
def test_local_storage_refuses_keys_that_leave_its_root(tmp_path: Path, key: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "x").write_text("outside")
    storage = LocalStorage(root)
    with pytest.raises(ValueError, match="not a key inside the output"):
        storage.put(key, b"data")
    with pytest.raises(ValueError, match="not a key inside the output"):
        storage.put_new(key, b"data")
    with pytest.raises(ValueError, match="not a key inside the output"):
        storage.delete(key)
    assert (tmp_path / "x").read_text() == "outside"


def test_ordinary_keys_pass() -> None:
    from datagen.sink.keys import check_key

    for key in ("_export.json", "data/train-part-00000.parquet", ".hidden.json.abcdefgh", "a.b"):
        assert check_key(key) == key
