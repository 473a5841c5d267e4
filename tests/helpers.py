"""Plain helpers shared by more than one test module (fixtures live in conftest.py; the moto S3
server and the process cluster in their own modules, s3server.py and daskcluster.py). No test
module imports from another test module: what two of them share lives here.

- paths and ports: `REPO`, `FIXTURES`, `PAGES`, `closed_port` (a `DeadPort`);
- `LONG_FILES`: the test files that take longest, which xdist starts first (conftest.py);
- waiting for what a page or a server does, not for a length of time: `eventually` (async),
  `until`;
- configs and a worker's plugin without Dask: `make_config`, `ReadyPlugin`, `set_up`, and
  `Local`: datagen's local runner on such a plugin (the `local` fixture);
- the CLI as a subprocess and what a run leaves: `datagen` (`datagen_calls`: several calls
  in one subprocess), `synthesised`, `task_rows` and `exported_tasks` (one task-synthesis
  run of pages of our own, shared by the files that read it), `rows`, `read`, `check_dataset`,
  `sites_pipeline`, `each_task_once`;
- a few pieces of test data and their readers: `shard_stats` (a marker's stats),
  `race` (simultaneous output claims),
  `EMBEDDED` (IPv6 forms carrying a non-public IPv4), `dockerfile` (the worker image's steps).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import functools
import inspect
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from datagen.config import PipelineConfig, parse_pipeline
from datagen.records import Element, Observation

if TYPE_CHECKING:
    from datagen.browser.host import BrowserHost
    from datagen.pipeline import EpisodeOutcome, LocalRunner, ShardContext, ShardRun
    from datagen.pipeline.context import Hosts
    from datagen.records import ShardResult, TaskSpec
    from datagen.runtime.plugin import BrowserPlugin
    from datagen.sink.storage import Storage
    from datagen.source.serve import SiteServer

T = TypeVar("T")
Row = dict[str, Any]

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
PAGES = FIXTURES / "pages"
# The default run's longest test files (`-m "not slow and not soak"`), longest first, each about
# 10 s or more on a quiet 2-core machine: most are one to five tests around a whole run. Under
# scripts/test.sh's xdist workers these start first and the many short files fill in after
# them, so the run does not end on one long file while the other workers idle. Ordered by each
# file's summed test time in two quiet default runs (2026-11-29, issue 44 item 7: two and three
# workers, averaged), after test_sites shared one page (75 s to 29). A file renamed here fails
# tests/unit/test_suite_order.py. test_synth_runwide makes the synthesis run that
# test_synth_transient and test_synth_count then read (`synthesised`): only it is here, so the
# other two come late, the run long made, not waiting on its lock.
LONG_FILES = (
    "tests/integration/test_hosts_hostile.py",
    "tests/integration/test_task_synthesis.py",
    "tests/integration/test_real_pages.py",
    "tests/integration/test_verify_site.py",
    "tests/integration/test_export.py",
    "tests/integration/test_hostile.py",
    "tests/integration/test_walls_consent.py",
    "tests/integration/test_output_reach.py",
    "tests/integration/test_security.py",
    "tests/integration/test_control_names.py",
    "tests/integration/test_hostile_floods.py",
    "tests/integration/test_synth_runwide.py",
    "tests/integration/test_sites.py",
    "tests/integration/test_training.py",
    "tests/integration/test_network_failures.py",
    "tests/integration/test_engine_url.py",
    "tests/integration/test_egress_udp.py",
    "tests/integration/test_dashboard.py",
    "tests/integration/test_explore_completes.py",
    "tests/integration/test_engine_garbage.py",
    "tests/integration/test_step_descriptions.py",
    "tests/integration/test_page_memory.py",
    "tests/integration/test_browser.py",
    "tests/integration/test_verify.py",
    "tests/integration/test_verify_sealed.py",
    "tests/integration/test_synth_reword.py",
    "tests/integration/test_hosts.py",
    "tests/integration/test_settle_calm.py",
    "tests/integration/test_stragglers.py",
    "tests/integration/test_bad_urls.py",
    "tests/integration/test_scope.py",
)
DOCKERFILE = REPO / "deploy" / "Dockerfile"
TABLES = ("episodes", "steps", "grounding", "rejects")
ADDED_TABLES = ("tasks",)  # written only by runs with the stage that fills it
# Chromium's switches for a test's own browser (an oracle beside datagen's): root needs no
# sandbox, and the rest keep it off the closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


class DeadPort:
    """A loopback TCP port that refuses every connection for as long as this is open.

    A socket holds it bound and never listens: Linux answers a connection to a bound,
    non-listening port with a reset (refused), and no one else can bind the port meanwhile,
    neither a server asking for any free port nor one asking for this one (this socket sets
    neither SO_REUSEADDR nor SO_REUSEPORT, so theirs conflict with it). A port found free and
    released, as `closed_port` once gave, was taken by a worker's bundled-site server before a
    run reached its dead link: the link became an episode on a directory listing."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._sock.bind(("127.0.0.1", 0))
            self.port = int(self._sock.getsockname()[1])
            self.check()
        except BaseException:
            self._sock.close()
            raise

    def check(self) -> None:
        """Connect to the port: refused, or the AssertionError says what answered instead."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10):
                pass
        except ConnectionRefusedError:
            return
        except OSError as exc:
            raise AssertionError(f"127.0.0.1:{self.port} was not refused: {exc!r}") from exc
        raise AssertionError(f"127.0.0.1:{self.port} accepted a connection: it is no dead link")

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> DeadPort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@functools.cache
def _dead_port() -> DeadPort:
    port = DeadPort()
    atexit.register(port.close)  # held for the whole test session, by this process
    return port


def closed_port() -> int:
    """A loopback port that refuses connections for the rest of the test session (one
    `DeadPort`, shared by every test of this process), checked refused again at each call.
    For a port a test's own server will bind, take `datagen.engine.sim.server.free_port`."""
    port = _dead_port()
    port.check()
    return port.port


