// Host-side helpers of the raw-form launchers (kernels/kvbuffer_raw_params.h): pool and input validation, and the
// column-slice width of a launch.
#pragma once

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

}  // namespace kvb
