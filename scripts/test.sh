#!/usr/bin/env bash
# Set up (if needed) and run the test suite (real Chromium, real Dask LocalCluster).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
