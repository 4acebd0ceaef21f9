// Host-side helpers shared by the launchers: input validation and cached device facts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/gdn_params.h"

namespace kvb {

/// Calls launch(std::integral_constant<int, K>{}) for head_dim_k = K in {32, 64, 128, 256}, the head dimensions every
/// kernel is instantiated for; cudaErrorInvalidValue for any other.
template <class Launch>
cudaError_t by_head_dim_k(int head_dim_k, Launch&& launch) {
  switch (head_dim_k) {
    case 32: return launch(std::integral_constant<int, 32>{});
    case 64: return launch(std::integral_constant<int, 64>{});
    case 128: return launch(std::integral_constant<int, 128>{});
    case 256: return launch(std::integral_constant<int, 256>{});
  }
  return cudaErrorInvalidValue;
}

/// "" when the token inputs hold every pointer the kernels need for `batch` rows, else the reason.
std::string validate_inputs(const TokenInputs& in, int batch);

/// "" when 1 <= m <= kMaxDraftTokens (draft tokens of a verify or accept launch), else the reason naming the range.
std::string validate_draft_tokens(int m);

/// "" when a KVBuffer pool is usable (pointers set, 1 <= buffer_size, max(buffer_size - 1, 1) <= capacity <=
/// kMaxBuffer, num_checkpoints >= 0), else the reason.
std::string validate_pool(const KVBufferPool& pool);
/// "" when the pool's checkpoints are fp32, else the reason naming state_dtype and `family` (the kernels other than
/// KVBuffer decode and the tensor-core verify take fp32 checkpoints only).
std::string validate_fp32_checkpoint(const KVBufferPool& pool, const char* family);
/// "" when the pool's deltas are fp32, else the reason naming delta_dtype and `family` (every kernel but the staged
/// verify takes fp32 deltas only).
std::string validate_fp32_deltas(const KVBufferPool& pool, const char* family);

/// The static shared memory of `kernel` in `bytes`, read with cudaFuncGetAttributes on the first call per kernel and
/// cached (launchers ask on every launch, which kvb_bench times). Returns that call's error, or cudaSuccess.
cudaError_t static_smem_bytes(const void* kernel, size_t& bytes);

/// Lets `kernel` take `bytes` of dynamic shared memory: raises its limit when `bytes` plus the kernel's static shared
/// memory pass the default 48 KiB (the default caps their sum, whatever an earlier launch of the same kernel raised).
/// Returns the error of cudaFuncGetAttributes or cudaFuncSetAttribute, or cudaSuccess.
template <class Kernel>
cudaError_t allow_dynamic_smem(Kernel kernel, size_t bytes) {
  size_t static_bytes = 0;
  if (const cudaError_t e = static_smem_bytes(reinterpret_cast<const void*>(kernel), static_bytes); e != cudaSuccess)
    return e;
  if (bytes + static_bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

/// Blocks of `block_bytes` of shared memory each (dynamic plus static) that one SM of the current device holds, each
/// rounded up to the 128-byte allocation unit and with the per-block reservation counted (device attributes read
/// once per device and cached; 2 when they cannot be read). Lets a launcher choose between kernel variants by size
/// without loading either; registers may hold a kernel to fewer blocks.
int smem_blocks_per_sm(size_t block_bytes);

/// Streaming multiprocessors of the current device (cached per device; 132 when it cannot be read).
int sm_count();
/// Batch rows a launch holds at once on this GPU: resident blocks per SM x SMs / blocks a row takes (the wave a row
/// order keeps its due rows out of, kernels/row_order.h); 0 when a row takes no blocks.
int wave_rows(int resident_blocks_per_sm, int64_t blocks_per_row);

/// Blocks of `kernel` (`threads` per block, `smem` bytes of dynamic shared memory) that one SM of the current device
/// holds at once, in `per_sm` (cudaOccupancyMaxActiveBlocksPerMultiprocessor, cached per device, kernel, threads and
/// smem: launchers ask on every launch). Returns the query's error, or cudaSuccess.
cudaError_t resident_blocks_per_sm(const void* kernel, int threads, size_t smem, int& per_sm);

/// Blocks per SM, one per (row, value head), at and above which every launcher takes its widest-grid kernels (the
/// largest of their thresholds: recurrent decode's kv tiles; narrow_slices and the verify launchers switch lower).
constexpr int kWideGridBlocksPerSm = 8;

/// The decode launchers' rule for 16-wide V slices: true when `batch` rows of `shape` in 32-wide slices
/// (batch * heads_v * ceil(head_dim_v / 32) blocks) make fewer than 4 blocks per SM, i.e. the batch alone does not
/// fill the GPU.
bool narrow_slices(int batch, const GdnShape& shape);

/// True when `batch` rows of `shape` give at least kWideGridBlocksPerSm blocks per SM at one block per (row, value
/// head): the batch at which the decode launchers take their widest-grid tiles.
bool wide_grid(int batch, const GdnShape& shape);

}  // namespace kvb
