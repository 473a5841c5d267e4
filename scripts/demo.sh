#!/usr/bin/env bash
# Set up (if needed) and run the embedded demo: bundled sites → local Dask → Chromium → Parquet.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/datagen run pipelines/demo.yaml "$@"
