#!/usr/bin/env bash
# Installs the build dependencies (apt-get, Debian/Ubuntu, only when run as root; otherwise lists what is missing)
# and builds kvbuffer-bench into build/release (override with KVB_BUILD_DIR; CUDA architecture with KVB_CUDA_ARCH,
# default 90a).
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
((deps_only)) && exit 0

# 2. CUDA toolkit.
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

# 3. Configure and build.
echo "setup: building in $BUILD_DIR with $NVCC"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${KVB_CUDA_ARCH:-90a}" -DCMAKE_CUDA_COMPILER="$NVCC"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
