#!/usr/bin/env bash
# Set up (if needed), lint (ruff, mypy strict) and run the test suite (real Chromium, real
# Dask LocalCluster).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check datagen tests bench
.venv/bin/ruff format --check --quiet datagen tests bench
.venv/bin/mypy datagen tests
exec .venv/bin/python -m pytest "$@"
