// KVBuffer decode, delta form (DESIGN.md section 3). Per row with n = fill[slot] buffered entries and token t = n + 1:
//   u_t = beta (v - e^{G_t} S0^T k^_t - sum_j e^{G_t - G_j} (k^_j . k^_t) u_j)
//   o_t = e^{G_t} S0^T q^_t + sum_{j<=t} e^{G_t - G_j} (k^_j . q^_t) u_j
// then appends (k_t, u_t, g_t), or, when that makes B entries, flushes: S0 <- e^{G_t} S0 + sum_{j<=t} ... k^_j u_j^T.
// One pass over S0 serves both products: the buffer rows join the checkpoint rows in the same column reduction.
// Grid: (V slices, HV, N); block: kThreads threads owning a K x VB slice of S0.
#include <string>

#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"
#include "kernels/launch_util.h"

namespace kvb {
namespace {

using namespace dev;

template <int K, int VB>
__global__ void __launch_bounds__(kThreads, 6) kvbuffer_decode_kernel(const KVBufferDecodeParams p) {
  using Tile = SmemTile<K, VB>;
  extern __shared__ float4 dyn_smem[];  // [K + capacity][VB] tile, then the BufferCoefs arrays
  __shared__ float red[2 * kWarps * VB];
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const KVBufferPool& pool = p.pool;
  const int slot = p.slot[row];
  const int64_t vo = (int64_t(row) * HV + h) * V;
  if (slot < 0 || slot >= pool.num_slots) {  // padding row: pool untouched, output zeroed
    for (int c = threadIdx.x; c < VB && v0 + c < V; c += blockDim.x) store_output1(p.o, p.o_dtype, vo + v0 + c, 0.f);
    return;
  }
  const int B = pool.buffer_size;
  const int n = min(max(pool.fill[slot], 0), B - 1);  // precondition 0 <= fill < B; clamped against corruption
  const bool flush = n + 1 == B;
  float* s0 = pool.checkpoint + (int64_t(slot) * HV + h) * K * V;
  const int64_t e0 = int64_t(slot) * pool.capacity;

  // Checkpoint slice and buffered deltas stream into shared memory while the token and the key products are formed.
  Tile tile;
  tile.setup(dyn_smem, v0, V);
  tile.load_state_async(s0, V);
  tile.load_extra_async(pool.deltas + (e0 * HV + h) * V, int64_t(HV) * V, n);
  cp_async_commit();
  BufferCoefs bc;
  bc.setup(reinterpret_cast<float*>(dyn_smem + (K + pool.capacity) * Tile::CG), pool.capacity);

  const int lane = threadIdx.x % 32;
  const bf16* qp = p.in.q + (int64_t(row) * H + hk) * K;
  const bf16* kp = p.in.k + (int64_t(row) * H + hk) * K;
  WarpVec<K> qv, kv;
  qv.load(qp, lane);
  kv.load(kp, lane);
  const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
  const Gate gate = prepare_gate(p.in, row, h, HV);
  float kr[Tile::ROWS], qr[Tile::ROWS], vv[4];
  load_bf16<Tile::ROWS>(kp + tile.row(0), kr);
  load_bf16<Tile::ROWS>(qp + tile.row(0), qr);
#pragma unroll
  for (int i = 0; i < Tile::ROWS; ++i) {
    kr[i] *= nrm.rk;
    qr[i] *= nrm.rq;
  }
  load4(p.in.v + vo + tile.col, tile.active, vv);
  buffer_key_products<K>(pool, H, HV, slot, h, hk, n, &kv, &qv, nrm, bc);

  cp_async_wait_all();
  __syncthreads();
  // [S0; u_1..u_n]^T [e^{G_t} k^; w_j (k^_j . k^_t)] and the same with q^: one pass over checkpoint and buffer.
  float sk[4] = {0.f, 0.f, 0.f, 0.f}, sq[4] = {0.f, 0.f, 0.f, 0.f};
  tile.accumulate2(kr, sk, qr, sq);
  const float decay0 = checkpoint_decay(bc, n, gate.g);
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    sk[c] *= decay0;
    sq[c] *= decay0;
  }
  accumulate_buffer<Tile, K>(tile, bc, n, gate.g, sk, sq);
  tile.reduce_rows(sk, sq, red);

