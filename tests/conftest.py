"""Shared fixtures. Integration fixtures start real parts on 127.0.0.1: Chromium (Debian's
package), Dask LocalClusters, the bundled-site server."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datagen.config import PipelineConfig, parse_pipeline

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
PAGES = FIXTURES / "pages"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def pages() -> Iterator[object]:
    """The test pages in tests/fixtures/pages, served on 127.0.0.1."""
    from datagen.source.serve import SiteServer

    with SiteServer(PAGES) as server:
        yield server


@contextlib.contextmanager
def set_up(plugin: Any) -> Iterator[Any]:
    """A BrowserPlugin set up outside Dask (its browser, loop and site server), torn down after."""
    plugin.setup(worker=None)
    try:
        yield plugin
    finally:
        plugin.teardown(worker=None)


async def run_shard_with_engines(
    plugin: Any, config: PipelineConfig, out: Path, shard: int, tasks: list[Any]
) -> Any:
    """run_shard on a set-up plugin's browser with the config's engine roles started (and
    closed after), writing to `out`: a shard as a worker runs it, without Dask."""
    from datagen.engine.roles import Engines, roles_for
    from datagen.pipeline import ShardContext, run_shard
    from datagen.sink.storage import LocalStorage

    engines = Engines(config.engine, roles_for(config))
    await engines.start()
    try:
        ctx = ShardContext(
            config=config,
            run_id="r",
            host=plugin.host,
            storage=LocalStorage(out),
            engines=engines,
        )
        return await run_shard(shard, tasks, ctx)
    finally:
        await engines.close()


def make_config(tmp_path: Path, **overrides: object) -> PipelineConfig:
    """A valid pipeline config with small defaults; sections given as dicts replace defaults."""
    data: dict[str, object] = {
        "name": "test",
        "sources": [{"type": "sites"}],
        "output": {"uri": str(tmp_path / "out")},
        "cluster": {"workers": 1, "sessions_per_worker": 2, "dashboard": "127.0.0.1:0"},
        "run": {"max_steps": 4},
        "base_dir": str(tmp_path),
    }
    data.update(overrides)
    return parse_pipeline(data)


@pytest.fixture
def config_factory(tmp_path: Path):  # type: ignore[no-untyped-def]
    return lambda **kw: make_config(tmp_path, **kw)


@pytest.fixture(scope="session")
def chromium() -> str:
    from datagen.browser.launch import find_executable
    from datagen.errors import BrowserUnavailable

    try:
        return find_executable(None, None)
    except BrowserUnavailable as exc:
        pytest.fail(f"integration tests need Chromium: {exc}")


@pytest.fixture(scope="module")
def browser_plugin(
    chromium: str, pages: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[object]:
    """The worker plugin itself, set up outside Dask: a loop thread, Chromium, site server.
    The URL guard is on, with the test pages' server allowed like any pipeline would."""
    from datagen.runtime.plugin import BrowserPlugin

    config = make_config(tmp_path_factory.mktemp("plugin"), browser={"allow": [pages.origin]})  # type: ignore[attr-defined]
    with set_up(BrowserPlugin(config)) as plugin:
        yield plugin
