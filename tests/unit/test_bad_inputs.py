"""A table of bad pipeline files and bad task lists, as a careless user writes them.

Each goes through `datagen run` (Typer's CliRunner, in this process) and must end with exit
code 2 and one `error: … fix: …` message that names the key or the file (and line or byte),
with no traceback, and without starting any Dask or browser process: a thread watches this
process's children for the whole call.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from datagen.cli import app
from tests.helpers import closed_port

runner = CliRunner()

GOOD = "sources: [{type: sites}]\noutput: {uri: out}\n"
FORBIDDEN_CHILDREN = ("chrom", "python", "dask", "node")  # browsers, Dask workers, Playwright


@dataclass(frozen=True)
class Case:
    name: str
    expect: str  # a substring of the message: the key, file:line or byte named
    pipeline: str | bytes | Callable[[Path], str | bytes] = GOOD
    files: Callable[[Path], object] | None = None  # writes task lists and other files


def with_key(section: str) -> str:
    return GOOD + section


def bomb() -> str:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return GOOD + "\n".join(levels) + "\n"


def jsonl(body: bytes | str, name: str = "tasks.jsonl") -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        data = body.encode() if isinstance(body, str) else body
        (folder / name).write_bytes(data)

    return write


def jsonl_pipeline(kind: str = "jsonl", name: str = "tasks.jsonl") -> str:
    return f"sources: [{{type: {kind}, path: {name}}}]\noutput: {{uri: out}}\n"


TASK = '{"id": "t1", "start_url": "https://example.org/", "instruction": "look"}\n'


def not_executable(folder: Path) -> None:
    path = folder / "chrome.txt"
    path.write_text("not a program\n")
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def fake_browser(folder: Path) -> None:
    # not named like a browser: the check runs it (--version) while ChildWatch looks on, and a
    # name holding "chrom" read as a browser started whenever a poll caught it (a loaded machine)
    path = folder / "fake-browser"
    path.write_text("#!/bin/sh\necho 'Firefox 128.0'\n")
    path.chmod(0o755)


def _folder(path: Path) -> str:
    """Make a folder where the pipeline file goes; nothing is written into it."""
    path.mkdir()
    return ""


PIPELINES = [
    Case("non-UTF-8 bytes", "byte 53 (line 3) is not UTF-8", GOOD.encode() + b"name: caf\xe9\n"),
    Case("binary garbage", "NUL byte", b"\x7fELF\x02\x01\x01\x00\x00\x00binary"),
    Case("UTF-16 file", "byte 0", GOOD.encode("utf-16")),
    Case("a folder, not a file", "is a folder", lambda d: _folder(d / "p.yaml")),
    Case("empty file", "must be a YAML mapping", ""),
    Case("a YAML list", "must be a YAML mapping", "- a\n- b\n"),
    Case(
        "YAML syntax", "not valid YAML at line 4", "sources: [{type: sites}]\noutput:\n  uri: [\n"
    ),
    Case("duplicate top-level key", "key 'output' appears twice", GOOD + "output: {uri: other}\n"),
    Case(
        "duplicate nested key",
        "key 'headless' appears twice",
        with_key("browser:\n  headless: true\n  headless: false\n"),
    ),
    Case("alias bomb", "aliases (*name) expand to more than", bomb()),
    Case("unknown key", "cluster.workerz: unknown key", with_key("cluster: {workerz: 2}\n")),
    Case("no sources", "sources: required key is missing", "output: {uri: out}\n"),
    Case("no output", "output: required key is missing", "sources: [{type: sites}]\n"),
    Case("empty sources", "sources", "sources: []\noutput: {uri: out}\n"),
    Case("unknown source type", "unknown type 'csv'", "sources: [{type: csv}]\noutput: {uri: o}\n"),
    Case("source without type", "no 'type:' key", "sources: [{path: x}]\noutput: {uri: o}\n"),
    Case(
        "retries 10**20", "cluster.retries", with_key("cluster: {retries: 100000000000000000000}\n")
    ),
    Case("infinite timeout", "run.episode_timeout_s", with_key("run: {episode_timeout_s: .inf}\n")),
    Case("NaN timeout", "run.step_timeout_s", with_key("run: {step_timeout_s: .nan}\n")),
    Case(
        "negative timeout",
        "browser.navigation_timeout_s",
        with_key("browser: {navigation_timeout_s: -1}\n"),
    ),
    Case(
        "huge timeout", "browser.action_timeout_s", with_key("browser: {action_timeout_s: 1e12}\n")
    ),
    Case("zero tasks per shard", "run.tasks_per_shard", with_key("run: {tasks_per_shard: 0}\n")),
    Case(
        "s3 with one slash",
        "output.uri: 's3:/bucket/prefix' looks like a s3: URI",
        "sources: [{type: sites}]\noutput: {uri: 's3:/bucket/prefix'}\n",
    ),
    Case(
        "S3 upper case",
        "looks like a S3: URI",
        "sources: [{type: sites}]\noutput: {uri: 'S3://bucket/p'}\n",
    ),
    Case(
        "s3a scheme",
        "looks like a s3a: URI",
        "sources: [{type: sites}]\noutput: {uri: 's3a://bucket/p'}\n",
    ),
    Case(
        "s3 without bucket", "has no bucket", "sources: [{type: sites}]\noutput: {uri: 's3://'}\n"
    ),
    Case(
        "output is a file",
        "output.uri",
        "sources: [{type: sites}]\noutput: {uri: afile}\n",
        lambda d: (d / "afile").write_text("x") and None,
    ),
    Case(
        "output under a file",
        "is a file, so",
        "sources: [{type: sites}]\noutput: {uri: afile/sub}\n",
        lambda d: (d / "afile").write_text("x") and None,
    ),
    Case(
        "executable missing",
        "browser.executable",
        with_key("browser: {executable: /nope/chrome}\n"),
    ),
    Case(
        "executable is not a browser",
        "is not Chromium",
        with_key("browser: {executable: /bin/echo}\n"),
    ),
    Case("executable fails", "is not Chromium", with_key("browser: {executable: /bin/false}\n")),
    Case(
        "executable says Firefox",
        "Firefox",
        with_key("browser: {executable: fake-browser}\n"),
        fake_browser,
    ),
    Case(
        "executable not executable",
        "browser.executable",
        with_key("browser: {executable: chrome.txt}\n"),
        not_executable,
    ),
    Case("executable is a folder", "browser.executable", with_key("browser: {executable: /tmp}\n")),
    Case(
        "address without port", "cluster.address", with_key("cluster: {address: 'tcp://sched'}\n")
    ),
    Case(
        "address with http",
        "unknown protocol http://",
        with_key("cluster: {address: 'http://h:8786'}\n"),
    ),
    Case(
        "unreachable scheduler",
        "cannot reach the scheduler",
        lambda d: with_key(f"cluster: {{address: 'tcp://127.0.0.1:{closed_port()}'}}\n"),
    ),
    Case("dashboard not an address", "cluster.dashboard", with_key("cluster: {dashboard: abc}\n")),
    Case(
        "dashboard port out of range",
        "cluster.dashboard",
        with_key("cluster: {dashboard: ':99999'}\n"),
    ),
    Case(
        "dashboard on a foreign address",
        "cannot listen on 192.0.2.1:8787",
        with_key("cluster: {dashboard: '192.0.2.1:8787'}\n"),
    ),
    Case("allow entry ::::", "'::::'", with_key("browser: {allow: ['::::']}\n")),
    Case(
        "allow entry http://",
        "'http://'",
        with_key("browser: {allow: ['ok.example', 'http://']}\n"),
    ),
    Case("allow entry *", "wildcards", with_key("browser: {allow: ['*']}\n")),
    Case("allow entry bad port", "port '80a'", with_key("browser: {allow: ['h.example:80a']}\n")),
    Case(
        "guard off with allow",
        "url_guard: false",
        with_key("browser: {url_guard: false, allow: [a.example]}\n"),
    ),
    Case(
        "a switch around the egress proxy",
        "'--proxy-bypass-list=*' would route the browser around the egress proxy",
        with_key("browser: {extra_args: ['--lang=fr', '--proxy-bypass-list=*']}\n"),
    ),
    Case(
        "no proxy at all",
        "'--no-proxy-server' would route",
        with_key("browser: {extra_args: ['--no-proxy-server']}\n"),
    ),
    Case("engine url ftp", "engine.url", with_key("engine: {url: 'ftp://h:8000'}\n")),
    Case("engine url bad port", "engine.url", with_key("engine: {url: 'http://h:99999/v1'}\n")),
    Case(
        "engine credentials twice",
        "carries user:password@ and engine.api_key",
        with_key("policy: {type: vlm}\nengine: {url: 'http://u:secret@h:8000', api_key: k}\n"),
    ),
    Case(
        "unset env var",
        "environment variable NOPE_NOT_SET",
        with_key("engine: {url: '${NOPE_NOT_SET}'}\n"),
    ),
    Case("base_dir in file", "base_dir", with_key("base_dir: /x\n")),
    Case(
        "viewport not a number",
        "browser.viewport.width",
        with_key("browser: {viewport: {width: wide}}\n"),
    ),
    Case("bad scope", "run.scope", with_key("run: {scope: 'ftp://x'}\n")),
    Case(
        "several type and range errors, each with its fix",
        "browser.viewport.width",
        with_key(
            "browser: {viewport: {width: 10, height: tall}, headless: maybe}\n"
            "run: {max_steps: -3, scope: 7}\ncluster: {workers: [2]}\n"
        ),
    ),
]

TASK_LISTS = [
    Case(
        "non-UTF-8 task list",
        "tasks.jsonl: byte 11 (line 1)",
        jsonl_pipeline(),
        jsonl(b'{"id": "caf\xe9"}\n'),
    ),
    Case("binary task list", "NUL byte", jsonl_pipeline(), jsonl(b"\x00\x01\x02garbage")),
    Case("UTF-16 task list", "tasks.jsonl: byte 0", jsonl_pipeline(), jsonl(TASK.encode("utf-16"))),
    Case(
        "task list is a folder",
        "is a folder",
        jsonl_pipeline(),
        lambda d: (d / "tasks.jsonl").mkdir(),
    ),
    Case("task list missing", "tasks.jsonl: task list not found", jsonl_pipeline()),
    Case(
        "bad JSON line", "tasks.jsonl:2: not valid JSON", jsonl_pipeline(), jsonl(TASK + "{oops\n")
    ),
    Case(
        "a line that is a list",
        "tasks.jsonl:1: each line must be a JSON object",
        jsonl_pipeline(),
        jsonl("[1, 2]\n"),
    ),
    Case(
        "missing fields",
        "tasks.jsonl:1: start_url",
        jsonl_pipeline(),
        jsonl('{"id": "a", "instruction": "x"}\n'),
    ),
    Case(
        "wrong type",
        "tasks.jsonl:1: max_steps",
        jsonl_pipeline(),
        jsonl(TASK.replace("}", ', "max_steps": "many"}')),
    ),
    Case("duplicate ids", "duplicate task id 't1'", jsonl_pipeline(), jsonl(TASK + TASK)),
    Case("only blank lines", "hold no tasks", jsonl_pipeline(), jsonl("\n\n  \n")),
    Case(
        "WebVoyager without ques",
        "lacks ques",
        jsonl_pipeline("webvoyager"),
        jsonl('{"web_name": "x", "id": "1", "web": "https://example.org"}\n'),
    ),
    Case(
        "URL list with a word",
        "urls.txt:2: 'example' is not a URL",
        jsonl_pipeline("urls", "urls.txt"),
        jsonl("https://a.example/\nexample\n", "urls.txt"),
    ),
    Case(
        "non-UTF-8 URL list",
        "urls.txt: byte 19 (line 2)",
        jsonl_pipeline("urls", "urls.txt"),
        jsonl(b"https://a.example/\n\xff\xfe\n", "urls.txt"),
    ),
]


class ChildWatch:
    """Records every descendant process of this one started while active."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._me = psutil.Process()
        self._own = self._me.cmdline()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                for child in self._me.children(recursive=True):
                    if child.pid in self._before:
                        continue  # already there (e.g. multiprocessing's resource tracker)
                    with contextlib.suppress(psutil.Error):
                        command = child.cmdline()
                        if command == self._own:
                            # forked, not exec'd yet (subprocess's child running the browser
                            # check, caught in that window on a loaded machine): what it execs
                            # shows on a later poll. Browsers, Dask workers and Playwright's
                            # node are all exec'd, never bare forks of this process.
                            continue
                        self.seen.add(" ".join(command)[:200] or child.name())
            except psutil.Error:
                pass
            self._stop.wait(0.005)

    def __enter__(self) -> ChildWatch:
        self._before = {child.pid for child in self._me.children(recursive=True)}
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_case(case: Case, folder: Path) -> tuple[int, str, set[str]]:
    if case.files is not None:
        case.files(folder)
    text = case.pipeline(folder) if callable(case.pipeline) else case.pipeline
    path = folder / "p.yaml"
    if not path.is_dir():
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    cwd = os.getcwd()
    os.chdir(folder)  # relative output folders and executables resolve here
    try:
        with ChildWatch() as watch:
            result = runner.invoke(app, ["run", str(path)])
    finally:
        os.chdir(cwd)
    return result.exit_code, result.output, watch.seen


