"""Text from users' files and from pages reaches the operator's terminal inert: Rich markup
(`[/]`, `[link=…]`), ANSI escapes and control characters in task ids, paths, keys, URLs and
page titles change nothing and raise nothing. And the checks of item 5 of issue 25 that
`validate` makes before anything starts: task id rules, credentials in output URLs, the
dashboard's address, an empty output URI, numeric IPv4 forms, an output it cannot write."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from datagen.browser.guard import UrlGuard
from datagen.cli import app
from datagen.observe.safe import PlainRichHandler, plain, safe

ESC = "\x1b"
OSC8 = "\x1b]8;;file:///etc/passwd\x1b\\click\x1b]8;;\x1b\\"
MARKUP = ["a[/]b", "[link=file:///etc/passwd]x[/link]", "[bold red]loud[/]", "tail\\"]


def render(text: str, markup: bool = True) -> str:
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=300, color_system="truecolor").print(
        text, markup=markup, highlight=False
    )
    return buf.getvalue()


@pytest.mark.parametrize("text", [*MARKUP, OSC8, "\x1b[31mred\x1b[0m", "bell\x07 nul\x00 \x9b2J"])
def test_safe_text_renders_as_written_without_escapes(text: str) -> None:
    shown = render(safe(text))
    assert plain(text) in shown  # the characters, as written (markup not interpreted)
    assert ESC not in shown.replace("\x1b[0m", "").strip() or "\x1b]8" not in shown
    assert "\x1b]8" not in shown and "\x07" not in shown and "\x00" not in shown


def test_plain_keeps_lines_and_drops_sequences() -> None:
    assert plain("one\n\x1b[31mtwo\x1b[0m\r\n" + OSC8) == "one\ntwo\nclick"
    assert plain("a\nb", newlines=False) == "a b"
    assert plain("\u202eevil") == "evil"  # a bidirectional override reorders what is shown


def test_log_messages_are_plain(capsys: pytest.CaptureFixture[str]) -> None:
    handler = PlainRichHandler(show_path=False)
    handler.console = Console(file=io.StringIO(), width=300, force_terminal=True)
    logger = logging.getLogger("test-plain")
    logger.addHandler(handler)
    try:
        logger.warning("renderer crashed on %s, title %s", "http://x/[/]" + OSC8, "[link=a]t")
    finally:
        logger.removeHandler(handler)
    shown = handler.console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b]8;;file" not in shown and "\x1b]8;;" not in shown
    words = plain(shown)  # without Rich's own colours
    assert "http://x/[/]click" in words and "[link=a]t" in words


def pipeline(tmp_path: Path, tasks: list[dict[str, Any]] | None = None, **sections: Any) -> Path:
    """A pipeline file with a JSONL task list (the given tasks, or one plain task)."""
    listing = tmp_path / "tasks.jsonl"
    tasks = tasks or [{"id": "t1", "start_url": "https://example.com/", "instruction": "x"}]
    listing.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    data: dict[str, Any] = {
        "name": "t",
        "sources": [{"type": "jsonl", "path": str(listing)}],
        "output": {"uri": str(tmp_path / "out")},
        "policy": {"type": "scripted"},
        "cluster": {"dashboard": "127.0.0.1:0"},
    }
    data.update(sections)
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    return path


def validate(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def no_control(text: str) -> None:
    assert ESC not in text and "\x07" not in text and "\x00" not in text
    assert "Traceback" not in text and "MarkupError" not in text


def test_task_ids_and_urls_with_markup_change_nothing(tmp_path: Path) -> None:
    """Ids with markup are valid ids; the plan's warnings name their blocked start URLs."""
    tasks = [
        {"id": task_id, "start_url": f"http://10.0.0.{i}/[/]x", "instruction": "x"}
        for i, task_id in enumerate(MARKUP, start=1)
    ]
    code, output = validate(pipeline(tmp_path, tasks))
    assert code == 0, output
    assert ("10.0.0.1" in output and "[/]x" in " ".join(output.split())) or "public" in output
    no_control(output)


@pytest.mark.parametrize(
    ("task_id", "said"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("a\x00b", "control character"),
        ("a\nb", "control character"),
        ("\x1b]8;;file:///etc/passwd\x1b\\x", "control character"),
        ("x" * 10_000, "10,000 characters"),
    ],
)
def test_bad_task_ids_are_refused_with_the_line(tmp_path: Path, task_id: str, said: str) -> None:
    tasks = [
        {"id": "ok", "start_url": "https://example.com/", "instruction": "x"},
        {"id": task_id, "start_url": "https://example.com/", "instruction": "x"},
    ]
    code, output = validate(pipeline(tmp_path, tasks))
    flat = " ".join(output.split())
    assert code == 2 and said in flat and "tasks.jsonl:2" in flat.replace(" ", "")
    no_control(output)


