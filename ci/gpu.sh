#!/usr/bin/env bash
# CI on a GPU runner: build, run the test suite (GPU tests included), run the smoke grid (experiments/ci_smoke.toml)
# and compare it against the committed baseline (results/baseline/ci_smoke.csv) with kvb compare; then the same for
# the speculative-verification kernels (experiments/ci_smoke_verify.toml against the committed
# results/spec_verify_kernels.csv).
#
# Usage: ci/gpu.sh                     the CI job
#        ci/gpu.sh --update-baseline   build, test, run the smoke grid and make it the baseline (then commit it)
# Environment: KVB_BUILD_DIR (default build/release), OUT_DIR (default $KVB_BUILD_DIR/ci), KVB_BASELINE (default
#   results/baseline/ci_smoke.csv), KVB_THRESHOLD (percent, default 5), KVB_CI_BENCH=1 also runs kvb_bench into
#   $OUT_DIR/kvb_bench.json, KVB_SKIP_BUILD=1 uses the binaries already in KVB_BUILD_DIR (a runner that received a
#   build folder instead of the sources' dependencies) and runs its test binary directly. Writes $OUT_DIR/ci_smoke.csv and $OUT_DIR/compare.md (appended to $GITHUB_STEP_SUMMARY
#   when that is set).
#   The tests run with KVB_REQUIRE_GPU_TESTS=1: a GPU test that skips (no device seen, CUPTI refused, another CUDA
#   tool attached) fails the job.
# Exit status: 0 pass; 1 a test (a skipped GPU test included) or a smoke point failed, or a point is slower than the
# baseline beyond the threshold and the spread; 2 no GPU, no baseline, or input kvb compare cannot use (different GPU,
# no common points).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${KVB_BUILD_DIR:-$ROOT/build/release}"
export KVB_BUILD_DIR="$BUILD_DIR"
OUT_DIR="${OUT_DIR:-$BUILD_DIR/ci}"
BASELINE="${KVB_BASELINE:-$ROOT/results/baseline/ci_smoke.csv}"
THRESHOLD="${KVB_THRESHOLD:-5}"
KVB="$BUILD_DIR/kvb"

update=0
case "${1:-}" in
  --update-baseline) update=1 ;;
  "") ;;
  *) echo "ci/gpu.sh: unknown argument '$1' (allowed: --update-baseline)" >&2; exit 2 ;;
esac
if ((!update)) && [[ ! -f "$BASELINE" ]]; then
  echo "ci/gpu.sh: no baseline at $BASELINE (create it on the reference GPU with: ci/gpu.sh --update-baseline)" >&2
  exit 2
fi

# Every GPU test must run here: one that would skip (no device seen, CUPTI refused, another CUDA tool attached) fails
# instead (tests/gpu/gpu_test_util.h, KVB_SKIP_GPU_TEST).
export KVB_REQUIRE_GPU_TESTS=1
require_gpu() {
  if ! "$KVB" info --gpu-present; then
    echo "ci/gpu.sh: no CUDA device found; this job needs a GPU runner" >&2
    exit 2
  fi
}

if [[ "${KVB_SKIP_BUILD:-0}" == 1 ]]; then
  require_gpu
  echo "== test ($BUILD_DIR/tests/kvb_tests, prebuilt)"
  if ! "$BUILD_DIR/tests/kvb_tests"; then
    echo "ci/gpu.sh: a test failed" >&2
    exit 1
  fi
else
  echo "== build (scripts/setup.sh)"
  if ! "$ROOT/scripts/setup.sh"; then
    echo "ci/gpu.sh: the build failed" >&2
    exit 1
  fi
  require_gpu
  echo "== test (scripts/test.sh)"
  if ! "$ROOT/scripts/test.sh"; then
    echo "ci/gpu.sh: a test failed" >&2
    exit 1
  fi
fi
"$KVB" info

echo "== smoke sweep (experiments/ci_smoke.toml)"
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR/ci_smoke.csv"  # a fresh run: an old file would be resumed, not measured again
sweep_status=0
"$KVB" sweep --config experiments/ci_smoke.toml --out "$OUT_DIR/ci_smoke.csv" || sweep_status=$?
if ((sweep_status == 2)); then exit 2; fi

if [[ "${KVB_CI_BENCH:-0}" == 1 ]]; then
  echo "== kvb_bench"
  "$BUILD_DIR/kvb_bench" --benchmark_out="$OUT_DIR/kvb_bench.json" --benchmark_out_format=json
fi

if ((update)); then
  if ((sweep_status != 0)); then
    echo "ci/gpu.sh: a smoke point failed; not updating the baseline" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$BASELINE")"
  cp "$OUT_DIR/ci_smoke.csv" "$BASELINE"
  echo "ci/gpu.sh: wrote the baseline $BASELINE; commit it"
  exit 0
fi

echo "== compare against $BASELINE (threshold $THRESHOLD%)"
compare_status=0
"$KVB" compare "$BASELINE" "$OUT_DIR/ci_smoke.csv" --threshold "$THRESHOLD" --markdown >"$OUT_DIR/compare.md" ||
  compare_status=$?
cat "$OUT_DIR/compare.md"
if [[ -n "${GITHUB_STEP_SUMMARY:-}" && -s "$OUT_DIR/compare.md" ]]; then cat "$OUT_DIR/compare.md" >>"$GITHUB_STEP_SUMMARY"; fi

echo "== verify smoke (experiments/ci_smoke_verify.toml) against results/spec_verify_kernels.csv"
rm -f "$OUT_DIR/ci_smoke_verify.csv"
verify_status=0
"$KVB" sweep --config experiments/ci_smoke_verify.toml --out "$OUT_DIR/ci_smoke_verify.csv" || verify_status=$?
if ((verify_status == 2)); then exit 2; fi
verify_compare=0
"$KVB" compare "$ROOT/results/spec_verify_kernels.csv" "$OUT_DIR/ci_smoke_verify.csv" --threshold "$THRESHOLD" --markdown \
  >"$OUT_DIR/compare_verify.md" || verify_compare=$?
cat "$OUT_DIR/compare_verify.md"
if [[ -n "${GITHUB_STEP_SUMMARY:-}" && -s "$OUT_DIR/compare_verify.md" ]]; then
  cat "$OUT_DIR/compare_verify.md" >>"$GITHUB_STEP_SUMMARY"
fi
if ((verify_status != 0)); then sweep_status=$verify_status; fi
if ((compare_status == 0)); then compare_status=$verify_compare; fi

if ((compare_status != 0)); then exit "$compare_status"; fi
if ((sweep_status != 0)); then
  echo "ci/gpu.sh: a smoke point failed (see its status in $OUT_DIR/ci_smoke.csv)" >&2
  exit 1
fi
echo "ci/gpu.sh: pass"
