"""Shared fixtures. Integration fixtures start real parts on 127.0.0.1: Chromium (Debian's
package), Dask LocalClusters, the bundled-site server. Plain helpers are in tests/helpers.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.fakes import FakeEngine
from tests.helpers import LONG_FILES, PAGES, Local, ReadyPlugin, make_config, set_up

if TYPE_CHECKING:
    from datagen.browser.host import BrowserHost
    from datagen.source.serve import SiteServer
    from tests.vllmserver import RealVllm


def pytest_configure(config: pytest.Config) -> None:
    """Under `--dist loadfile` (scripts/test.sh), xdist hands out files in collection order,
    which `pytest_collection_modifyitems` below sets, not in its own order by test count: that
    order left the long files of one to five tests each (a whole run apiece) to the end, one
    worker on them while the other had finished."""
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False


@pytest.hookimpl(trylast=True)  # after -m has deselected
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files in LONG_FILES first, longest first; then the others, most tests first (xdist's
    own order). Each file's tests stay together and in their order (module fixtures)."""
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    counts: dict[str, int] = {}
    for item in items:
        name = item.nodeid.split("::")[0]
        counts[name] = counts.get(name, 0) + 1

    def key(item: pytest.Item) -> tuple[int, int, str]:
        name = item.nodeid.split("::")[0]
        return rank.get(name, len(rank)), -counts[name], name

    items.sort(key=key)  # stable: a file's own order kept


@pytest.fixture(scope="session")
def pages() -> Iterator[SiteServer]:
    """The test pages in tests/fixtures/pages, served on 127.0.0.1."""
    from datagen.source.serve import SiteServer

    with SiteServer(PAGES) as server:
        yield server


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium executable the integration tests drive (fails the test if there is none)."""
    from datagen.browser.launch import find_executable
    from datagen.errors import BrowserUnavailable

    try:
        return find_executable(None, None)
    except BrowserUnavailable as exc:
        pytest.fail(f"integration tests need Chromium: {exc}")


@pytest.fixture(scope="module")
def browser_plugin(
    chromium: str, pages: SiteServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReadyPlugin]:
    """The worker plugin itself, set up outside Dask: a loop thread, Chromium, site server.
    The URL guard is on, with the test pages' server allowed like any pipeline would."""
    from datagen.runtime.plugin import BrowserPlugin

    config = make_config(tmp_path_factory.mktemp("plugin"), browser={"allow": [pages.origin]})
    with set_up(BrowserPlugin(config)) as plugin:
        yield plugin


@pytest.fixture(scope="module")
def local(browser_plugin: ReadyPlugin) -> Local:
    """datagen's local runner on the module's browser plugin: shards and episodes run as a
    worker runs them, without Dask (tests/helpers.py `Local`)."""
    return Local(browser_plugin)


@pytest.fixture(scope="module")
def patient_host(browser_plugin: ReadyPlugin, pages: SiteServer) -> Iterator[BrowserHost]:
    """A browser on the plugin's loop whose settle gives up only after 30 s (the most the
    config allows), not the default 1.5 s; the test pages' server allowed. For tests of what
    settle waits for: with 1.5 s, a page starved of CPU by other runs on the machine could
    still be busy when the time ran out, and the observation (or "not quiet") then said
    nothing about the page. Here settle ends at the page's own events, the cap all but never."""
    from datagen.browser.host import BrowserHost
    from datagen.config import BrowserConfig

    host = BrowserHost(BrowserConfig(settle_timeout_ms=30_000), allow=[pages.origin])
    browser_plugin.run(host.start(), timeout=120)
    try:
        yield host
    finally:
        browser_plugin.run(host.close(), timeout=60)


@pytest.fixture
def fake_engine() -> FakeEngine:
    """A scripted engine for the roles' chat calls, no server (tests/fakes.py)."""
    return FakeEngine()


@pytest.fixture(scope="session")
def real_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealVllm]:
    """A real vLLM on the CPU (tests/vllmserver.py), shared by the session's `vllm` tests."""
    from tests.vllmserver import start

    yield from start(tmp_path_factory.mktemp("vllm"))
