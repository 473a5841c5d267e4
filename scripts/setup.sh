#!/usr/bin/env bash
# Set up a fresh machine for datagen: a virtualenv in .venv, the package with its dev extra,
# and a Chromium (Playwright's own if installed, else Debian's `chromium` when root, else a
# clear message). Safe to run again: it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "datagen needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
if [ ! -x .venv/bin/pip ]; then
  rm -rf .venv
  if ! "$PYTHON" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing python3-venv (apt-get)…"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      "$PYTHON" -m venv .venv
    else
      echo "python3 -m venv failed: install your distribution's venv package (Debian: python3-venv)" >&2
      exit 1
    fi
  fi
fi

# DATAGEN_EXTRAS adds optional extras to the install, e.g. DATAGEN_EXTRAS=train (TRL and torch,
# ~3 GB from PyPI: what CI installs so that the TRL tests run instead of skipping).
extras="dev${DATAGEN_EXTRAS:+,$DATAGEN_EXTRAS}"
stamp=.venv/.datagen-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$(cat "$stamp")" != "$extras" ]; then
  rm -f "$stamp"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[$extras]"
  echo "$extras" > "$stamp"
fi

# A Chromium for Playwright to drive.
playwright_own=$(.venv/bin/python - <<'PY' 2>/dev/null || true
from playwright.sync_api import sync_playwright
import os
with sync_playwright() as p:
    path = p.chromium.executable_path
print(path if os.path.exists(path) else "")
PY
)

if [ -n "$playwright_own" ] || [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium (apt-get)…"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
cat >&2 <<'MSG'
datagen needs a Chromium and found none. Install one of:
  - Debian/Ubuntu (as root):  apt-get install -y chromium
  - where downloads work:     .venv/bin/playwright install chromium
  - or set browser.executable in your pipeline file to a Chromium binary
MSG
exit 1
