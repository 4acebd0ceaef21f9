#!/usr/bin/env bash
# Installs the build dependencies (apt-get, Debian/Ubuntu, only when run as root; otherwise lists what is missing)
# and the Python packages of plots/ and its test (pip, tests/plots/requirements.txt), and builds kvbuffer-bench into
# build/release (override with KVB_BUILD_DIR; CUDA architecture with KVB_CUDA_ARCH, default 90a).
# Usage: scripts/setup.sh [--deps-only] [cmake build targets...]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KVB_BUILD_DIR:-$ROOT/build/release}"
PACKAGES=(build-essential cmake ninja-build git libeigen3-dev libfmt-dev libcli11-dev libtomlplusplus-dev
          libgtest-dev libbenchmark-dev python3 python3-matplotlib)

deps_only=0
if [[ "${1:-}" == "--deps-only" ]]; then
  deps_only=1
  shift
fi

# 1. Packages.
if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
      echo "setup: installing ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -q
      apt-get install -y -q --no-install-recommends "${missing[@]}"
    else
      echo "setup: missing packages: ${missing[*]}" >&2
      echo "setup: install them with: sudo apt-get install ${missing[*]}   (trying to build anyway)" >&2
    fi
  fi
else
  echo "setup: not a Debian system; make sure these (or equivalents) are installed: ${PACKAGES[*]}" >&2
fi

# 2. Python packages for the figures (plots/) and their test (pinned in tests/plots/requirements.txt), installed with
# pip into the python3 on PATH (KVB_PYTHON overrides) when run as root or inside a virtual environment. Where pip may
# not install (a distribution's externally managed Python), root falls back to Debian's python3-pytest.
PYTHON="${KVB_PYTHON:-$(command -v python3 || true)}"
PY_REQUIREMENTS="$ROOT/tests/plots/requirements.txt"
py_has_deps() { "$PYTHON" -c "import matplotlib, pytest" >/dev/null 2>&1; }
if [[ -z "$PYTHON" ]]; then
  echo "setup: no python3 found; the plots test is left out" >&2
elif [[ "$(id -u)" == 0 || -n "${VIRTUAL_ENV:-}" ]]; then
  if ! PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install -q -r "$PY_REQUIREMENTS"; then
    echo "setup: pip could not install $PY_REQUIREMENTS into $PYTHON" >&2
    if ! py_has_deps && [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
      echo "setup: installing python3-matplotlib python3-pytest with apt-get instead"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-matplotlib python3-pytest
    fi
  fi
elif ! py_has_deps; then
  echo "setup: for the plots test install: $PYTHON -m pip install -r $PY_REQUIREMENTS" >&2
fi
((deps_only)) && exit 0

# 3. CUDA toolkit.
NVCC="${CUDACXX:-}"
if [[ -z "$NVCC" ]]; then
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then NVCC=/usr/local/cuda/bin/nvcc
  elif command -v nvcc >/dev/null 2>&1; then NVCC="$(command -v nvcc)"
  else
    echo "setup: no CUDA toolkit found (looked for /usr/local/cuda/bin/nvcc and nvcc on PATH; CUDA 12 or newer is" \
         "needed to build, a GPU is not)" >&2
    exit 1
  fi
fi

# 4. Configure and build. KVB_PLOT_TESTS (AUTO, ON, OFF; default AUTO) says whether the plots test must run.
echo "setup: building in $BUILD_DIR with $NVCC"
py_args=()
[[ -n "$PYTHON" ]] && py_args=(-DPython3_EXECUTABLE="$PYTHON")
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${KVB_CUDA_ARCH:-90a}" -DCMAKE_CUDA_COMPILER="$NVCC" \
  -DKVB_PLOT_TESTS="${KVB_PLOT_TESTS:-AUTO}" "${py_args[@]}"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
