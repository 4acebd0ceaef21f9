"""The anchors: measurements of other projects' kernels on an H200 that the figures draw as labelled reference series.

The numbers live in one file, results/anchors.csv (one number a row: anchor, batch, draft_tokens, ring_length, value,
unit, gpu, source, date), which `kvb reproduce`'s claims read too; this module reads it once and names the series the
figures use. Qwen3-Next TP1 shape (H = 16, HV = 32, K = V = 128, bf16 q/k/v, fp32 state); one model step over 36
layers with distinct states, CUDA-graph replay, median, per-layer time = step / 36.
"""

import csv
import pathlib

ANCHORS_CSV = pathlib.Path(__file__).resolve().parent.parent / "results" / "anchors.csv"


def _rows(path=ANCHORS_CSV):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _int(text):
    return int(text) if text else 0


def _series(rows, anchor):
    """{batch: value} of an anchor's rows without draft tokens or ring length."""
    return {_int(r["batch"]): float(r["value"]) for r in rows
            if r["anchor"] == anchor and not r["draft_tokens"] and not r["ring_length"]}


def _by(rows, anchor, key):
    """{key value: {batch: value}} of an anchor's rows, key being draft_tokens or ring_length."""
    out = {}
    for r in rows:
        if r["anchor"] == anchor and r[key]:
            out.setdefault(_int(r[key]), {})[_int(r["batch"])] = float(r["value"])
    return out


_ROWS = _rows()

ANCHOR_GPU = next(r["gpu"] for r in _ROWS if r["anchor"] == "fla_recurrent_decode")

# Ceilings measured with a plain CUDA kernel over 4 GiB buffers (best of 10), in GB/s.
COPY_GBPS = next(float(r["value"]) for r in _ROWS if r["anchor"] == "copy_bandwidth")  # bytes read + written
READ_GBPS = next(float(r["value"]) for r in _ROWS if r["anchor"] == "read_bandwidth")

# flash-linear-attention 0.5.2 (Triton) fused_recurrent_gated_delta_rule, one decode token: batch -> per-layer us.
FLA_RECURRENT_US = _series(_ROWS, "fla_recurrent_decode")
FLA_LABEL = "fla Triton recurrent (anchor, H200)"

# FlashInfer 0.7.2 gdn_decode, fp32-state recurrent decode: batch -> per-layer us.
FLASHINFER_RECURRENT_US = _series(_ROWS, "flashinfer_recurrent_decode")
FLASHINFER_LABEL = "FlashInfer recurrent (anchor, H200)"

# The read-only state floor beside it (batch x HV*K*V*4 bytes at READ_GBPS): batch -> us (rounded to 0.1 us).
READ_STATE_FLOOR_US = _series(_ROWS, "state_read_floor")

# SGLang ReplaySSM Triton decode (buffered corrected deltas, staggered write positions):
# ring length L -> {batch -> per-layer us}.
REPLAYSSM_US = _by(_ROWS, "replayssm_decode", "ring_length")
REPLAYSSM_LABEL = "SGLang ReplaySSM (anchor, H200)"

# SGLang speculative-verify kernel: draft tokens m -> {batch -> per-layer us}.
SPEC_VERIFY_US = _by(_ROWS, "sglang_verify", "draft_tokens")
SPEC_VERIFY_LABEL = "SGLang speculative verify (anchor, H200)"

# ReplaySSM research fork's speculative verify (checkpoint + circular cache, every draft accepted, best of B = 8
# and 16): verify alone, and verify + flush + commit per step. Draft tokens m -> {batch -> per-layer us}.
REPLAYSSM_VERIFY_US = _by(_ROWS, "replayssm_verify", "draft_tokens")
REPLAYSSM_VERIFY_LABEL = "ReplaySSM verify alone (anchor, H200)"
REPLAYSSM_VERIFY_COMMIT_US = _by(_ROWS, "replayssm_verify_flush_commit", "draft_tokens")
REPLAYSSM_VERIFY_COMMIT_LABEL = "ReplaySSM verify + flush + commit, all (anchor, H200)"

# FlashInfer 0.7.2's bf16-state verify + flush (gated_delta_rule_mtp_ucache_flush; bf16 checkpoint and ring, fp32
# accumulators), timed by peers/flashinfer_verify_anchor.py with this harness's protocol: verify alone with no row
# folding (windows one row below the fold), and verify + flush with every draft accepted and the cursors committed
# each step, the cadence of a kvbuffer_verify row with accepted = all. Draft tokens m -> {batch -> per-layer us}.
# Drawn on bf16-state figures. (anchors.csv keeps the earlier flashinfer_bf16_wy_verify* rows, whose window fill was
# not recorded.)
FLASHINFER_BF16_VERIFY_US = _by(_ROWS, "flashinfer_bf16_verify_no_fold", "draft_tokens")
FLASHINFER_BF16_VERIFY_LABEL = "FlashInfer bf16-state verify alone, no fold (anchor, H200)"
FLASHINFER_BF16_VERIFY_FLUSH_US = _by(_ROWS, "flashinfer_bf16_verify_flush_all", "draft_tokens")
FLASHINFER_BF16_VERIFY_FLUSH_LABEL = "FlashInfer bf16-state verify + flush, all (anchor, H200)"
