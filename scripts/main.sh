#!/usr/bin/env bash
# The main job: set up and build (scripts/setup.sh), then
#   kvb info                                         GPU, versions, measured bandwidth
#   kvb check-golden tests/data/golden/*.gdn         float64 reference (and the kernels on a GPU) vs golden cases
#   kvb sweep --config experiments/decode_latency.toml   on a GPU only -> $KVB_BUILD_DIR/results/decode_latency.csv
#                                                    (a fresh file of this machine's own; rerunning resumes it; the
#                                                    committed results/ stay as they are until you copy it there)
# Without a GPU it says what it ran and what it skipped. Exit status: non-zero when any step failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KVB_BUILD_DIR:-$ROOT/build/release}"
export KVB_BUILD_DIR="$BUILD_DIR"
KVB="$BUILD_DIR/kvb"
cd "$ROOT"

"$ROOT/scripts/setup.sh" kvb || { echo "main: setup or build failed" >&2; exit 1; }

ran=()
skipped=()
failed=()
step() {  # step NAME COMMAND...
  local name="$1"
  shift
  echo
  echo "== $name"
  if "$@"; then ran+=("$name"); else failed+=("$name (exit $?)"); fi
}

gpu=0
"$KVB" info --gpu-present && gpu=1

step "kvb info" "$KVB" info
if ((gpu)); then
  step "kvb check-golden (reference and GPU kernels)" "$KVB" check-golden tests/data/golden/*.gdn
  step "kvb sweep decode_latency -> $BUILD_DIR/results/decode_latency.csv" \
    "$KVB" sweep --config experiments/decode_latency.toml --out "$BUILD_DIR/results/decode_latency.csv"
else
  step "kvb check-golden (float64 reference only)" "$KVB" check-golden tests/data/golden/*.gdn
  skipped+=("GPU kernel golden checks (no CUDA device)")
  skipped+=("kvb sweep --config experiments/decode_latency.toml (no CUDA device; its points: $KVB sweep --config experiments/decode_latency.toml --out $BUILD_DIR/results/decode_latency.csv --dry-run)")
fi

echo
echo "== main: summary"
for s in "${ran[@]}"; do echo "ran:     $s"; done
for s in "${skipped[@]}"; do echo "skipped: $s"; done
for s in "${failed[@]}"; do echo "FAILED:  $s"; done
((${#failed[@]} == 0))
