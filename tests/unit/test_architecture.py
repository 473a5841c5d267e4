"""The package map of docs/architecture.md, enforced: the import-linter contracts in
pyproject.toml (`[tool.importlinter]`: layers, what each package may import, datagen importing
neither bench nor tests, acyclic siblings, only `runtime` importing Dask) hold, and no module
imports another that imports it back, over every import of every file.

Every import counts: type-only ones under `if TYPE_CHECKING:` and lazy ones inside functions
(grimp, which import-linter is built on, reads them all; `test_the_cycle_count_sees_every_import`
keeps it so). A new dependency between packages is a decision: make it in the contracts and in
the document.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "datagen"
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
# The packages on the map; tests/ is on it (nothing may import it) but its cycles are its own.
PACKAGES = [p for p in CONFIG["importlinter"]["root_packages"] if p != "tests"]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # the dev extra's import-linter


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the contracts of `where`/pyproject.toml, over the packages there."""
    assert LINT_IMPORTS.exists(), f"no {LINT_IMPORTS}: install the dev extra (scripts/setup.sh)"
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", "pyproject.toml"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@contextmanager
def importable(where: Path) -> Iterator[None]:
    """`where` first on sys.path, so grimp finds the packages there (not installed ones)."""
    sys.path.insert(0, str(where))
    try:
        yield
    finally:
        sys.path.remove(str(where))


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import circles between modules: strongly connected components of more than one
    module (Tarjan's algorithm, iterative), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.find_modules_directly_imported_by(nxt)))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def the_graph() -> grimp.ImportGraph:
    with importable(REPO):
        return grimp.build_graph(*PACKAGES, cache_dir=None)


def test_every_folder_of_code_is_a_regular_package() -> None:
    """grimp and import-linter skip a folder without `__init__.py` (a namespace package), and
    every import of its modules with it: browser/ and sink/ were such folders."""
    folders = {p.parent for name in PACKAGES for p in (REPO / name).rglob("*.py")}
    bare = sorted(str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").exists())
    assert not bare, f"add an __init__.py (a docstring saying what the package is) to {bare}"


def test_the_contracts_hold() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "0 broken" in done.stdout


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = the_graph()
    assert {m.split(".")[0] for m in graph.modules} == set(PACKAGES)
    found = cycles(graph)
    assert not found, f"{len(found)} import circles (break each: docs/architecture.md): {found}"


def test_no_sibling_packages_import_each_other_back() -> None:
    """For every package of every root (the oracle's too, once it is on the map): its children,
    each with what lies below it, import one another in one direction only."""
    graph = the_graph()
    packages = [m for m in sorted(graph.modules) if graph.find_children(m)]
    broken = {p: sorted(b) for p in packages if (b := graph.nominate_cycle_breakers(p))}
    assert not broken, f"sibling packages in a circle (imports that would break it): {broken}"


def test_nothing_inside_imports_the_package_root() -> None:
    """`datagen/__init__.py` imports the sink (`read_committed`), so an import of `datagen`
    itself from inside closes a circle: the versions are in `datagen.versions`."""
    graph = the_graph()
    inside = {m for m in graph.find_modules_that_directly_import("datagen") if m != "datagen"}
    assert not {m for m in inside if m.startswith("datagen.")}
    imported = graph.find_modules_directly_imported_by("datagen")
    assert imported <= {"datagen.versions", "datagen.sink.read"}, imported


def test_the_cycle_count_sees_every_import(tmp_path: Path) -> None:
    """A circle closed by a type-only import, and one closed by an import inside a function,
    are both counted."""
    package = tmp_path / "circles"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circles.b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circles.a import A\nB = 1\n"
    )
    (package / "c.py").write_text("import circles.d\n")
    (package / "d.py").write_text("def later():\n    from circles import c\n")
    (package / "e.py").write_text("import circles.a\n")  # imports into a circle: not one
    with importable(tmp_path):
        graph = grimp.build_graph("circles", cache_dir=None)
    assert cycles(graph) == [["circles.a", "circles.b"], ["circles.c", "circles.d"]]


def test_the_contracts_catch_a_forbidden_import(tmp_path: Path) -> None:
    """The contracts, on a copy of the code with bad imports added: a type-only one upwards, a
    lazy one of bench from datagen, one between stages the layers allow but the map does not,
    a circle inside a package; and a module on no layer of the map."""
    for name in CONFIG["importlinter"]["root_packages"]:
        shutil.copytree(
            REPO / name,
            tmp_path / name,
            ignore=lambda d, names: [
                n for n in names if n == "__pycache__" or (Path(d, n).is_file() and n[-3:] != ".py")
            ],
        )
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    copy = tmp_path / "datagen"
    add = {
        "records/tasks.py": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from datagen.engine.client import ChatClient\n",
        "sink/storage.py": "def later():\n    import bench.sink\n",
        "export/card.py": "import datagen.browser.guard\n",
        "sink/listing.py": "from datagen.sink.storage import Storage\n",
    }
    for path, text in add.items():
        (copy / path).write_text((copy / path).read_text() + "\n" + text)
    (copy / "newcomer.py").write_text('"""On no layer."""\n')
    done = lint_imports(tmp_path)
    out = " ".join(done.stdout.split())  # contract names wrap
    assert done.returncode != 0, out
    names = [contract["name"] for contract in CONFIG["importlinter"]["contracts"]]
    said = {n: m[1] for n in names if (m := re.search(re.escape(n) + " (KEPT|BROKEN)", out))}
    assert set(said) == set(names), out[-6000:]
    broken = {n for n, status in said.items() if status == "BROKEN"}
    assert broken == {
        n
        for n in names
        if n.startswith(("top level", "datagen imports neither", "map: datagen's", "map: export"))
        or n.startswith("no import cycles")
    }, out[-6000:]
    assert "datagen.records.tasks -> datagen.engine.client" in out, out[-6000:]
    assert "datagen.newcomer" in out, out[-6000:]


def test_no_module_outgrows_a_reader() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted(ROOT.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, f"split these (issue 13: no module over ~400 lines): {long}"
