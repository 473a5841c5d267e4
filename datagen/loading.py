"""Reading the files users hand us: text that decodes, and YAML that means one thing.

    pipeline file, task lists ─► read_text() ─► str ─► load_yaml() ─► Python data

Both fail with `ConfigError`/`SourceError`-style messages that name the file and the place
(byte offset, line) instead of a `UnicodeDecodeError` or `OSError` traceback. The YAML loader
refuses two things PyYAML accepts silently:

- a key written twice in one mapping (PyYAML keeps the last one: a setting the user believes
  is in force may not be);
- aliases that expand past `MAX_NODES` nodes (a few hundred bytes of nested `*alias`es become
  gigabytes once the loaded data is walked: the "billion laughs" file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_NODES = 100_000  # a real pipeline file has a few hundred
MAX_BYTES = 4 * 1024 * 1024  # a pipeline file; task lists are read line by line elsewhere


class FileProblem(Exception):
    """The file cannot be read as text or YAML; `str()` names the file and the place."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix


def read_text(path: Path, what: str, max_bytes: int | None = None) -> str:
    """The file's text as UTF-8; errors name the file, and for bad bytes the byte offset."""
    try:
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise FileProblem(
                f"{path}: {what} is {path.stat().st_size:,} bytes, more than {max_bytes:,}",
                fix=f"give the {what}, not another file",
            )
        data = path.read_bytes()
    except IsADirectoryError:
        raise FileProblem(f"{path}: is a folder, not a {what}", fix="give a file's path") from None
    except FileNotFoundError:
        raise FileProblem(f"{path}: {what} not found", fix="check the path") from None
    except OSError as exc:
        raise FileProblem(
            f"{path}: cannot read the {what}: {exc.strerror or exc}",
            fix="check the file's permissions",
        ) from None
    return decode(data, path, what)


BOMS = {
    b"\xff\xfe\x00\x00": "UTF-32",
    b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe": "UTF-16",
    b"\xfe\xff": "UTF-16",
}


def decode(data: bytes, path: Path | str, what: str) -> str:
    """UTF-8 text (a BOM is dropped), or an error at the first bad byte with its line."""
    for bom, encoding in BOMS.items():
        if data.startswith(bom):
            raise FileProblem(
                f"{path}: byte 0 starts a {encoding} byte-order mark: the {what} is {encoding}, "
                "not UTF-8",
                fix=f"save the {what} as UTF-8",
            )
    if b"\x00" in data:
        at = data.index(b"\x00")
        raise FileProblem(
            f"{path}: byte {at} (line {_line(data, at)}) is a NUL byte: "
            f"this is a binary file, not a {what}",
            fix=f"give the {what} (UTF-8 text)",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = _line(data, exc.start)
        raise FileProblem(
            f"{path}: byte {exc.start} (line {line}) is not UTF-8 "
            f"({data[exc.start : exc.start + 4]!r}…)",
            fix=f"save the {what} as UTF-8",
        ) from None


def _line(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (aliases are bounded in `load_yaml`)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` merges; its keys may be overridden on purpose
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: PyYAML itself reports it below
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} appears twice in this mapping (first at line {first + 1}); "
                    "YAML would silently keep only the last one",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, path: Path | str) -> Any:
    """Parse one YAML document strictly; `FileProblem` names the line and column."""
    loader = _StrictLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        size = _expanded_size(root, {}, MAX_NODES)
        if size > MAX_NODES:
            raise FileProblem(
                f"{path}: its aliases (*name) expand to more than {MAX_NODES:,} values",
                fix="write the values out, or use fewer nested aliases",
            )
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise FileProblem(f"{path}: not valid YAML{where}: {problem}") from None
    finally:
        loader.dispose()


def _expanded_size(node: Node, memo: dict[int, int], limit: int) -> int:
    """How many nodes the document has once every alias is copied out (memoized per node, so
    the count itself stays linear in the file; stops adding once past `limit`)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = limit + 1  # a cycle (recursive alias) counts as too big
    total = 1
    if isinstance(node, SequenceNode):
        children: list[Node] = list(node.value)
    elif isinstance(node, MappingNode):
        children = [n for pair in node.value for n in pair]
    else:
        assert isinstance(node, ScalarNode)
        children = []
    for child in children:
        total += _expanded_size(child, memo, limit)
        if total > limit:
            break
    memo[id(node)] = min(total, limit + 1)
    return memo[id(node)]
