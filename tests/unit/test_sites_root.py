"""A worker that cannot serve the pipeline's sites stops at its plugin's setup, before any
thread or browser, with the reason and the fix; `validate` says the same about a sites folder
that is empty or missing. (The bundled-sites case, a datagen installed without them, is made
for real in tests/integration/test_wheel.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.errors import SourceError
from datagen.runtime.plugin import BrowserPlugin
from datagen.source import BUNDLED_SITES, checked_sites_root
from tests.helpers import make_config

runner = CliRunner()


def _setup_fails(config: object) -> SourceError:
    plugin = BrowserPlugin(config)  # type: ignore[arg-type]
    with pytest.raises(SourceError) as caught:
        plugin.setup(worker=None)
    assert plugin.loop is None and plugin.sites is None and plugin.host is None  # nothing started
    return caught.value


def test_an_empty_sites_folder_fails_the_plugin_setup(tmp_path: Path) -> None:
    empty = tmp_path / "sites"
    (empty / "todo").mkdir(parents=True)  # a folder, but no <site>/tasks.jsonl
    error = _setup_fails(make_config(tmp_path, sources=[{"type": "sites", "dir": str(empty)}]))
    assert str(error) == (
        f"this worker cannot serve the pipeline's sites: {empty}: the sites folder holds no "
        "sites (expected <site>/tasks.jsonl)"
    )
    assert "exists at that path on the driver and on every worker" in error.fix


def test_a_missing_sites_folder_fails_the_plugin_setup(tmp_path: Path) -> None:
    gone = tmp_path / "not-here"
    error = _setup_fails(make_config(tmp_path, sources=[{"type": "sites", "dir": str(gone)}]))
    assert f"{gone}: the sites folder does not exist" in str(error)


def test_a_named_site_the_worker_lacks_fails_the_plugin_setup(tmp_path: Path) -> None:
    error = _setup_fails(make_config(tmp_path, sources=[{"type": "sites", "sites": ["nope"]}]))
    assert "unknown site(s) nope; available: settings, shop, signup, table, todo" in str(error)
    assert error.fix


def test_the_bundled_sites_pass(tmp_path: Path) -> None:
    config = make_config(tmp_path, sources=[{"type": "sites", "sites": ["todo"]}])
    assert checked_sites_root(config) == BUNDLED_SITES


def test_validate_refuses_an_empty_sites_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        f"sources: [{{type: sites, dir: empty}}]\noutput: {{uri: {tmp_path / 'o'}}}\n"
    )
    result = runner.invoke(app, ["validate", str(pipeline)], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert f"sources: {tmp_path / 'empty'}: the sites folder holds no sites" in text
    assert "fix: point the sites source's `dir` at a folder" in text