# How long a test waits for something a page, a browser or a server is to do before it fails:
# that long only when it never happens (each wait ends at the event), and far past what a
# loaded 2-core machine needs.
WAIT_S = 60.0


async def eventually(
    done: Callable[[], object | Awaitable[object]], within_s: float = WAIT_S, every_s: float = 0.05
) -> bool:
    """Whether `done()` (sync or async) became true within `within_s`, polled every `every_s`:
    a test waits for the event it then asserts on (a request blocked, a renderer gone), not for
    a fixed time that a loaded machine may overrun."""
    deadline = time.monotonic() + within_s
    while True:
        answer = done()
        if inspect.isawaitable(answer):
            answer = await answer
        if answer:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(every_s)


def until(done: Callable[[], object], within_s: float = WAIT_S, every_s: float = 0.05) -> bool:
    """`eventually` for a thread with no event loop: whether `done()` became true in time."""
    deadline = time.monotonic() + within_s
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(every_s)
    return True


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


class ReadyPlugin(Protocol):
    """A `BrowserPlugin` set up outside Dask: its browser and site server are started, so
    `host` and `sites` are never None (the plugin's own attributes are optional until setup)."""

    config: PipelineConfig

    @property
    def host(self) -> BrowserHost: ...

    @property
    def sites(self) -> SiteServer: ...

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T: ...

    def where(self) -> str: ...


@contextlib.contextmanager
def set_up(plugin: BrowserPlugin) -> Iterator[ReadyPlugin]:
    """A BrowserPlugin set up outside Dask (its browser, loop and site server), torn down after."""
    plugin.setup(worker=None)
    try:
        assert plugin.host is not None and plugin.sites is not None  # setup raised otherwise
        yield cast(ReadyPlugin, plugin)
    finally:
        plugin.teardown(worker=None)