def test_a_duplicate_task_id_names_both_lines(tmp_path: Path) -> None:
    task = {"id": "[/]dup", "start_url": "https://example.com/", "instruction": "x"}
    code, output = validate(pipeline(tmp_path, [task, {**task, "id": "other"}, task]))
    flat = " ".join(output.split())
    assert code == 2 and "duplicate task id '[/]dup' (first at line 1)" in flat
    assert "tasks.jsonl:3" in flat.replace(" ", "")


def test_markup_in_a_key_and_a_path_is_shown_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "a[link=x]b[" / "]c"  # a path holding `[/]`
    folder.mkdir(parents=True)
    path = pipeline(folder, None, **{"[/]run": {"max_steps": 2}})
    code, output = validate(path)
    flat = " ".join(output.split())
    assert code == 2 and "[/]run: unknown key" in flat
    missing = pipeline(folder)
    text = missing.read_text()
    missing.write_text(text.replace("tasks.jsonl", "[/]nope\x1b[31m.jsonl"))  # raw: not YAML
    code, output = validate(missing)
    assert code == 2 and "control character U+001B" in output
    no_control(output)
    missing.write_text(text.replace("tasks.jsonl", "[/]nope\\u001b[31m.jsonl"))  # escaped
    code, output = validate(missing)
    assert code == 2 and "[/]nope.jsonl:tasklistnotfound" in "".join(output.split())
    no_control(output)


def test_an_empty_output_uri_is_refused_before_anything_starts(tmp_path: Path) -> None:
    code, output = validate(pipeline(tmp_path, output={"uri": ""}))
    assert code == 2 and "output.uri" in output and "empty" in output


@pytest.mark.parametrize(
    ("output", "said"),
    [
        ({"uri": "s3://AKIAUSER:hunter2@bucket/p"}, "holds credentials"),
        (
            {"uri": "s3://bucket/p", "endpoint_url": "http://AKIAUSER:hunter2@127.0.0.1:9/"},
            "holds credentials",
        ),
    ],
)
def test_credentials_in_output_urls_are_refused_unprinted(
    tmp_path: Path, output: dict[str, str], said: str
) -> None:
    code, text = validate(pipeline(tmp_path, output=output))
    assert code == 2 and said in " ".join(text.split())
    assert "hunter2" not in text and "AKIAUSER" not in text


@pytest.mark.parametrize(
    ("cluster", "ok"),
    [
        ({"dashboard": ":0"}, False),
        ({"dashboard": "0.0.0.0:0"}, False),
        ({"dashboard": "0.0.0.0:0", "expose": True}, True),
        ({"dashboard": "127.0.0.1:0"}, True),
        ({"dashboard": "localhost:0"}, True),
    ],
)
def test_a_dashboard_off_loopback_needs_expose(
    tmp_path: Path, cluster: dict[str, Any], ok: bool
) -> None:
    code, output = validate(pipeline(tmp_path, cluster=cluster))
    if ok:
        assert code == 0, output
    else:
        assert code == 2 and "cluster.expose: true" in " ".join(output.split())


@pytest.mark.parametrize("host", ["2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "10.1"])
def test_the_static_check_reads_numeric_ipv4_as_the_guard_does(host: str) -> None:
    reason = UrlGuard().check_static(f"http://{host}/latest/meta-data/")
    assert reason is not None and "not a public address" in reason


def test_validate_warns_of_a_numeric_metadata_address(tmp_path: Path) -> None:
    task = {"id": "t", "start_url": "http://2852039166/latest/", "instruction": "x"}
    code, output = validate(pipeline(tmp_path, [task]))
    flat = " ".join(output.split())
    # the host as Chromium reads it (issue 42, item 6), and the allow entry the guard matches
    assert code == 0 and "169.254.169.254 is not a public address" in flat
    assert 'add "169.254.169.254" to browser.allow' in flat


def test_an_output_that_lists_but_cannot_be_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import ClientError

    import datagen.sink.probe as probe

    def denied(storage: object) -> probe.Probe:
        error = {"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}
        raise ClientError(error, "PutObject")

    monkeypatch.setattr(probe, "s3_listing_problem", lambda output: None)
    monkeypatch.setattr(probe, "place", denied)
    code, output = validate(pipeline(tmp_path, output={"uri": "s3://bucket/run"}))
    flat = " ".join(output.split())
    assert code == 2 and "cannot write to s3://bucket/run" in flat and "AccessDenied" in flat
    assert "s3:PutObject" in flat
    no_control(output)


def test_credentials_in_urls_of_reject_details_and_blocks_are_redacted() -> None:
    from datagen.browser.hostile import PageEvents
    from datagen.browser.navigation import NavigationFailed
    from datagen.config.urls import strip_credentials

    said = "Page.goto: net::ERR_NAME_NOT_RESOLVED at https://bob:hunter2@x.invalid/p?q=a@b"
    assert strip_credentials(said).endswith("at https://***@x.invalid/p?q=a@b")
    assert "hunter2" not in str(NavigationFailed(f"https://bob:hunter2@x.invalid/: {said}"))
    events = PageEvents()
    events.block("blocked", "http://bob:hunter2@10.0.0.1/")
    assert events.blocked == ["blocked: http://***@10.0.0.1/"]
