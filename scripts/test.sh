#!/usr/bin/env bash
# Sets up (scripts/setup.sh), builds everything and runs the test suite with ctest. Without a GPU the GPU tests skip
# with a reason; the output ends with ctest's summary line and the count of skipped tests. Exit status: ctest's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KVB_BUILD_DIR:-$ROOT/build/release}"
export KVB_BUILD_DIR="$BUILD_DIR"

"$ROOT/scripts/setup.sh"

# GPU tests share one device: run them one at a time when there is one.
jobs="$(nproc)"
if "$BUILD_DIR/kvb" info --gpu-present; then jobs=1; fi
cd "$BUILD_DIR"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
ctest --output-on-failure -j "$jobs" 2>&1 | tee "$log"
status="${PIPESTATUS[0]}"
set -e
# ctest lists skipped tests after its summary; repeat the summary line last, with the count of skipped tests
# (GPU tests without a CUDA device: their reason shows with `ctest -V`).
echo
grep -E "tests passed|tests failed" "$log" | tail -n 1 || echo "ctest produced no summary (exit $status)"
skipped="$(grep -cE "\(Skipped\)$" "$log" || true)"
if [ "$skipped" -gt 0 ]; then
  echo "$skipped of them skipped (without a CUDA device: the GPU tests; 'ctest -V' prints each reason)"
fi
exit "$status"