class Local:
    """datagen's local runner (`datagen.pipeline.LocalRunner`) on a set-up plugin, for test code
    off its loop: each call runs there, on the plugin's browser (`host`: another one started on
    that loop; `fresh_browser`: one of the runner's own, closed after), `site://` URLs on the
    plugin's site server, the config's engine roles started when it calls a model, written to
    the config's output (`storage`: elsewhere), as run "r" (`run_id`)."""

    def __init__(self, plugin: ReadyPlugin) -> None:
        self.plugin = plugin

    def runner(
        self,
        config: PipelineConfig,
        *,
        run_id: str = "r",
        host: BrowserHost | None = None,
        fresh_browser: bool = False,
        storage: Storage | None = None,
        hosts: Hosts | None = None,
    ) -> LocalRunner:
        """A runner of `config` on the plugin's browser (or as said); not started."""
        from datagen.pipeline import LocalRunner

        return LocalRunner(
            config,
            run_id=run_id,
            host=None if fresh_browser else host if host is not None else self.plugin.host,
            storage=storage,
            hosts=hosts,
            resolve_url=self.plugin.sites.resolve,
        )

    def context(self, config: PipelineConfig, **given: Any) -> ShardContext:
        """The runner's shard context, for a test calling the pipeline's parts itself (on a
        browser given, not a fresh one: nothing is started)."""
        return self.runner(config, **given).context

    def run(
        self,
        config: PipelineConfig,
        shard: int,
        tasks: list[TaskSpec],
        timeout: float | None = None,
        **given: Any,
    ) -> ShardRun:
        """One shard of `tasks`, its parts written and its marker last; its stats and rows."""
        runner = self.runner(config, **given)
        return self.plugin.run(_started(runner, lambda: runner.run(shard, tasks)), timeout)

    def episode(
        self,
        config: PipelineConfig,
        task: TaskSpec,
        repeat: int = 0,
        timeout: float | None = None,
        **given: Any,
    ) -> EpisodeOutcome:
        """One episode of `task` outside a shard (nothing written)."""
        runner = self.runner(config, **given)
        return self.plugin.run(_started(runner, lambda: runner.episode(task, repeat)), timeout)


async def _started(runner: LocalRunner, work: Callable[[], Awaitable[T]]) -> T:
    async with runner:
        return await work()


# The CLI as a terminal starts it, whatever the test process's own Ctrl-C state: Ctrl-C
# delivered (not blocked) and raising KeyboardInterrupt (not ignored). A child inherits its
# parent's ignored and blocked signals; a test that sends SIGINT must not depend on what the
# pytest process (its libraries, the tests before) left there.
AS_FROM_A_TERMINAL = (
    "import runpy, signal, sys; "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'datagen'; runpy.run_module('datagen', run_name='__main__', alter_sys=True)"
)
CLI_FROM_A_TERMINAL = [sys.executable, "-c", AS_FROM_A_TERMINAL]


def sigint_state(pid: int) -> str:
    """Whether SIGINT is blocked or ignored in a process (from /proc: a diagnosis, asserted
    nowhere)."""
    bit = 1 << (2 - 1)  # SIGINT is 2
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "gone"
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    blocked = int(fields.get("SigBlk", "0").strip(), 16) & bit
    ignored = int(fields.get("SigIgn", "0").strip(), 16) & bit
    return f"blocked={bool(blocked)} ignored={bool(ignored)}"


