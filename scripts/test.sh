#!/usr/bin/env bash
# Set up (if needed), lint (ruff, mypy strict) and run the test suite (real Chromium, real
# Dask LocalCluster).
#
# By default it runs `-m "not slow and not soak"`: every test but the long scenarios (whole
# multi-run cluster scenarios, Ctrl-C rounds, the 64-session run, TRL training) and the memory
# soak; 6-9 minutes of tests on a loaded 2-core machine. CI runs the slow ones as its second step.
# Extra arguments go to pytest; with a -m of your own, or tests named by path, no default -m
# is added:
#   bash scripts/test.sh -m slow                     # the long scenarios only
#   bash scripts/test.sh -m "not soak"               # everything CI runs, in one go
#   bash scripts/test.sh tests/integration/test_run_cli.py
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check datagen tests bench oracle
.venv/bin/ruff format --check --quiet datagen tests bench oracle
.venv/bin/mypy datagen tests oracle
default=(-m "not slow and not soak")
for arg in "$@"; do
  case "$arg" in
    -m | -m*) default=() ;;
    -*) ;;
    *) if [ -e "${arg%%::*}" ]; then default=(); fi ;;
  esac
done
exec .venv/bin/python -m pytest "${default[@]}" "$@"
