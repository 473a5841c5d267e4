"""`datagen engine serve`'s per-version Mamba/prefix-caching rule (the parser check itself runs
against an installed vLLM: tests/integration/test_real_vllm.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.engine.serve import check_flags, prefix_caching_rule


@pytest.mark.parametrize("version", ["0.14.1", "0.15.0", "0.32.0", "1.2", "nightly"])
def test_every_version_gets_prefix_caching_off_for_the_hybrid(version: str) -> None:
    assert prefix_caching_rule(version).flag == "--no-enable-prefix-caching"


def test_the_rule_says_why_per_version() -> None:
    assert "itself" in prefix_caching_rule("0.14.1").why
    assert "required" in prefix_caching_rule("0.32.0").why


def test_serve_prints_the_flag_and_its_reason() -> None:
    result = CliRunner().invoke(app, ["engine", "serve", "--vllm-version", "0.32.0"])
    assert result.exit_code == 0, result.output
    assert "--no-enable-prefix-caching" in result.output and "required" in result.output


def test_a_python_without_vllm_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="could not run vLLM's parser"):
        check_flags(["vllm", "serve", "m"], "/nonexistent/python")
    result = CliRunner().invoke(app, ["engine", "serve", "--check-with", "/nonexistent/python"])
    assert result.exit_code == 2 and "fix:" in result.output
