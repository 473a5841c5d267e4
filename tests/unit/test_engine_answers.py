"""The engine client against a server of our own that answers garbage (issue 42, items 2 and 5):
a 200 that is not a completion is a failed request, retried like a 5xx and then an
`engine_error`; bodies are bounded in bytes and time; no redirect is followed, so nothing (the
prompt, the bearer key) goes to another origin; `datagen engine check` says one line per bad
answer, never a traceback. Servers on 127.0.0.1 (tests/hostile_engine.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.engine.client import BadAnswer, EngineClient, EngineRejected
from datagen.engine.metrics import MAX_METRICS_BYTES
from datagen.engine.serve import check_flags
from datagen.engine.wire import MAX_ANSWER_BYTES, MAX_INFO_BYTES
from tests.hostile_engine import (
    COMPLETION,
    GARBAGE,
    Answer,
    HostileEngine,
    body,
    drip,
    redirect,
    stream,
)

PAYLOAD = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
BAD_CHAT: dict[str, tuple[Answer, str]] = {  # the answer, what the error must say
    "cut_off": (GARBAGE["cut_off"], "cut off"),
    "html": (GARBAGE["html"], "HTML page"),
    "no_choices": (GARBAGE["no_choices"], "no choices"),
    "huge": (
        stream(MAX_ANSWER_BYTES + 2**20, head=b'{"choices": ['),
        f"more than {MAX_ANSWER_BYTES}",
    ),
    "drip": (drip(every_s=0.25), "within the time limit"),
    "choices_not_objects": (body({"choices": [1]}), "no choices"),
    "content_not_text": (body({"choices": [{"message": {"content": [1]}}]}), "not text"),
}


def chat(url: str, retries: int = 1, timeout_s: float = 1.0) -> Any:
    async def call() -> Any:
        async with EngineClient(url, retries=retries, backoff_s=0.01) as client:
            return await client.chat(PAYLOAD, timeout_s=timeout_s)

    return asyncio.run(call())


@pytest.mark.parametrize("kind", list(BAD_CHAT))
def test_an_answer_that_is_not_a_completion_is_retried_then_an_engine_error(kind: str) -> None:
    answer, says = BAD_CHAT[kind]
    with HostileEngine(chat=answer) as engine, pytest.raises(BadAnswer, match=says) as failure:
        chat(engine.url, retries=1)
    assert failure.value.reason == "engine_error"
    assert "; after 2 attempts" in str(failure.value)
    assert engine.hits["/v1/chat/completions"] == 2  # retried like a 5xx, and bounded


def test_a_good_answer_after_garbage_is_taken() -> None:
    with HostileEngine(chat=[GARBAGE["html"], GARBAGE["cut_off"], body(COMPLETION)]) as engine:
        result = chat(engine.url, retries=2)
    assert result.content == "{}" and result.attempts == 3 and result.prompt_tokens == 10


def test_a_redirect_on_chat_is_not_followed() -> None:
    with HostileEngine() as elsewhere:
        to = elsewhere.url + "/v1/chat/completions"
        with (
            HostileEngine(chat=redirect(to)) as engine,
            pytest.raises(EngineRejected, match="not followed") as failure,
        ):
            chat(engine.url, retries=3)
        assert failure.value.status == 307 and failure.value.kind == "redirect"
        assert engine.hits["/v1/chat/completions"] == 1  # not retried: resending cannot help
        assert elsewhere.hits["/v1/chat/completions"] == 0  # the prompt never went there


@pytest.mark.parametrize("path", ["/health", "/v1/models", "/metrics"])
def test_no_get_follows_a_redirect(path: str) -> None:
    with HostileEngine() as elsewhere:
        route = {"/health": "health", "/v1/models": "models", "/metrics": "metrics"}[path]
        with HostileEngine(**{route: redirect(elsewhere.url + path, 302)}) as engine:
            result = check(engine.url)
    assert result.exit_code == 1, result.output
    assert "redirects to" in result.output and "not followed" in result.output
    assert sum(elsewhere.hits.values()) == 0


def check(url: str) -> Any:
    return CliRunner().invoke(app, ["engine", "check", url, "--timeout", "5"])


BAD_MODELS: dict[str, tuple[Answer, str]] = {
    "no_data": (body({"object": "list"}), "no `data` list"),
    "html": (body(b"<html><body>login</body></html>", kind="text/html"), "HTML page"),
    "not_utf8": (body(b'{"data": ["\xff\xfe"]}'), "not UTF-8"),
    "deep": (body(b"[" * 200_000), "nested too deep"),
    "huge": (stream(MAX_INFO_BYTES + 2**20, head=b'{"data": ['), f"more than {MAX_INFO_BYTES}"),
    "empty_list": (body({"data": []}), "lists no model"),
    "card_without_id": (body({"data": [{"owned_by": "x"}]}), "without a text `id`"),
    "a_list": (body(b"[1, 2]"), "a JSON list"),
}
BAD_METRICS: dict[str, tuple[Answer, str]] = {
    "huge_line": (
        stream(MAX_METRICS_BYTES + 2**20, head=b"vllm:num_requests_running 1", filler=b"1"),
        "more than",
    ),
    "comments": (stream(MAX_METRICS_BYTES + 2**20, filler=b"# just a comment\n"), "more than"),
    "html": (body(b"<html>metrics</html>", kind="text/html"), "no vllm:num_requests_running"),
    "nan": (body(b"vllm:num_requests_running NaN\n", kind="text/plain"), "is nan"),
    "error": (body(b"boom", status=500, kind="text/plain"), "HTTP 500"),
}


@pytest.mark.parametrize(
    ("part", "kind"), [("models", k) for k in BAD_MODELS] + [("metrics", k) for k in BAD_METRICS]
)
def test_engine_check_says_one_line_per_bad_answer(part: str, kind: str) -> None:
    answer, says = (BAD_MODELS if part == "models" else BAD_METRICS)[kind]
    with HostileEngine(**{part: answer}) as engine:
        result = check(engine.url)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert says in result.output, result.output
    said = [line for line in result.output.splitlines() if says in line]
    assert len(said) == 1, result.output


def test_engine_check_of_a_good_engine_reads_its_gauges() -> None:
    with HostileEngine() as engine:
        result = check(engine.url)
    assert result.exit_code == 0, result.output
    assert "running" in result.output and "25.0%" in result.output


def test_check_with_a_program_that_is_not_vllms_parser(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '" + json.dumps({"ok": True}) + "'\n")
    fake.chmod(0o755)
    with pytest.raises(RuntimeError, match="not as vLLM's parser"):
        check_flags(["vllm", "serve", "m"], str(fake))
    result = CliRunner().invoke(app, ["engine", "serve", "--check-with", str(fake)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert "not as vLLM's parser" in result.output and "fix:" in result.output
