// KVBuffer speculative verification and accept, raw form (DESIGN.md section 3; algebra in
// kernels/kvbuffer_raw_params.h). Verify: the m drafts are entries n .. n + m - 1 after the n buffered ones; draft q's
// output comes from its own effective query (d solved against the whole (I + A)^T, zero past entry n + q), so all m
// outputs take one pass over S0; nothing is written but the outputs. Accept: append the first a drafts' raw inputs,
// or fold the n buffered and a accepted entries into S0 on tensor cores when n + a >= B.
// Grids: (V / VB slices, HV, N); blocks of kThreads.
#include <string>

#include "kernels/kvbuffer_raw_device.cuh"
#include "kernels/kvbuffer_raw_launch.h"
#include "kernels/launch_util.h"

namespace kvb {
namespace {

using namespace dev;
constexpr int kM = kMaxDraftTokens;

template <int K, int VB>
__global__ void __launch_bounds__(kThreads) kvbuffer_raw_verify_kernel(const RawKVBufferVerifyParams p) {
  using Tile = SmemTile<K, VB, kThreads>;
  extern __shared__ __align__(16) char dyn_smem[];  // RawSmem(B - 1 + m entries, m queries, no fold) + 128
  __shared__ float red[2][2 * Tile::WARPS * VB];
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const RawKVBufferPool& pool = p.pool;
  const int m = p.in.tokens, slot = p.slot[row];
  const int64_t tok0 = int64_t(row) * m;
  if (slot < 0 || slot >= pool.num_slots) {
    for (int i = 0; i < m; ++i) zero_output_slice(p.o, p.o_dtype, ((tok0 + i) * HV + h) * V, v0, VB, V);
    return;
  }
  const int B = pool.buffer_size;
  const int n = min(max(pool.fill[slot], 0), B - 1);
  const int64_t e0 = int64_t(slot) * pool.capacity;

  RawSmem<K, VB> sm;
  sm.setup(dyn_smem + ((128 - (__cvta_generic_to_shared(dyn_smem) & 127)) & 127), B - 1 + m, m, false);
  sm.T = n + m;
  Tile tile;
  tile.setup(reinterpret_cast<float4*>(sm.tile), v0, V);
  tile.load_state_async(pool.checkpoint + (int64_t(slot) * HV + h) * K * V, V);
  sm.load_pool_async(pool, H, HV, V, e0, 0, n, h, hk, v0);
  sm.load_tokens_async(p.in, H, HV, V, tok0, n, m, h, hk, v0, true);
  cp_async_commit();
  raw_gates(sm, pool, p.in, HV, e0, n, tok0, h);
  cp_async_wait_all();
  __syncthreads();

  raw_gram<K>(sm);
  raw_system(sm, n, p.in.scale);
  raw_solve_queries(sm, n);
  raw_effective_queries<K>(sm, n);
  float acc[kM][4];
  raw_output_partials<kM, Tile, K>(tile, sm, acc);
#pragma unroll
  for (int i = 0; i < kM / 2; ++i) {
    if (2 * i >= m) break;
    tile.reduce_rows(acc[2 * i], acc[2 * i + 1], red[i & 1]);
  }
  if (tile.rg == 0 && tile.active) {
#pragma unroll
    for (int q = 0; q < kM; ++q) {
      if (q >= m) break;
      store_output4(p.o, p.o_dtype, ((tok0 + q) * HV + h) * V + tile.col, acc[q]);
    }
  }
}

template <int K, int VB>
__global__ void __launch_bounds__(kThreads) kvbuffer_raw_accept_kernel(const RawKVBufferAcceptParams p) {
  using Tile = SmemTile<K, VB, kThreads>;
  extern __shared__ __align__(16) char dyn_smem[];  // RawSmem(B - 1 + m entries, no queries, fold) + 128; no static
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const RawKVBufferPool& pool = p.pool;
  const int m = p.in.tokens, B = pool.buffer_size, slot = p.slot[row];
  if (slot < 0 || slot >= pool.num_slots) return;
  const int a = min(max(p.accepted[row], 0), m);
  if (a == 0) return;  // rejection costs nothing
  const int n = min(max(pool.fill[slot], 0), B - 1);
  const int64_t e0 = int64_t(slot) * pool.capacity, tok0 = int64_t(row) * m;

  if (n + a < B) {  // append the raw drafts at positions n .. n + a - 1
    constexpr int vc = VB / 8;
    for (int idx = threadIdx.x; idx < a * vc; idx += blockDim.x) {
      const int i = idx / vc, part = idx % vc;
      reinterpret_cast<uint4*>(pool.values + ((e0 + n + i) * HV + h) * V + v0)[part] =
          reinterpret_cast<const uint4*>(p.in.v + ((tok0 + i) * HV + h) * V + v0)[part];
    }
    if (blockIdx.x == 0) {
      if (threadIdx.x < a) {
        pool.gate_a[(e0 + n + threadIdx.x) * HV + h] = p.in.a[(tok0 + threadIdx.x) * HV + h];
        pool.gate_b[(e0 + n + threadIdx.x) * HV + h] = p.in.b[(tok0 + threadIdx.x) * HV + h];
      }
      if (h % p.shape.group() == 0)
        for (int idx = threadIdx.x; idx < a * (K / 8); idx += blockDim.x) {
          const int i = idx / (K / 8), part = idx % (K / 8);
          reinterpret_cast<uint4*>(pool.keys + ((e0 + n + i) * H + hk) * K)[part] =
              reinterpret_cast<const uint4*>(p.in.k + ((tok0 + i) * H + hk) * K)[part];
        }
    }
    return;
  }

  // Fold the n buffered and a accepted entries (up to B - 1 + m) into S0; the buffer then empties.
  RawSmem<K, VB> sm;
  sm.setup(dyn_smem + ((128 - (__cvta_generic_to_shared(dyn_smem) & 127)) & 127), B - 1 + m, 0, true);
  sm.T = n + a;
  float* s0 = pool.checkpoint + (int64_t(slot) * HV + h) * K * V;
  Tile tile;
  tile.setup(reinterpret_cast<float4*>(sm.tile), v0, V);
  tile.load_state_async(s0, V);
  sm.load_pool_async(pool, H, HV, V, e0, 0, n, h, hk, v0);
  sm.load_tokens_async(p.in, H, HV, V, tok0, n, a, h, hk, v0, false);
  cp_async_commit();
  raw_gates(sm, pool, p.in, HV, e0, n, tok0, h);
  cp_async_wait_all();
  __syncthreads();
  raw_gram<K>(sm);
  raw_system(sm, 0, p.in.scale);
  raw_fold<K, VB>(sm, s0, V, v0);
}

template <int K, int VB>
cudaError_t launch_verify_tile(const RawKVBufferVerifyParams& p, cudaStream_t stream) {
  const int m = p.in.tokens;
  const size_t smem = RawSmem<K, VB>::bytes(p.pool.buffer_size - 1 + m, m, false) + 128;
  const cudaError_t e = allow_dynamic_smem(kvbuffer_raw_verify_kernel<K, VB>, smem);
  if (e != cudaSuccess) return e;
  const dim3 grid(p.shape.head_dim_v / VB, p.shape.heads_v, p.batch);
  kvbuffer_raw_verify_kernel<K, VB><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

template <int K, int VB>
cudaError_t launch_accept_tile(const RawKVBufferAcceptParams& p, cudaStream_t stream) {
  const size_t smem = RawSmem<K, VB>::bytes(p.pool.buffer_size - 1 + p.in.tokens, 0, true) + 128;
  if (const cudaError_t e = allow_dynamic_smem(kvbuffer_raw_accept_kernel<K, VB>, smem); e != cudaSuccess) return e;
  const dim3 grid(p.shape.head_dim_v / VB, p.shape.heads_v, p.batch);
  kvbuffer_raw_accept_kernel<K, VB><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

/// Dispatches a launch on head_dim_k and the slice width of `batch` rows.
template <class Params, template <int, int> class Launch>
cudaError_t dispatch(const Params& p, cudaStream_t stream) {
  const int vb = raw_slice_width(p.batch, p.shape, p.tile);
  auto by_width = [&](auto k_tag) -> cudaError_t {
    constexpr int K = decltype(k_tag)::value;
    if (vb == 16) return Launch<K, 16>::run(p, stream);
    if (vb == 32) return Launch<K, 32>::run(p, stream);
    if constexpr (K < 256) {
      if (vb == 64) return Launch<K, 64>::run(p, stream);
    }
    return cudaErrorInvalidValue;
  };
  return by_head_dim_k(p.shape.head_dim_k, by_width);
}

template <int K, int VB>
struct VerifyLaunch {
  static cudaError_t run(const RawKVBufferVerifyParams& p, cudaStream_t s) { return launch_verify_tile<K, VB>(p, s); }
};
template <int K, int VB>
struct AcceptLaunch {
  static cudaError_t run(const RawKVBufferAcceptParams& p, cudaStream_t s) { return launch_accept_tile<K, VB>(p, s); }
};

}  // namespace

std::string validate(const RawKVBufferVerifyParams& p) {
  if (auto e = validate_raw_inputs(p.shape, p.in, p.batch); !e.empty()) return e;
  if (auto e = validate_draft_tokens(p.in.tokens); !e.empty()) return e;
  if (auto e = validate_raw_pool(p.pool); !e.empty()) return e;
  if (!p.slot || !p.o) return "slot and o must be set";
  if (auto e = validate_raw_tile(p.tile, p.shape); !e.empty()) return e;
  return "";
}

std::string validate(const RawKVBufferAcceptParams& p) {
  if (auto e = validate_raw_inputs(p.shape, p.in, p.batch); !e.empty()) return e;
  if (auto e = validate_draft_tokens(p.in.tokens); !e.empty()) return e;
  if (auto e = validate_raw_pool(p.pool); !e.empty()) return e;
  if (!p.slot || !p.accepted) return "slot and accepted must be set";
  if (auto e = validate_raw_tile(p.tile, p.shape); !e.empty()) return e;
  return "";
}

cudaError_t launch_kvbuffer_raw_verify(const RawKVBufferVerifyParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  return dispatch<RawKVBufferVerifyParams, VerifyLaunch>(p, stream);
}

cudaError_t launch_kvbuffer_raw_accept(const RawKVBufferAcceptParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  return dispatch<RawKVBufferAcceptParams, AcceptLaunch>(p, stream);
}

}  // namespace kvb
