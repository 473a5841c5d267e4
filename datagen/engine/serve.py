"""The vLLM command `datagen engine serve` prints, its per-version rules, and a check of it
against the installed vLLM's own argument parser.

    serve_flags(options, version) ─► ["vllm", "serve", MODEL, flags…]
    check_flags(flags, python) ─► [] (every flag accepted) | what the installed vLLM refused

The check runs vLLM's parser (`make_arg_parser`, the one `vllm serve` uses) inside the Python
that has vLLM (its own venv: `.venv-vllm/bin/python` from scripts/vllm-cpu.sh, or the GPU
host's); datagen never imports vLLM. A flag a version does not know is refused there and named
here, instead of a GPU host failing at start.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

DEFAULT_VERSION = "0.14.1"

# vLLM parses the `serve` flags with the OpenAI server's parser; a positional MODEL is `--model`.
_PARSE = r"""
import json, sys
from vllm.entrypoints.openai.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
import vllm
errors = []
class Refusing(FlexibleArgumentParser):
    def error(self, message):
        errors.append(message)
        raise SystemExit(2)
args = json.loads(sys.argv[1])
try:
    make_arg_parser(Refusing()).parse_args(args)
except SystemExit:
    pass
print(json.dumps({"version": vllm.__version__, "errors": errors}))
"""


@dataclass(frozen=True)
class PrefixCachingRule:
    """What prefix caching does to a Mamba-layer (hybrid) model on one vLLM version."""

    flag: str | None  # the flag the command must carry, if any
    why: str


def prefix_caching_rule(version: str) -> PrefixCachingRule:
    """The Mamba/prefix-caching rule for `version` (docs/engine.md, "Serving flags per version").

    0.14.x: vLLM turns prefix caching off itself for the VL hybrid (its wrapper does not declare
    Mamba prefix caching); `--no-enable-prefix-caching` only says so. Later versions (measured
    on 0.32): with prefix caching on, a Mamba-layer model's first prefill kills the engine, so
    the flag is required. Unknown or unparsable versions get the flag: it is accepted by all."""
    parts = version.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return PrefixCachingRule("--no-enable-prefix-caching", f"vLLM {version!r}: unknown, off")
    if (major, minor) <= (0, 14):
        return PrefixCachingRule(
            "--no-enable-prefix-caching",
            f"vLLM {version}: vLLM turns prefix caching off for the VL hybrid itself; the flag "
            "states it (prefix-cache hits stay 0: expected, not a fault)",
        )
    return PrefixCachingRule(
        "--no-enable-prefix-caching",
        f"vLLM {version}: required; with prefix caching on a Mamba-layer model dies at its "
        "first prefill (measured on 0.32)",
    )


def check_flags(command: list[str], python: str, timeout_s: float = 300.0) -> tuple[str, list[str]]:
    """Parse `command` (`vllm serve MODEL flags…`) with the vLLM installed for `python`:
    (its version, the parser's complaints; empty when every flag is accepted)."""
    if command[:2] != ["vllm", "serve"] or len(command) < 3:
        raise ValueError(f"not a `vllm serve MODEL …` command: {command[:3]}")
    args = ["--model", command[2], *command[3:]]
    try:
        done = subprocess.run(
            [python, "-c", _PARSE, json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{python} could not run vLLM's parser: {exc}") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"{python} could not run vLLM's parser: {' | '.join(tail)}")
    return _report(lines[-1], python)


def _report(line: str, python: str) -> tuple[str, list[str]]:
    """The parser's report line: {"version": str, "errors": [str]}; RuntimeError for any other
    line (a program that is not vLLM's parser)."""
    try:
        report = json.loads(line)
    except (ValueError, RecursionError):
        report = None
    version = report.get("version") if isinstance(report, dict) else None
    errors = report.get("errors") if isinstance(report, dict) else None
    if not isinstance(version, str) or not isinstance(errors, list):
        said = "".join(c if c.isprintable() else "?" for c in line[:120])
        raise RuntimeError(f"{python} answered {said!r}, not as vLLM's parser does")
    return version, [str(e) for e in errors]
