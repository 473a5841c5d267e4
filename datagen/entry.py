"""The console script `datagen` and `python -m datagen`: the CLI (`cli.app`), then, once a
command succeeded, an exit without the interpreter's teardown.

A command that succeeded has written and flushed all it makes. A native thread pool torn down
at interpreter exit can still abort the process ("terminate called without an active
exception", apache/arrow#34314): seen once in five demo runs, a complete run that exited 134.
A failing command tears down as usual. In-process callers (tests, CliRunner) use `cli.app`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys


def main() -> None:
    from datagen.cli import app

    try:
        app()
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    logging.shutdown()
    with contextlib.suppress(BrokenPipeError):  # `datagen inspect OUT | head`: the reader left
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)
