// Standalone KVBuffer flush (DESIGN.md section 3): S0 <- e^{G_n} S0 + sum_j e^{G_n - G_j} k^_j u_j^T for the listed
// slots, n = fill[slot]. Slots with a state and n = 0 are left untouched. fill is not changed (launch_kvbuffer_clear
// does that). A stateless entry (has_state 0) folds into a zero tile without reading a checkpoint and writes it at
// state_slot.
// Grid: (V slices, HV, count).
#include <string>

#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"
#include "kernels/launch_util.h"

namespace kvb {
namespace {

using namespace dev;

template <int K, int VB>
__global__ void __launch_bounds__(kThreads) kvbuffer_flush_kernel(const KVBufferFlushParams p) {
  using Tile = SmemTile<K, VB>;
  extern __shared__ float4 dyn_smem[];  // [K + capacity][VB] tile, then the BufferSmem arrays
  const int v0 = blockIdx.x * VB, h = blockIdx.y;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const KVBufferPool& pool = p.pool;
  const int slot = p.slot[blockIdx.z];
  if (slot < 0 || slot >= pool.num_slots) return;
  const bool has_state = !p.has_state || p.has_state[blockIdx.z] != 0;
  const int cslot = p.state_slot ? p.state_slot[blockIdx.z] : slot;
  if (cslot < 0 || cslot >= pool.checkpoint_rows()) return;  // no checkpoint row: nothing written
  const int n = min(max(pool.fill[slot], 0), pool.capacity);
  if (n == 0 && has_state) return;
  float* s0 = static_cast<float*>(pool.checkpoint) + (int64_t(cslot) * HV + h) * K * V;
  const int64_t e0 = int64_t(slot) * pool.capacity;
  Tile tile;
  tile.setup(dyn_smem, v0, V);
  tile.load_extra_async(pool.fp32_deltas() + (e0 * HV + h) * V, int64_t(HV) * V, n);
  BufferSmem<K> bs;
  bs.setup(dyn_smem + (K + pool.capacity) * Tile::CG, pool.capacity);
  bs.load_async(pool, H, HV, slot, h, hk, n);
  cp_async_commit();
  if (has_state) tile.load_state_async(s0, V);  // streams while the coefficients are formed; stateless: nothing read
  cp_async_commit();
  cp_async_wait_group<1>();
  __syncthreads();
  buffer_coefficients<K>(n, 0.f, nullptr, nullptr, QKNorm{1.f, 1.f, 0.f}, bs);
  cp_async_wait_all();
  __syncthreads();
  const float decay0 = bs.decay0[0];  // e^{G_n}
  const float zero[4] = {0.f, 0.f, 0.f, 0.f};  // no token: k^ and u zero
  fold_and_store<K>(s0, V, decay0, [](int) { return 0.f; }, zero, /*from_zero=*/!has_state, n, bs, tile);
}

template <int K, int VB>
cudaError_t launch_tile(const KVBufferFlushParams& p, cudaStream_t stream) {
  const dim3 grid(num_slices(p.shape.head_dim_v, VB), p.shape.heads_v, p.count);
  const size_t smem = SmemTile<K, VB>::bytes(p.pool.capacity) + BufferSmem<K>::bytes(p.pool.capacity);
  if (const cudaError_t e = allow_dynamic_smem(kvbuffer_flush_kernel<K, VB>, smem); e != cudaSuccess) return e;
  kvbuffer_flush_kernel<K, VB><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

std::string validate(const KVBufferFlushParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (p.count < 1) return "count = " + std::to_string(p.count) + " must be >= 1";
  if (!p.slot) return "slot must be set";
  if (auto e = validate_pool(p.pool); !e.empty()) return e;
  if (auto e = validate_fp32_deltas(p.pool, "kvbuffer flush"); !e.empty()) return e;
  return validate_fp32_checkpoint(p.pool, "kvbuffer flush");
}

cudaError_t launch_kvbuffer_flush(const KVBufferFlushParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  switch (p.shape.head_dim_k) {
    case 32: return launch_tile<32, 32>(p, stream);
    case 64: return launch_tile<64, 32>(p, stream);
    case 128: return launch_tile<128, 32>(p, stream);
    case 256: return launch_tile<256, 16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace kvb
