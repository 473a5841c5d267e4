"""The CLI's help text: choices listed from their Literals, paragraphs that wrap cleanly, and
`--version`.

    Literal (export.choices, config.roles) ─► choice() ─► the option's type and its help's values
    a command's docstring ─► reflow_help(app) ─► one line a paragraph ─► rich wraps it

Why reflow: typer keeps a docstring's newlines as they are in the source, so help broke lines
mid-sentence at every terminal width but the source's (tests/unit/test_cli_registry.py checks
each command at 80 and 120 columns).
"""

from __future__ import annotations

from inspect import cleandoc
from typing import Annotated, Any, get_args

import typer

NAME = "<name>"  # a choice's metavar: its values are in its help, which wraps at spaces


def one_of(choice: Any) -> str:
    """A Literal's values as help text: `a | b | c`."""
    return " | ".join(get_args(choice))


def choice(values: Any, about: str, *names: str, default: str = "") -> Any:
    """A typer Option for a Literal's values: `about`, then the values, then the default."""
    shown = f" (default {default})" if default else ""
    return typer.Option(*names, metavar=NAME, help=f"{about}: {one_of(values)}{shown}")


def _version(value: bool) -> None:
    if value:
        from datagen.versions import __version__

        typer.echo(f"datagen {__version__}")
        raise typer.Exit()


# `datagen --version`: prints the package's version and exits, before any command runs
VersionOpt = Annotated[
    bool,
    typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit"),
]


def reflow(doc: str) -> str:
    """A docstring as help text: each paragraph on one line, for rich to wrap."""
    paragraphs = cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def reflow_help(app: typer.Typer) -> None:
    """Every command's help, in `app` and the groups added to it, from its docstring."""
    for info in app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = reflow(info.callback.__doc__)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