def check(case: Case, folder: Path) -> None:
    code, output, children = run_case(case, folder)
    flat = " ".join(output.split())
    assert code == 2, f"exit {code}: {output}"
    assert "error:" in output, output
    assert "fix:" in flat, f"no fix: line: {output}"  # every bad file says how to put it right
    for entry in re.split(r"(?:^| )- (?=[\w.\[\]]+: )", flat)[1:]:  # each key's own line too
        assert "fix:" in entry, f"no fix: for {entry[:120]!r}: {output}"
    # the terminal's width may wrap a long path mid-word (a worker's own tmp folder under
    # pytest-xdist): the expected words are looked for with the whitespace taken out
    assert "".join(case.expect.split()) in "".join(output.split()), output
    assert "Traceback" not in output, output
    started = [c for c in children if any(name in c.lower() for name in FORBIDDEN_CHILDREN)]
    assert not started, f"started {started}"
    assert not (folder / "out").exists(), "an output folder was created"


@pytest.mark.parametrize("case", PIPELINES, ids=[c.name for c in PIPELINES])
def test_bad_pipeline_file(case: Case, tmp_path: Path) -> None:
    check(case, tmp_path)


@pytest.mark.parametrize("case", TASK_LISTS, ids=[c.name for c in TASK_LISTS])
def test_bad_task_list(case: Case, tmp_path: Path) -> None:
    check(case, tmp_path)


def test_the_table_is_large_enough() -> None:
    assert len(PIPELINES) >= 40 and len(TASK_LISTS) >= 12


@pytest.fixture(autouse=True)
def _no_engine_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("NOPE_NOT_SET", raising=False)
    yield
