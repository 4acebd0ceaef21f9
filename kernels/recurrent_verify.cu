// Recurrent verification (the baseline of DESIGN.md section 3): each row's m draft tokens stepped one by one from its
// state, the state after draft i written to scratch[slot][i], the pool untouched; and the accept that copies the
// accepted draft's state back. Grid of verify: (V slices, HV, N), one block per K x VB state slice kept in shared
// memory across the m drafts.
#include <string>

#include "kernels/gdn_device.cuh"
#include "kernels/gdn_params.h"
#include "kernels/launch_util.h"

namespace kvb {
namespace {

using namespace dev;

template <int K, int VB, int THREADS>
__global__ void __launch_bounds__(THREADS) recurrent_verify_kernel(const RecurrentVerifyParams p) {
  using Tile = SmemTile<K, VB, THREADS>;
  extern __shared__ __align__(16) float4 tile_smem[];  // K x VB floats
  __shared__ float red[2][2 * Tile::WARPS * VB];        // double-buffered: one reduction per draft
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const int m = p.in.tokens;
  const int slot = p.slot[row];
  if (slot < 0 || slot >= p.num_slots) {
    for (int i = 0; i < m; ++i) zero_output_slice(p.o, p.o_dtype, ((int64_t(row) * m + i) * HV + h) * V, v0, VB, V);
    return;
  }
  Tile tile;
  tile.setup(tile_smem, v0, V);
  tile.load_state_async(p.state + (int64_t(slot) * HV + h) * K * V, V);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  const int lane = threadIdx.x % 32;
  for (int i = 0; i < m; ++i) {
    const int64_t tok = int64_t(row) * m + i;
    const bf16* qp = p.in.q + (tok * H + hk) * K;
    const bf16* kp = p.in.k + (tok * H + hk) * K;
    WarpVec<K> qv, kv;
    qv.load(qp, lane);
    kv.load(kp, lane);
    float kr[Tile::ROWS], qr[Tile::ROWS], vv[4];
    load_bf16<Tile::ROWS>(kp + tile.row(0), kr);
    load_bf16<Tile::ROWS>(qp + tile.row(0), qr);
    const int64_t vo = (tok * HV + h) * V + tile.col;
    load4(p.in.v + vo, tile.active, vv);
    const Gate gate = prepare_gate(p.in, tok, h, HV);
    const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
    const float decay = expf(gate.g);
#pragma unroll
    for (int r = 0; r < Tile::ROWS; ++r) {
      kr[r] *= nrm.rk;
      qr[r] *= nrm.rq;
    }
    float sk[4] = {0.f, 0.f, 0.f, 0.f}, sq[4] = {0.f, 0.f, 0.f, 0.f};
    tile.accumulate2(kr, sk, qr, sq);
    tile.reduce_rows(sk, sq, red[i & 1]);
    float u[4], o[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      u[c] = gate.beta * (vv[c] - decay * sk[c]);
      o[c] = decay * sq[c] + nrm.kq * u[c];
    }
    tile.decay_rank1(decay, kr, u);  // this thread's rows and columns only: no barrier before the next draft
    tile.store_state(p.scratch + ((int64_t(slot) * m + i) * HV + h) * K * V, V);
    if (tile.rg == 0 && tile.active) store_output4(p.o, p.o_dtype, vo, o);
  }
}

/// state[slot] = scratch[slot][a - 1]: blockIdx.y is the row, blocks stride over the state's float4s.
__global__ void recurrent_accept_kernel(const RecurrentAcceptParams p) {
  const int row = blockIdx.y;
  const int slot = p.slot[row], a = p.accepted[row];
  if (slot < 0 || slot >= p.num_slots || a <= 0 || a > p.draft_tokens) return;
  const int64_t n4 = p.shape.state_elems() / 4;
  const float4* src = reinterpret_cast<const float4*>(p.scratch + (int64_t(slot) * p.draft_tokens + a - 1) *
                                                                      p.shape.state_elems());
  float4* dst = reinterpret_cast<float4*>(p.state + int64_t(slot) * p.shape.state_elems());
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4; i += int64_t(gridDim.x) * blockDim.x)
    __stcs(dst + i, __ldcs(src + i));
}

template <int K, int VB, int THREADS = kThreads>
cudaError_t launch_tile(const RecurrentVerifyParams& p, cudaStream_t stream) {
  const size_t smem = SmemTile<K, VB, THREADS>::bytes(0);
  if (const cudaError_t e = allow_dynamic_smem(recurrent_verify_kernel<K, VB, THREADS>, smem); e != cudaSuccess) return e;
  const dim3 grid(num_slices(p.shape.head_dim_v, VB), p.shape.heads_v, p.batch);
  recurrent_verify_kernel<K, VB, THREADS><<<grid, THREADS, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

std::string validate(const RecurrentVerifyParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens < 1 || p.in.tokens > kMaxDraftTokens)
    return "draft_tokens = " + std::to_string(p.in.tokens) + " is out of range (allowed: 1 to " +
           std::to_string(kMaxDraftTokens) + ")";
  if (!p.state || !p.scratch || !p.slot || !p.o) return "state, scratch, slot and o must be set";
  if (p.num_slots < 1) return "num_slots must be >= 1";
  return "";
}

std::string validate(const RecurrentAcceptParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (p.batch < 1) return "batch = " + std::to_string(p.batch) + " must be >= 1";
  if (p.draft_tokens < 1 || p.draft_tokens > kMaxDraftTokens)
    return "draft_tokens = " + std::to_string(p.draft_tokens) + " is out of range (allowed: 1 to " +
           std::to_string(kMaxDraftTokens) + ")";
  if (!p.state || !p.scratch || !p.slot || !p.accepted) return "state, scratch, slot and accepted must be set";
  if (p.num_slots < 1) return "num_slots must be >= 1";
  return "";
}

cudaError_t launch_recurrent_verify(const RecurrentVerifyParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  const bool narrow = int64_t(p.batch) * p.shape.heads_v * num_slices(p.shape.head_dim_v, 32) < 4 * sm_count();
  switch (p.shape.head_dim_k) {
    case 32: return narrow ? launch_tile<32, 16>(p, stream) : launch_tile<32, 32>(p, stream);
    case 64: return narrow ? launch_tile<64, 16>(p, stream) : launch_tile<64, 32>(p, stream);
    case 128:
      if (narrow) return launch_tile<128, 16>(p, stream);
      if (int64_t(p.batch) * p.shape.heads_v < 8 * sm_count()) return launch_tile<128, 32>(p, stream);
      return launch_tile<128, 128, 256>(p, stream);
    case 256: return launch_tile<256, 16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_recurrent_accept(const RecurrentAcceptParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  const int64_t n4 = p.shape.state_elems() / 4;
  const dim3 grid(unsigned(std::min<int64_t>((n4 + 255) / 256, 64)), p.batch);
  recurrent_accept_kernel<<<grid, 256, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kvb
