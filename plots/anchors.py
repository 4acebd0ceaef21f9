"""Reference numbers from the project's anchors document (the README's anchors, "Measured on an NVIDIA H200"), 2026-11-29.

These are measurements of other projects' kernels quoted in that document, not results of this project: the figures
draw them as labelled reference series. NVIDIA H200 (132 SMs, 60 MB L2, driver 580, CUDA 13.0); Qwen3-Next TP1
shape (H = 16, HV = 32, K = V = 128, bf16 q/k/v, fp32 state); one model step over 36 layers with distinct states,
CUDA-graph replay, median, per-layer time = step / 36.
"""

ANCHOR_GPU = "NVIDIA H200"

# Ceilings measured with a plain CUDA kernel over 4 GiB buffers (best of 10), in GB/s.
COPY_GBPS = 3990.0  # bytes read + written
READ_GBPS = 4570.0

# flash-linear-attention 0.5.2 (Triton) fused_recurrent_gated_delta_rule, one decode token:
# batch -> per-layer latency (us).
FLA_RECURRENT_US = {1: 3.9, 8: 13.6, 32: 48.9, 64: 94.0, 128: 184.1, 256: 364.4, 512: 725.8}
FLA_LABEL = "fla Triton recurrent (anchor, H200)"

# The same table's "floor read state only @ 4.57 TB/s" column: batch -> us (rounded to 0.1 us).
READ_STATE_FLOOR_US = {1: 0.5, 8: 3.7, 32: 14.7, 64: 29.4, 128: 58.7, 256: 117.5, 512: 235.0}

# SGLang ReplaySSM Triton decode (buffered corrected deltas, staggered write positions):
# ring length L -> {batch -> per-layer latency (us)}.
REPLAYSSM_US = {
    1: {8: 16.1, 32: 50.1, 64: 93.7, 128: 177.1, 256: 343.4, 512: 669.9},
    4: {8: 13.4, 32: 34.2, 64: 56.5, 128: 101.6, 256: 192.8, 512: 380.9},
    8: {8: 12.4, 32: 30.7, 64: 50.9, 128: 90.7, 256: 172.0, 512: 337.8},
    16: {8: 11.1, 32: 28.7, 64: 48.6, 128: 86.6, 256: 163.6, 512: 321.7},
    32: {8: 10.8, 32: 29.6, 64: 51.2, 128: 92.3, 256: 174.4, 512: 343.6},
}
REPLAYSSM_LABEL = "SGLang ReplaySSM (anchor, H200)"

# SGLang speculative-verify kernel: draft tokens m -> {batch -> per-layer latency (us)}.
SPEC_VERIFY_US = {
    1: {64: 77.5, 256: 284.7},
    2: {64: 115.1, 256: 428.3},
    4: {64: 187.6, 256: 709.4},
    8: {64: 333.1, 256: 1301.6},
}
SPEC_VERIFY_LABEL = "SGLang speculative verify (anchor, H200)"
