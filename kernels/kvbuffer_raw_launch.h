// Host-side helpers of the raw-form launchers (kernels/kvbuffer_raw_params.h): pool and input validation, the
// column-slice width and decode kernel of a launch (with their environment overrides for A/B measurements), and the
// shared-memory limit of a kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "kernels/kvbuffer_raw_params.h"

namespace kvb {

/// "" when a raw pool is usable: pointers set, num_slots >= 1, 1 <= buffer_size <= kMaxRawBuffer,
/// max(buffer_size - 1, 1) <= capacity <= kMaxRawBuffer; else the reason.
std::string validate_raw_pool(const RawKVBufferPool& pool);

/// "" when `shape` and the token inputs of `batch` rows suit the raw form (validate_shape, validate_inputs, raw a and
/// b with A_log and dt_bias rather than prepared g / beta, head_dim_v a multiple of 16); else the reason.
std::string validate_raw_inputs(const GdnShape& shape, const TokenInputs& in, int batch);

/// Columns per block (VB in {16, 32, 64}, dividing head_dim_v; at most 32 for head_dim_k = 256): the widest that
/// still gives `batch` rows at least 4 blocks per SM, else the narrowest. KVB_RAW_TILE=VB (16, 32 or 64) forces a
/// width for A/B measurements when it divides head_dim_v (read once per process).
int raw_slice_width(int batch, const GdnShape& shape);

/// Shared memory of one raw decode block, dynamic plus static (bytes), for `batch` rows of `shape` and buffer size
/// `buffer_size`: the width raw_slice_width(batch, shape) that a launch picks.
/// 0 when head_dim_k is not 32, 64, 128 or 256. Sets the blocks per SM (H200: 228 KiB per SM, 1 KiB reserved per
/// block).
size_t raw_decode_block_smem(const GdnShape& shape, int batch, int buffer_size);


}  // namespace kvb
