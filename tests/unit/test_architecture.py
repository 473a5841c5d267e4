"""The package map of docs/architecture.md, enforced: which datagen packages each may import.

Imports under `if TYPE_CHECKING:` are type-only and not counted; lazy imports inside functions
are. A new dependency between packages is a decision: make it here and in the document.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "datagen"
GROUND = {"records", "config", "errors", "loading", "url", "(datagen)"}
# package → the datagen packages it may import (besides itself)
MAY_IMPORT: dict[str, set[str]] = {
    "(datagen)": {"sink"},  # read_committed: a lazy convenience for users
    "records": set(),
    "errors": set(),
    "url": set(),  # URL parsing and sites: stdlib and publicsuffixlist only
    "loading": {"errors"},
    "config": {"errors", "loading", "url"},
    "source": GROUND,
    "browser": GROUND,
    "scope": GROUND,
    "engine": GROUND,
    "validate": GROUND,
    "sink": GROUND,
    "export": GROUND | {"sink"},
    "annotate": GROUND | {"engine"},
    "policy": GROUND | {"engine", "scope"},
    "pipeline": GROUND
    | {"browser", "engine", "policy", "annotate", "validate", "scope", "sink", "observe"},
    "observe": GROUND | {"sink", "runplan"},
    "runplan": GROUND | {"browser", "source"},
    "preflight": GROUND | {"browser", "sink"},
    "capacity": GROUND | {"browser", "engine", "pipeline", "runplan", "sink", "source"},
    "runtime": GROUND
    | {
        "browser",
        "engine",
        "observe",
        "pipeline",
        "policy",
        "runplan",
        "sink",
        "source",
    },
    "cli": GROUND
    | {
        "capacity",
        "engine",
        "export",
        "observe",
        "preflight",
        "runplan",
        "runtime",
        "sink",
        "source",
    },
    "__main__": {"cli"},
}


def _package(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    if parts == ("__init__.py",):
        return "(datagen)"
    return parts[0].removesuffix(".py")


def _type_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports inside `if TYPE_CHECKING:` blocks."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines |= {n.lineno for n in ast.walk(inner) if hasattr(n, "lineno")}
    return lines


def _imports(path: Path) -> set[str]:
    """The datagen packages a module imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_only(tree)
    found = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "datagen":
                found.add(parts[1] if len(parts) > 1 else "(datagen)")
    return found


MODULES = sorted(ROOT.rglob("*.py"))


def test_every_package_is_on_the_map() -> None:
    packages = {_package(p) for p in MODULES}
    assert packages == set(MAY_IMPORT), "a package was added or removed: put it on the map"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_map(path: Path) -> None:
    package = _package(path)
    extra = _imports(path) - MAY_IMPORT[package] - {package}
    assert not extra, f"{package} may not import {sorted(extra)} (docs/architecture.md)"


def test_the_map_catches_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from datagen.runtime.driver import run\n"
        "if TYPE_CHECKING:\n    from datagen.cli import app\n"
        "def later():\n    import datagen.sink.read\n"
    )
    assert _imports(module) == {"runtime", "sink"}


def test_no_module_outgrows_a_reader() -> None:
    long = {
        str(p.relative_to(ROOT)): n for p in MODULES if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"split these (issue 13: no module over ~400 lines): {long}"
