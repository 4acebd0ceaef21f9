// KVBuffer decode, raw form (DESIGN.md section 3, "Raw form"; algebra in kernels/kvbuffer_raw_params.h). Per row with
// n = fill[slot] raw entries and the new token as entry t = n: the output from one pass over S0 with the effective
// query, then either the raw entry appended at position n, or (n + 1 = B) the fold of all B entries into S0 on
// tensor cores. Grid: (V / VB slices, HV, N); block: kThreads threads (kernels/kvbuffer_raw_device.cuh).
#include <string>

#include "kernels/kvbuffer_raw_device.cuh"
#include "kernels/kvbuffer_raw_launch.h"
#include "kernels/launch_util.h"

namespace kvb {
namespace {

using namespace dev;

template <int K, int VB>
size_t decode_smem_bytes(int buffer_size) {
  return RawSmem<K, VB>::bytes(buffer_size, 1, true) + 128;  // + alignment slack
}

template <int K, int VB>
__global__ void __launch_bounds__(kThreads) kvbuffer_raw_decode_kernel(const RawKVBufferDecodeParams p) {
  using Tile = SmemTile<K, VB, kThreads>;
  extern __shared__ __align__(16) char dyn_smem[];  // decode_smem_bytes<K, VB>(B)
  __shared__ float red[2 * Tile::WARPS * VB];
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const RawKVBufferPool& pool = p.pool;
  const int slot = p.slot[row];
  const int64_t vo = (int64_t(row) * HV + h) * V;
  if (slot < 0 || slot >= pool.num_slots) {  // padding row: pool untouched, output zeroed
    zero_output_slice(p.o, p.o_dtype, vo, v0, VB, V);
    return;
  }
  const int B = pool.buffer_size;
  const int n = min(max(pool.fill[slot], 0), B - 1);  // precondition 0 <= fill < B; clamped
  float* s0 = pool.checkpoint + (int64_t(slot) * HV + h) * K * V;
  const int64_t e0 = int64_t(slot) * pool.capacity;

  RawSmem<K, VB> sm;
  sm.setup(dyn_smem + ((128 - (__cvta_generic_to_shared(dyn_smem) & 127)) & 127), B, 1, true);
  sm.T = n + 1;
  Tile tile;
  tile.setup(reinterpret_cast<float4*>(sm.tile), v0, V);
  tile.load_state_async(s0, V);
  sm.load_pool_async(pool, H, HV, V, e0, 0, n, h, hk, v0);
  sm.load_tokens_async(p.in, H, HV, V, row, n, 1, h, hk, v0, true);
  cp_async_commit();
  raw_gates(sm, pool, p.in, HV, e0, n, row, h);
  cp_async_wait_all();
  __syncthreads();

  raw_gram<K>(sm);
  raw_system(sm, n, p.in.scale);
  raw_solve_queries(sm, n);
  raw_effective_queries<K>(sm, n);
  float acc[1][4], unused[4] = {0.f, 0.f, 0.f, 0.f};
  raw_output_partials<1, Tile, K>(tile, sm, acc);
  tile.reduce_rows(acc[0], unused, red);
  if (tile.rg == 0 && tile.active) store_output4(p.o, p.o_dtype, vo + tile.col, acc[0]);

  if (n + 1 == B) {  // flush: S0 <- e^{G_t} S0 + sum_j e^{G_t - G_j} k^_j u_j^T over the B entries
    raw_fold<K, VB>(sm, s0, V, v0);
    return;
  }
  // Append the raw entry at position n: this slice of v, and (one block per head) a, b and the key.
  const int64_t e = e0 + n;
  for (int c = threadIdx.x; c < VB / 8; c += blockDim.x)
    reinterpret_cast<uint4*>(pool.values + (e * HV + h) * V + v0)[c] =
        reinterpret_cast<const uint4*>(p.in.v + vo + v0)[c];
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) {
      pool.gate_a[e * HV + h] = p.in.a[int64_t(row) * HV + h];
      pool.gate_b[e * HV + h] = p.in.b[int64_t(row) * HV + h];
    }
    if (h % p.shape.group() == 0)
      for (int c = threadIdx.x; c < K / 8; c += blockDim.x)
        reinterpret_cast<uint4*>(pool.keys + (e * H + hk) * K)[c] =
            reinterpret_cast<const uint4*>(p.in.k + (int64_t(row) * H + hk) * K)[c];
  }
}

template <int K, int VB>
cudaError_t launch_tile(const RawKVBufferDecodeParams& p, cudaStream_t stream) {
  const size_t smem = decode_smem_bytes<K, VB>(p.pool.buffer_size);
  if (const cudaError_t e = allow_dynamic_smem(kvbuffer_raw_decode_kernel<K, VB>, smem); e != cudaSuccess) return e;
  const dim3 grid(p.shape.head_dim_v / VB, p.shape.heads_v, p.batch);
  kvbuffer_raw_decode_kernel<K, VB><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

template <int K>
cudaError_t launch_width(const RawKVBufferDecodeParams& p, cudaStream_t stream) {
  switch (raw_slice_width(p.batch, p.shape)) {
    case 64: if constexpr (K < 256) return launch_tile<K, 64>(p, stream); else break;
    case 32: return launch_tile<K, 32>(p, stream);
    case 16: return launch_tile<K, 16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

std::string validate(const RawKVBufferDecodeParams& p) {
  if (auto e = validate_raw_inputs(p.shape, p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens != 1) return "tokens = " + std::to_string(p.in.tokens) + ": raw decode takes 1 token per row";
  if (auto e = validate_raw_pool(p.pool); !e.empty()) return e;
  if (!p.slot || !p.o) return "slot and o must be set";
  return "";
}

cudaError_t launch_kvbuffer_raw_decode(const RawKVBufferDecodeParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  switch (p.shape.head_dim_k) {
    case 32: return launch_width<32>(p, stream);
    case 64: return launch_width<64>(p, stream);
    case 128: return launch_width<128>(p, stream);
    case 256: return launch_width<256>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace kvb
