#!/usr/bin/env bash
# Set up (if needed), lint (ruff, mypy strict) and run the test suite (real Chromium, real
# Dask LocalCluster).
#
# By default it runs `-m "not slow and not soak"`: every test but the long scenarios (whole
# multi-run cluster scenarios, Ctrl-C rounds, the 64-session run, TRL training) and the memory
# soak, on three pytest-xdist workers: about 7.5 minutes of tests on a quiet 2-core machine
# (7 min 34 s for 1,542 tests, 2026-11-29; docs/benchmarks.md). CI runs the slow ones as its
# second step.
# Extra arguments go to pytest; with a -m of your own, or tests named by path, no default -m
# is added:
#   bash scripts/test.sh -m slow                     # the long scenarios only
#   bash scripts/test.sh -m "not soak"               # everything CI runs, in one go
#   bash scripts/test.sh tests/integration/test_run_cli.py
set -euo pipefail
cd "$(dirname "$0")/.."
# Python keeps its compiled modules, as it does by default: with PYTHONDONTWRITEBYTECODE set (some
# sandboxes and images set it) every process that imports datagen compiles it again (the
# driver, each Dask worker of each test's cluster, each `datagen` subprocess), and each xdist
# worker rewrites every test module's asserts again (collection 11 s against 6 s with the
# cache, 2 cores). The caches land in __pycache__/ folders, which git ignores.
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
.venv/bin/ruff check datagen tests bench oracle
.venv/bin/ruff format --check --quiet datagen tests bench oracle
.venv/bin/mypy datagen tests bench oracle
default=(-m "not slow and not soak")
# Three pytest-xdist workers, each test file whole on one of them (its module fixtures: a
# browser, a cluster, a server, set up once): most tests wait on pages settling and servers
# answering, so on two cores two at once took about two thirds of the time one after the
# other did (15 min 8 s serial, 9 min 32 s), and three at once 11% less than two (7 min 34 s
# against 8 min 30 s, the same tree one after the other, quiet: docs/benchmarks.md). The
# longest files start first (tests/helpers.py LONG_FILES, ordered by tests/conftest.py), so
# the run does not end on one of them while the other workers idle. `-n 0`: one process.
parallel=(-n 3 --dist loadfile)
for arg in "$@"; do
  case "$arg" in
    -m | -m*) default=() ;;
    -n | -n*) parallel=() ;;
    -*) ;;
    *) if [ -e "${arg%%::*}" ]; then default=(); fi ;;
  esac
done
# a selection of your own (-m, or tests by path) runs in one process, as before
if [ ${#default[@]} -eq 0 ]; then parallel=(); fi
exec .venv/bin/python -m pytest "${default[@]}" "${parallel[@]}" "$@"
