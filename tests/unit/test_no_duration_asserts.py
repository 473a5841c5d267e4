"""No test asserts on how long something took (issue 36): a loaded machine (a fresh clone with
a CPU hog beside it) stretches any duration, and such an assertion turned the README's test
command red. Tests count events, or bound a hang with a generous watchdog
(`@pytest.mark.timeout`, a subprocess timeout) instead. This reads every test module's syntax
tree: an `assert` that reads a clock, or a name computed from one, is refused."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CLOCKS = {"monotonic", "perf_counter", "time", "process_time", "monotonic_ns", "perf_counter_ns"}


def _reads_clock(node: ast.AST, timed: set[str]) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            owner = inner.func.value
            if inner.func.attr in CLOCKS and isinstance(owner, ast.Name) and owner.id == "time":
                return True
        if isinstance(inner, ast.Name) and inner.id in timed:
            return True
    return False


def _difference(node: ast.AST) -> bool:
    """`a - b` where either side reads a clock."""
    return (
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _reads_clock(node, set())
    )


def _measures(test: ast.AST, timed: set[str]) -> bool:
    """A difference of clock readings, or a name holding one; a bare reading against a
    deadline (`time.monotonic() < deadline`: a watchdog's loop) is no measure."""
    for inner in ast.walk(test):
        if isinstance(inner, ast.Name) and inner.id in timed:
            return True
        if _difference(inner):
            return True
    return False


def duration_asserts(source: str) -> list[int]:
    """Line numbers of asserts on a clock reading, or on a name assigned from a difference of
    clock readings (`elapsed = time.perf_counter() - started`)."""
    found: list[int] = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        timed: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and _difference(node.value):
                timed |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(function):
            if isinstance(node, ast.Assert) and _measures(node.test, timed):
                found.append(node.lineno)
    return found


def test_the_check_finds_a_duration_assert() -> None:
    source = (
        "import time\n"
        "def test_x():\n"
        "    started = time.perf_counter()\n"
        "    assert time.perf_counter() - started < 0.5\n"
        "    elapsed = time.monotonic() - started\n"
        "    assert elapsed < 2\n"
        "    deadline = started + 60\n"
        "    assert time.monotonic() < deadline, 'never happened'\n"  # a watchdog: fine
    )
    assert duration_asserts(source) == [4, 6]


def test_no_test_asserts_on_a_duration() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in duration_asserts(path.read_text(encoding="utf-8"))
    ]
    assert not found, "asserts on a duration (count events or use a watchdog): " + ", ".join(found)
