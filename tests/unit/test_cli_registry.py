"""The CLI reads its choices from the registries, prints its version, and its help wraps cleanly.

- Every registered value (export formats, coordinate conventions, action syntaxes, sft
  instructions and filters) is in `datagen export --help` and accepted; any other is refused
  before anything runs.
- `datagen --version` prints the package's version.
- No help line is broken where rich would have gone on: rich wraps a paragraph at the width it
  has, so a line that ends while the next line's first word would still have fitted on it was
  broken by a newline in the source (typer keeps a docstring's newlines: `datagen.cli` makes
  each paragraph one line). Checked for every command, at 80 and at 120 columns.
"""

from __future__ import annotations

from importlib.metadata import version
from itertools import pairwise
from pathlib import Path
from typing import get_args

import pytest
import typer
from typer.testing import CliRunner

import datagen
from datagen.cli import app
from datagen.config import ROLES, RoleConfig, RoleName
from datagen.engine.roles import PRIORITY
from datagen.export import FORMATS, export_format
from datagen.export.choices import CHOICES, Format
from datagen.observe.help import reflow_help
from datagen.policy import roles_for
from tests.helpers import make_config

WIDTHS = ("80", "120")


def _help(args: list[str], columns: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    return result.output


def _commands(group: typer.Typer, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command's path in the app, groups included (the root is `()`)."""
    found = [path]
    for info in group.registered_commands:
        assert info.callback is not None
        found.append((*path, info.name or info.callback.__name__.replace("_", "-")))
    for sub in group.registered_groups:
        assert sub.typer_instance is not None and sub.name is not None
        found += _commands(sub.typer_instance, (*path, sub.name))
    return found


COMMANDS = _commands(app)


def _in_panel(above: str, below: str) -> tuple[str, str, int] | None:
    """(the text of `above`'s last cell, `below`'s first word, the cell's width) when `below`
    goes on with that cell (its other cells blank); None otherwise."""
    inner_a, inner_b = above[1:-1], below[1:-1]
    start = len(inner_b) - len(inner_b.lstrip())
    if not inner_b.strip() or start >= len(inner_a) or len(inner_a) != len(inner_b):
        return None
    if inner_a[start] == " " or (start and inner_a[start - 1] != " "):
        return None  # `above` has no cell starting where `below`'s text does
    cell = inner_a[start:].rstrip()
    if "  " in cell:
        return None  # more cells follow on `above`: `below` goes on with another column
    return cell, inner_b.split()[0], len(inner_a) - start - 1  # a cell's right padding: 1


def hard_breaks(text: str, columns: int) -> list[str]:
    """Lines that end although the next line's first word would have fitted on them."""
    lines = text.splitlines()
    found = []
    for above, below in pairwise(lines):
        if above.startswith("│") and below.startswith("│"):
            pair = _in_panel(above, below)
        elif above.startswith(" ") and below.startswith(" ") and above.strip() and below.strip():
            pair = above.strip(), below.split()[0], columns - 2  # a paragraph: 1 space a side
        else:
            continue
        if pair is None or pair[1].startswith("["):  # typer's own [default: …], [required]
            continue
        cell, word, width = pair
        if len(cell) + 1 + len(word) <= width:
            found.append(f"{cell!r} then {word!r}")
    return found


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "datagen")
def test_help_lines_break_only_where_rich_wraps(path: tuple[str, ...], columns: str) -> None:
    assert not hard_breaks(_help(list(path), columns), int(columns)), " ".join(path)


def test_the_check_finds_a_hard_newline(tmp_path: Path) -> None:
    """A two-line first paragraph (how `plan`, `verify`, `export` and `engine sim` were
    written) is kept as two lines in the commands panel; the check names it."""
    demo = typer.Typer()

    @demo.command()
    def first() -> None:
        """Capacity plan before launch: engine throughput, sessions in flight against the
        pipeline's, CPU workers per GPU, hours and GPU cost."""

    @demo.command()
    def second() -> None:
        """Capacity plan before launch: engine throughput, CPU workers per GPU and GPU cost.

        Sessions in flight against the pipeline's, hours and the GPU's cost, worked out
        from datagen's engine model."""

    def shown(args: list[str], columns: str) -> list[str]:
        output = CliRunner().invoke(demo, [*args, "--help"], env={"COLUMNS": columns}).output
        return hard_breaks(output, int(columns))

    for columns in WIDTHS:
        found = shown([], columns)  # `…against the` ends a line at either width
        assert len(found) == 1 and found[0].endswith("the' then \"pipeline's,\""), found
        assert shown(["second"], columns)  # a later paragraph keeps its newlines too
    reflow_help(demo)  # what datagen.cli does to its commands
    for columns in WIDTHS:
        assert not shown([], columns) and not shown(["second"], columns)


@pytest.mark.parametrize("columns", WIDTHS)
def test_export_help_lists_every_registered_value(columns: str) -> None:
    shown = " ".join(_help(["export"], columns).replace("│", " ").split())
    for option, values in CHOICES.items():
        assert f"{' | '.join(values)}" in shown, option  # the values, as the help lists them
    assert tuple(FORMATS) == get_args(Format) == CHOICES["format"]


@pytest.mark.parametrize(("option", "value"), [(k, v) for k, vs in CHOICES.items() for v in vs])
def test_every_registered_value_is_accepted(tmp_path: Path, option: str, value: str) -> None:
    """Each value passes the CLI's own check and reaches the export (which then finds no
    output in an empty folder: nothing is written)."""
    fmt = value if option == "format" else "sft"
    given = [] if option == "format" else [f"--{option}", value]
    if (option, value) == ("coords", "qwen25vl"):
        given.append("--max-pixels=1003520")
    if (option, value) == ("filter", "judged"):
        given += ["--instruction", "relabeled"]  # judged needs it (ExportError otherwise)
    result = CliRunner().invoke(app, ["export", str(tmp_path), "-f", fmt, *given])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "holds no datagen output" in said, said


@pytest.mark.parametrize(
    "option", ["--format", "--coords", "--syntax", "--instruction", "--filter"]
)
def test_an_unregistered_value_is_refused_naming_the_registered_ones(
    tmp_path: Path, option: str
) -> None:
    args = ["export", str(tmp_path), "-f", "sft", option, "nope"]
    result = CliRunner().invoke(app, args)
    said = " ".join(result.output.replace("│", " ").split())  # the error box wraps it
    key = option.removeprefix("--")
    assert result.exit_code == 2 and "'nope' is not one of" in said, said
    assert all(f"'{v}'" in said for v in CHOICES[key]), said


def test_each_format_is_one_object_with_its_options_and_tables() -> None:
    for name, fmt in FORMATS.items():
        assert fmt.name == name and export_format(name) is fmt
        assert "validation" in fmt.reads and "data" in fmt.schemas and fmt.card and fmt.summary
    assert set(FORMATS["grounding"].schemas) == {"data", "elements"}
    assert "qwen25vl" not in FORMATS["grounding"].coords


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"datagen {datagen.__version__}"
    assert datagen.__version__ == version("datagen")


def test_the_gate_ranks_every_role_and_the_config_names_only_roles(tmp_path: Path) -> None:
    assert tuple(PRIORITY) == ROLES == get_args(RoleName)
    assert sorted(PRIORITY.values()) == list(range(len(ROLES)))
    config = make_config(
        tmp_path,
        policy={"type": "vlm"},
        annotation={"model_expressions": {}, "relabel": {}},
        engine={"url": "http://gpu:8000"},
    )
    assert set(roles_for(config)) == set(ROLES)  # every role reachable from a pipeline file


def test_the_choices_keep_the_cli_light() -> None:
    """The option types come from `export.choices` (plain Literals): importing the CLI loads
    neither pyarrow nor pydantic (the export's registry and models load when it runs)."""
    import subprocess
    import sys

    code = "import sys, datagen.cli; print(sorted({'pyarrow', 'pydantic'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_docs_list_every_registered_value() -> None:
    """docs/training.md names each choice's values as the help does (`--coords a | b | …`), and
    docs/output.md's tables and paragraphs reach every format, convention and syntax (the
    README once listed 3 of 4 conventions and 2 of 3 syntaxes)."""
    training = " ".join((DOCS / "training.md").read_text().split())
    for option in ("coords", "syntax"):
        assert f"`--{option} {' | '.join(CHOICES[option])}`" in training, option
    assert "--format sft|grounding|rl|pairs" in training.replace(" | ", "|")
    output = (DOCS / "output.md").read_text()
    for value in CHOICES["coords"]:
        assert f"\n| `{value}`" in output, value  # a row of the conventions' table
    for option in ("format", "syntax", "instruction", "filter"):
        for value in CHOICES[option]:
            assert f"`{value}`" in output, (option, value)


def test_role_names_are_the_literal_wherever_a_role_is_named() -> None:
    """A misspelt role (`engines.ask("judeg", …)`) is a mypy error, because every place that
    takes a role name is typed with RoleName (before: `str`)."""
    from typing import get_type_hints

    from datagen.capacity.model import Call
    from datagen.config import Caller
    from datagen.engine.client import ChatClient, EngineClient
    from datagen.engine.roles import Engines, Role

    for function, parameter in (
        (Engines.ask, "role"),
        (Engines.has, "role"),
        (Engines.attach, "name"),
    ):
        assert get_type_hints(function)[parameter] == RoleName
    assert get_type_hints(Role)["name"] == RoleName and get_type_hints(Call)["role"] == RoleName
    for client in (ChatClient, EngineClient):
        assert get_type_hints(client.chat)["role"] == Caller == RoleName | None
    assert get_type_hints(roles_for)["return"] == dict[RoleName, RoleConfig]