def datagen(
    *args: str,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m datagen ARGS` as a subprocess, its output captured (a wide terminal, so no
    line of the summary is wrapped)."""
    return subprocess.run(
        [sys.executable, "-m", "datagen", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**(env if env is not None else os.environ), "COLUMNS": "200"},
        cwd=cwd,
    )


# Several CLI calls, one after the other, in one process: each runs `datagen.cli.main` as
# `python -m datagen` does, its stdout and stderr its own, its exit status from its SystemExit;
# an exception that escapes is printed as Python prints it ("Traceback ...") with status 1.
_CALLS = """
import contextlib, io, json, sys, traceback
from datagen.cli import main
answers = []
for args in json.loads(sys.stdin.read()):
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.argv = ["datagen", *args]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except BaseException:
            traceback.print_exc()
            code = 1
    answers.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(answers))
"""


def datagen_calls(
    calls: list[list[str]], timeout: float = 300
) -> list[subprocess.CompletedProcess[str]]:
    """`datagen ARGS` for each of `calls` in one subprocess (one interpreter and one import of
    datagen, not one per call), each answer as `datagen` would give it: for a test of what the
    CLI says and returns, not of a process's own life (signals, exit on its own). `timeout`
    bounds them all: a call that hangs fails every one."""
    done = subprocess.run(
        [sys.executable, "-c", _CALLS],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.splitlines()[-1])  # the last line: what a call printed first
    return [
        subprocess.CompletedProcess(["datagen", *args], code, out, err)
        for args, (code, out, err) in zip(calls, answers, strict=True)
    ]


# Pages of our own that one scripted synthesis run serves, each read by a test file of its own
# (test_synth_runwide, test_synth_transient, test_synth_count). Their tasks start on different
# pages, so none decides another's (run-wide specificity compares episodes of one start only).
# One run, not three: each was a `datagen run` of its own (interpreter, cluster, browser) and an
# export, about 15-20 s apiece on a quiet 2-core machine (issue 44 item 7).
SYNTH_PAGES = (
    FIXTURES / "synth_runwide" / "list",
    FIXTURES / "synth_toast" / "draft",
    FIXTURES / "synth_count" / "basket",
)


def synthesised(factory: pytest.TempPathFactory) -> Path:
    """SYNTH_PAGES run scripted with task synthesis on, one task per shard, then `export -f
    tasks`: the output folder; `said.txt` beside it holds what the two commands printed. Run
    once per test session by the first file that asks, on either xdist worker: the others
    wait on a file lock in the session's temporary root, then read the same output."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's root, above each worker's own
    folder = root / "synth-pages"
    with (root / "synth-pages.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes
        if not (folder / "done").exists():  # a failed run is tried again, and fails again
            _synthesise(folder)
    return folder / "out"


def _synthesise(folder: Path) -> None:
    # one session, and the toast's page's toast gone 2.5 s after it shows (inside
    # replay.PERSIST_S): at 1.5 s, or beside another episode, a loaded machine's look after the
    # click came once the toast had gone
    shutil.rmtree(folder, ignore_errors=True)
    for site in SYNTH_PAGES:
        shutil.copytree(site, folder / "sites" / site.name)
    (folder / "p.yaml").write_text(
        "name: synth-pages\n"
        f"sources: [{{type: sites, dir: {folder / 'sites'}}}]\n"
        "browser: {viewport: {width: 1280, height: 800}, device_scale_factor: 1}\n"
        "policy: {type: scripted}\n"
        "annotation: {grounding: false, verify: {max_replays: 6}, tasks: {per_episode: 4}}\n"
        "cluster: {workers: 1, sessions_per_worker: 1}\n"
        "run: {seed: 0, max_steps: 3, tasks_per_shard: 1, repeats: 1}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out, said = folder / "out", ""
    for args in (["run", "p.yaml", "-o", str(out)], ["export", str(out), "-f", "tasks"]):
        done = subprocess.run([sys.executable, "-m", "datagen", *args], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        said += done.stdout
    (folder / "said.txt").write_text(said)
    (folder / "done").touch()


def task_rows(out: Path, task_id: str) -> dict[str, dict[str, Any]]:
    """The raw `tasks` table of a local output: the rows of one task's episodes, by effect."""
    rows = [r for f in sorted(out.glob("tasks/*.parquet")) for r in pq.read_table(f).to_pylist()]
    return {r["effect"]: r for r in rows if r["task_id"] == task_id}


def exported_tasks(out: Path, site: str) -> list[dict[str, Any]]:
    """The task list `export -f tasks` wrote: one site's tasks."""
    listed = (out / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    return [t for t in map(json.loads, listed) if t["site"] == site]


def rows(out: Path, table: str) -> list[Row]:
    """Every row of one table of a local output."""
    return cast(list[Row], ds.dataset(out / table, format="parquet").to_table().to_pylist())


def read(out: Path, table: str, shard: int = 3) -> list[Row]:
    """The rows of one shard's part of a table."""
    return cast(list[Row], pq.read_table(out / table / f"part-{shard:05d}.parquet").to_pylist())


def check_dataset(out: Path, width: int, height: int) -> dict[str, list[Row]]:
    """What every run's output must satisfy; returns the tables' rows."""
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] and not manifest["shards"]["missing"]
    # the tables of every output, and `tasks` where task synthesis was on (annotation.tasks)
    present = [*TABLES, *(t for t in ADDED_TABLES if (out / t).is_dir())]
    tables = {t: rows(out, t) for t in present}
    for table, table_rows in tables.items():
        assert manifest["tables"][table]["rows"] == len(table_rows)
        assert len({r["run_id"] for r in table_rows} | {manifest["run_id"]}) == 1
        assert all(r["browser_version"].startswith("chromium/") for r in table_rows)
    assert sum(e["n_steps"] for e in tables["episodes"]) == len(tables["steps"])
    for step in tables["steps"]:
        image = Image.open(io.BytesIO(step["screenshot"]["bytes"]))
        image.load()  # decodes the whole image, not just its header
        assert image.size == (width, height) == (step["image_width"], step["image_height"])
        if step["x_px"] is not None:
            assert 0 <= step["x_px"] < width and 0 <= step["y_px"] < height
    for g in tables["grounding"]:
        x1, y1, x2, y2 = g["bbox_px"]
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height and g["referring_expression"]
    card = yaml.safe_load((out / "README.md").read_text().split("---")[1])
    info = {c["config_name"]: c for c in card["dataset_info"]}
    filled = [t for t in present if tables[t]]  # a table without rows has no config
    assert list(info) == filled
    for table in filled:
        assert info[table]["splits"][0]["num_examples"] == len(tables[table])
    assert {"name": "screenshot", "dtype": "image"} in info["steps"]["features"]
    assert [c["data_files"] for c in card["configs"]] == [f"{t}/*.parquet" for t in filled]
    assert [c["config_name"] for c in card["configs"] if c.get("default")] == ["steps"]
    umask = process_umask()  # every file as readable as the umask lets any new file be
    modes = {p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()}
    assert modes == {0o666 & ~umask}, (oct(umask), sorted(map(oct, modes)))
    return tables


def process_umask() -> int:
    """This process's umask (the CLI it starts inherits it), read without changing it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise AssertionError("no Umask in /proc/self/status")


def sites_pipeline(folder: Path, limit: int) -> Path:
    """A pipeline file over the bundled sites: `limit` tasks, one task and one step per shard,
    one worker of two sessions."""
    spec = {
        "name": "integrity",
        "sources": [{"type": "sites"}],
        "cluster": {"workers": 1, "sessions_per_worker": 2, "dashboard": "127.0.0.1:0"},
        "run": {"max_steps": 1, "tasks_per_shard": 1, "limit": limit, "seed": 3},
        "output": {"uri": "unused"},
    }
    path = folder / "integrity.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def each_task_once(out: Path, tasks: int) -> None:
    """A complete output in which each of `tasks` tasks ended exactly once (as an episode or a
    task/episode reject), every table's rows as the manifest counts them."""
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] and manifest["shards"]["committed"] == tasks
    for table, info in manifest["tables"].items():
        assert info["rows"] == len(rows(out, table)), table
    ended = Counter(e["task_id"] for e in rows(out, "episodes")) + Counter(
        r["task_id"] for r in rows(out, "rejects") if r["stage"] in ("task", "episode")
    )
    assert len(ended) == tasks and set(ended.values()) == {1}, ended


CLAIMERS = 100


def shard_stats(shard: int, **counts: int) -> ShardResult:
    """A shard's stats for a marker written by a test: zero everywhere but `counts`."""
    from datagen.records import ShardResult

    zero = dict.fromkeys(("tasks", "episodes", "steps", "grounding", "rejects", "solved"), 0)
    return ShardResult(shard=shard, reject_reasons={}, seconds=0.0, **{**zero, **counts})


def race(storage: Storage, run_ids: list[str]) -> list[bool | str]:
    """Every run id claims at the same moment (a barrier): False = claimed it, True = resumed
    it, else the OutputError's message."""
    from datagen.errors import OutputError
    from datagen.sink.writer import claim_output

    barrier = threading.Barrier(len(run_ids))

    def claim(run_id: str) -> bool | str:
        barrier.wait()
        try:
            return claim_output(storage, run_id, {"name": run_id})
        except OutputError as exc:
            return str(exc)

    with ThreadPoolExecutor(len(run_ids)) as pool:
        return list(pool.map(claim, run_ids))


# IPv6 forms that carry a non-public IPv4 (the URL guard blocks them all).
EMBEDDED = {
    "nat64": "64:ff9b::a9fe:a9fe",  # 64:ff9b::169.254.169.254
    "nat64-local-use": "64:ff9b:1::808:808",  # RFC 8215: never public, whatever it carries
    "ipv4-compatible": "::127.0.0.1",
    "ipv4-translated": "::ffff:0:a9fe:a9fe",  # SIIT
    "ipv4-mapped": "::ffff:169.254.169.254",
    "6to4": "2002:a9fe:a9fe::",
    "teredo": "2001:0:4136:e378:8000:63bf:5601:56fe",  # client 169.254.169.1, stored inverted
    "site-local": "fec0::1",
}


def dockerfile() -> list[tuple[str, str]]:
    """The worker image's Dockerfile as (INSTRUCTION, arguments) in order: comments dropped,
    continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        word, _, rest = pending.strip().partition(" ")
        out.append((word, rest.strip()))
        pending = ""
    assert not pending, "the last instruction ends with a continuation"
    return out


def button(index: int = 0, x: float = 10, y: float = 20, width: float = 100) -> Element:
    """An unnamed, hit-tested button element at (x, y) CSS px, 30 px high, for tests of what
    reads elements (merge other fields over its `model_dump()`)."""
    base = {
        "index": index,
        "tag": "button",
        "role": "button",
        "name": "",
        "selector": f"#e{index}",
        "box": {"x": x, "y": y, "width": width, "height": 30},
        "hit": True,
    }
    return Element.model_validate(base)


def observation(
    elements: Iterable[Element] = (),
    *,
    viewport: tuple[int, int] = (800, 600),
    scale: float = 1.0,
    url: str = "http://127.0.0.1/",
    title: str = "t",
    screenshot: bytes = b"",
    image_format: str = "jpeg",
    observe_ms: float = 0.0,
    settle_ms: float = 0.0,
) -> Observation:
    """An observation of `elements` on a page of `viewport` CSS px at device scale `scale`
    (its screenshot is viewport × scale px), for tests of what reads observations."""
    width, height = viewport
    return Observation(
        url=url,
        title=title,
        screenshot=screenshot,
        image_format=image_format,
        image_width=int(width * scale),
        image_height=int(height * scale),
        viewport_width=width,
        viewport_height=height,
        device_scale_factor=scale,
        elements=tuple(elements),
        observe_ms=observe_ms,
        settle_ms=settle_ms,
    )
