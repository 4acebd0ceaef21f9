// Deterministic random fills of device buffers (counter-based hash, so a value depends only on seed and index).
// Used to draw sweep inputs with Qwen3-Next's distributions (reference/qwen3_next_inputs.h documents them).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace kvb {

/// x[i] ~ N(mean, std) in fp32. Throws CudaError on a failed launch.
void fill_normal(float* x, size_t n, float mean, float std, uint64_t seed, cudaStream_t stream = nullptr);
/// x[i] ~ N(mean, std) rounded to bf16.
void fill_normal(__nv_bfloat16* x, size_t n, float mean, float std, uint64_t seed, cudaStream_t stream = nullptr);
/// Per-step log-decay g = -exp(A_log[h]) softplus(a + dt_bias[h]) with a ~ N(0, 1), for a tensor [..., HV] whose last
/// axis is the value head (A_log, dt_bias: device [HV]).
void fill_log_decay(float* g, size_t n, int heads_v, const float* A_log, const float* dt_bias, uint64_t seed,
                    cudaStream_t stream = nullptr);
/// x[i] = value for every byte pattern-free fill (used to poison outputs: NaN for floats).
void fill_bytes(void* x, size_t bytes, unsigned char value, cudaStream_t stream = nullptr);

}  // namespace kvb
