"""The exception tree drawn in `datagen/errors.py` is the whole tree: every exception class
defined anywhere in datagen is drawn there, under its own parent and with its own module, and
every class drawn there exists. A new exception class without a place in the tree fails here.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import datagen
import datagen.errors

ROOT = Path(datagen.__file__).parent
# a drawn class: the tree's prefix, its name, its module (after `datagen.`), its meaning
DRAWN = re.compile(r"^    (?P<prefix>(?:[│ ]   )*[├└]── )(?P<name>\w+)\s+(?P<module>[\w.]+)\s+\S")
ROOT_LINE = re.compile(r"^    (?P<name>[A-Z]\w+)$")  # a builtin base the classes below derive from


@dataclass(frozen=True)
class Drawn:
    name: str
    module: str
    parent: str


def modules() -> list[str]:
    """Every module under datagen/ (packages without an __init__.py too), but `__main__`."""
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def defined() -> dict[str, type[BaseException]]:
    """Every exception class defined in a datagen module, by name."""
    found: dict[str, type[BaseException]] = {}
    for name in modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
            ):
                assert obj.__name__ not in found or found[obj.__name__] is obj, (
                    f"two exception classes named {obj.__name__}: the tree cannot tell them apart"
                )
                found[obj.__name__] = obj
    return found


def drawn() -> list[Drawn]:
    """The classes the docstring of datagen/errors.py draws, with the parent each is drawn under."""
    doc = datagen.errors.__doc__ or ""
    out: list[Drawn] = []
    stack: list[str] = []  # the names drawn at each depth, down to the current line
    for line in doc.splitlines():
        root = ROOT_LINE.match(line)
        if root:
            stack = [root.group("name")]
            continue
        match = DRAWN.match(line)
        if match is None:
            assert "── " not in line, (
                f"a tree line that does not read as `name module meaning`: {line!r}"
            )
            continue
        depth = len(match.group("prefix")) // 4  # 1 under the root
        assert 1 <= depth <= len(stack), f"drawn under nothing: {line!r}"
        stack = [*stack[:depth], match.group("name")]
        out.append(Drawn(match.group("name"), match.group("module"), stack[depth - 1]))
    return out


def test_every_exception_class_is_drawn_in_the_tree_with_its_module_and_parent() -> None:
    classes = defined()
    tree = drawn()
    names = [d.name for d in tree]
    assert len(classes) > 20 and len(tree) > 20  # the walk and the parse both found the lot
    missing = sorted(set(classes) - set(names))
    assert not missing, f"exception classes not drawn in datagen/errors.py: {missing}"
    gone = sorted(set(names) - set(classes))
    assert not gone, f"drawn in datagen/errors.py, but no such class in datagen: {gone}"
    assert sorted(n for n in names if names.count(n) > 1) == [], "a class drawn twice"
    for d in tree:
        cls = classes[d.name]
        assert f"datagen.{d.module}" == cls.__module__, f"{d.name} lives in {cls.__module__}"
        parents = [base.__name__ for base in cls.__bases__]
        assert d.parent in parents, f"{d.name} is drawn under {d.parent}, derives from {parents}"


def test_the_roots_of_the_tree_are_builtin_exceptions() -> None:
    roots = {
        m.group("name")
        for line in (datagen.errors.__doc__ or "").splitlines()
        if (m := ROOT_LINE.match(line))
    }
    assert "Exception" in roots
    for name in roots:
        assert issubclass(getattr(builtins, name, type), BaseException), f"{name}: not builtin"