  float u[4], o[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    u[c] = gate.beta * (vv[c] - sk[c]);
    o[c] = sq[c] + nrm.kq * u[c];
  }
  if (tile.rg == 0 && tile.active) store_output4(p.o, p.o_dtype, vo + tile.col, o);

  if (flush) {  // S0 <- e^{G_t} S0 + k^_t u_t^T + sum_j w_j k^_j u_j^T, written once
    tile.decay_rank1(decay0, kr, u);
    fold_buffer<K>(pool, H, slot, hk, n, gate.g, bc, tile);
    tile.store_state(s0, V);
    return;
  }
  // Append entry n: u_t (this slice), g_t (one thread per head), the raw key (one block per key head).
  const int64_t e = e0 + n;
  if (tile.rg == 0 && tile.active)
    *reinterpret_cast<float4*>(pool.deltas + (e * HV + h) * V + tile.col) = make_float4(u[0], u[1], u[2], u[3]);
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) pool.log_decay[e * HV + h] = gate.g;
    if (h % p.shape.group() == 0) {
      const uint4* src = reinterpret_cast<const uint4*>(kp);
      uint4* dst = reinterpret_cast<uint4*>(pool.keys + (e * H + hk) * K);
      for (int c = threadIdx.x; c < K / 8; c += blockDim.x) dst[c] = __ldg(src + c);
    }
  }
}

template <int K, int VB>
cudaError_t launch_tile(const KVBufferDecodeParams& p, cudaStream_t stream) {
  const dim3 grid(num_slices(p.shape.head_dim_v, VB), p.shape.heads_v, p.batch);
  const size_t smem = SmemTile<K, VB>::bytes(p.pool.capacity) + BufferCoefs::bytes(p.pool.capacity);
  if (smem > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(kvbuffer_decode_kernel<K, VB>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  kvbuffer_decode_kernel<K, VB><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

std::string validate_pool(const KVBufferPool& pool) {
  if (!pool.checkpoint || !pool.keys || !pool.deltas || !pool.log_decay || !pool.fill)
    return "pool: checkpoint, keys, deltas, log_decay and fill must be set";
  if (pool.num_slots < 1) return "pool.num_slots must be >= 1";
  if (pool.buffer_size < 1 || pool.buffer_size > dev::kMaxBuffer)
    return "buffer_size = " + std::to_string(pool.buffer_size) + " is out of range (allowed: 1 to " +
           std::to_string(dev::kMaxBuffer) + ")";
  if (pool.capacity < pool.buffer_size || pool.capacity > dev::kMaxBuffer)
    return "pool.capacity = " + std::to_string(pool.capacity) + " must be in [buffer_size, " +
           std::to_string(dev::kMaxBuffer) + "]";
  return "";
}

std::string validate(const KVBufferDecodeParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens != 1) return "tokens = " + std::to_string(p.in.tokens) + ": kvbuffer decode takes 1 token per row";
  if (auto e = validate_pool(p.pool); !e.empty()) return e;
  if (!p.slot || !p.o) return "slot and o must be set";
  return "";
}

cudaError_t launch_kvbuffer_decode(const KVBufferDecodeParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  const bool narrow = int64_t(p.batch) * p.shape.heads_v * dev::num_slices(p.shape.head_dim_v, 32) < 4 * sm_count();
  switch (p.shape.head_dim_k) {
    case 32: return narrow ? launch_tile<32, 16>(p, stream) : launch_tile<32, 32>(p, stream);
    case 64: return narrow ? launch_tile<64, 16>(p, stream) : launch_tile<64, 32>(p, stream);
    case 128: return narrow ? launch_tile<128, 16>(p, stream) : launch_tile<128, 32>(p, stream);
    case 256: return launch_tile<256, 16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace kvb
