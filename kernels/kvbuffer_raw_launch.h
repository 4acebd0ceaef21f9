// Host-side helpers of the raw-form launchers (kernels/kvbuffer_raw_params.h): pool and input validation, the tiles
// and column-slice width of a launch, and the shared memory of a decode block.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/kvbuffer_raw_params.h"

namespace kvb {

/// "" when a raw pool is usable: pointers set, num_slots >= 1, 1 <= buffer_size <= kMaxRawBuffer,
/// max(buffer_size - 1, 1) <= capacity <= kMaxRawBuffer; else the reason.
std::string validate_raw_pool(const RawKVBufferPool& pool);

/// "" when `shape` and the token inputs of `batch` rows suit the raw form (validate_shape, validate_inputs, raw a and
/// b with A_log and dt_bias rather than prepared g / beta, head_dim_v a multiple of 16); else the reason.
std::string validate_raw_inputs(const GdnShape& shape, const TokenInputs& in, int batch);

/// Threads per block of every raw-form kernel.
constexpr int kThreadsRaw = 128;

/// The explicit tiles of the raw-form launchers (decode, verify, accept): 16x128, 32x128, 64x128.
const std::vector<TileShape>& raw_tiles();

/// "" when `tile` is auto, or one of raw_tiles() whose columns divide head_dim_v (at most 32 at head_dim_k = 256);
/// else the reason, naming the allowed tiles.
std::string validate_raw_tile(const TileShape& tile, const GdnShape& shape);

/// Columns per block (VB in {16, 32, 64}, dividing head_dim_v; at most 32 for head_dim_k = 256): the tile's when it
/// is not auto (validate_raw_tile first); auto: the widest that still gives `batch` rows at least 4 blocks per SM,
/// else the narrowest.
int raw_slice_width(int batch, const GdnShape& shape, const TileShape& tile = {});

/// Shared memory of one raw decode block, dynamic plus static (bytes), for `batch` rows of `shape` and buffer size
/// `buffer_size`: the width raw_slice_width(batch, shape) that an auto launch picks.
/// 0 when head_dim_k is not 32, 64, 128 or 256. Sets the blocks per SM (H200: 228 KiB per SM, 1 KiB reserved per
/// block).
size_t raw_decode_block_smem(const GdnShape& shape, int batch, int buffer_size);


}  // namespace kvb
