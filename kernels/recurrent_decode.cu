// Recurrent decode (today's serving path, DESIGN.md section 2): one token per row, the whole state read and written
// once (fp32, or bf16 in layout kv: S, widened in shared memory, rounded where stored). Grid: (V slices, HV, N);
// block: kThreads threads owning a K x VB slice of one value head's state.
#include <string>
#include <type_traits>

#include "kernels/gdn_device.cuh"
#include "kernels/gdn_params.h"
#include "kernels/launch_util.h"
#include "kernels/pdl.cuh"
#include "kernels/stagger.cuh"

namespace kvb {
namespace {

using namespace dev;

template <int K, int VB, int THREADS, typename S>
__global__ void __launch_bounds__(THREADS)
    recurrent_decode_kv_kernel(const RecurrentDecodeParams p, const FirstWaveStagger stagger) {
  using Tile = SmemTile<K, VB, THREADS, false, S>;
  extern __shared__ __align__(16) float4 tile_smem[];  // K x VB elements of S
  __shared__ float red[2 * Tile::WARPS * VB];
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  // The key head by GdnShape::key_head (two float operations instead of two integer divisions; exact here: heads_v
  // is a grid dimension y, at most 65,535).
  const int HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = p.shape.key_head(h);
  const int slot = p.slot[row];
  const bool padding = slot < 0 || slot >= p.num_slots;
  S* state = static_cast<S*>(p.state) + (int64_t(padding ? 0 : slot) * HV + h) * K * V;

  stagger_first_wave(stagger);
  Tile tile;
  tile.setup(tile_smem, v0, V);
  if (!padding) {
    tile.load_state_async(state, V);  // in flight while the token is prepared (with PDL, while the last kernel ends)
    cp_async_commit();
  }
  pdl_wait();  // kernels/pdl.cuh: nothing but the state and the slot index is read before it
  pdl_launch_dependents();
  if (padding) {
    zero_output_slice(p.o, p.o_dtype, (int64_t(row) * HV + h) * V, v0, VB, V);
    return;
  }

  const int lane = threadIdx.x % 32;
  const bf16* qp = p.in.q + (int64_t(row) * p.shape.heads_qk + hk) * K;
  const bf16* kp = p.in.k + (int64_t(row) * p.shape.heads_qk + hk) * K;
  WarpVec<K> qv, kv;
  qv.load(qp, lane);
  kv.load(kp, lane);
  float kr[Tile::ROWS], qr[Tile::ROWS], vv[4];
  load_bf16<Tile::ROWS>(kp + tile.row(0), kr);
  load_bf16<Tile::ROWS>(qp + tile.row(0), qr);
  const int64_t vo = (int64_t(row) * HV + h) * V + tile.col;
  load4(p.in.v + vo, tile.active, vv);
  const GateInputs gin = load_gate_inputs(p.in, row, h, HV);  // with the token's inputs (kvbuffer_decode.cu)
  const Gate gate = form_gate(p.in, gin);
  const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
  const float decay = expf(gate.g);
#pragma unroll
  for (int i = 0; i < Tile::ROWS; ++i) {
    kr[i] *= nrm.rk;
    qr[i] *= nrm.rq;
  }

  cp_async_wait_all();
  __syncthreads();
  // S_old^T k^ and S_old^T q^ in one pass over the tile.
  float sk[4] = {0.f, 0.f, 0.f, 0.f}, sq[4] = {0.f, 0.f, 0.f, 0.f};
  tile.accumulate2(kr, sk, qr, sq);
  tile.reduce_rows(sk, sq, red);
  float u[4], o[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    u[c] = gate.beta * (vv[c] - decay * sk[c]);  // u = beta (v - (e^g S)^T k^)
    o[c] = decay * sq[c] + nrm.kq * u[c];         // o = e^g S^T q^ + (k^ . q^) u
  }
  tile.store_decay_rank1(state, V, decay, kr, u);  // S <- e^g S + k^ u^T
  if (tile.rg == 0 && tile.active) store_output4(p.o, p.o_dtype, vo, o);
}

// vk layout ([V][K], K contiguous). Thread t owns k group kg = t % KG (4 consecutive k) of the rows
// v = v0 + t / KG + r * RPB. The K-reduction for a row stays inside KG lanes of one warp (K <= 128).
template <int K, int VB>
__global__ void __launch_bounds__(kThreads) recurrent_decode_vk_kernel(const RecurrentDecodeParams p) {
  constexpr int KG = K / 4;
  constexpr int RPB = kThreads / KG;  // rows per block pass
  constexpr int R = VB / RPB;         // rows per thread
  static_assert(KG <= 32 && VB % RPB == 0 && R >= 1, "vk tile: unsupported K x VB");
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const int slot = p.slot[row];
  const bool padding = slot < 0 || slot >= p.num_slots;
  float* state = static_cast<float*>(p.state) + (int64_t(padding ? 0 : slot) * HV + h) * V * K;
  const int kg = threadIdx.x % KG, vr = threadIdx.x / KG;

  float4 s[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int v = v0 + vr + r * RPB;
    s[r] = v < V && !padding ? __ldcs(reinterpret_cast<const float4*>(state + int64_t(v) * K + 4 * kg))
                             : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  pdl_wait();  // kernels/pdl.cuh: nothing but the state and the slot index is read before it
  pdl_launch_dependents();
  if (padding) {
    zero_output_slice(p.o, p.o_dtype, (int64_t(row) * HV + h) * V, v0, VB, V);
    return;
  }
  const int lane = threadIdx.x % 32;
  const bf16* qp = p.in.q + (int64_t(row) * p.shape.heads_qk + hk) * K;
  const bf16* kp = p.in.k + (int64_t(row) * p.shape.heads_qk + hk) * K;
  WarpVec<K> qv, kv;
  qv.load(qp, lane);
  kv.load(kp, lane);
  const GateInputs gin = load_gate_inputs(p.in, row, h, HV);  // with the token's inputs (kvbuffer_decode.cu)
  const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
  const Gate gate = form_gate(p.in, gin);
  const float decay = expf(gate.g);
  float kr[4], qr[4];
  load_bf16<4>(kp + 4 * kg, kr);
  load_bf16<4>(qp + 4 * kg, qr);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    kr[i] *= nrm.rk;
    qr[i] *= nrm.rq;
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float sk = s[r].x * kr[0] + s[r].y * kr[1] + s[r].z * kr[2] + s[r].w * kr[3];
    float sq = s[r].x * qr[0] + s[r].y * qr[1] + s[r].z * qr[2] + s[r].w * qr[3];
#pragma unroll
    for (int off = 1; off < KG; off <<= 1) {
      sk += __shfl_xor_sync(0xffffffffu, sk, off);
      sq += __shfl_xor_sync(0xffffffffu, sq, off);
    }
    const int v = v0 + vr + r * RPB;
    if (v >= V) continue;
    const int64_t vo = (int64_t(row) * HV + h) * V + v;
    const float u = gate.beta * (__bfloat162float(p.in.v[vo]) - decay * sk);
    const float o = decay * sq + nrm.kq * u;
    const float4 n = make_float4(fmaf(decay, s[r].x, kr[0] * u), fmaf(decay, s[r].y, kr[1] * u),
                                 fmaf(decay, s[r].z, kr[2] * u), fmaf(decay, s[r].w, kr[3] * u));
    __stcs(reinterpret_cast<float4*>(state + int64_t(v) * K + 4 * kg), n);
    if (kg == 0) store_output1(p.o, p.o_dtype, vo, o);
  }
}

template <int K, int VB, int THREADS = kThreads>
cudaError_t launch_tile(const RecurrentDecodeParams& p, cudaStream_t stream) {
  const dim3 grid(num_slices(p.shape.head_dim_v, VB), p.shape.heads_v, p.batch);
  if (p.layout == StateLayout::kv) {
    const auto launch_kv = [&](auto state_type) {
      using S = decltype(state_type);
      const auto kernel = recurrent_decode_kv_kernel<K, VB, THREADS, S>;
      const size_t smem = SmemTile<K, VB, THREADS, false, S>::bytes(0);
      if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
      // bf16 states: the first wave staggered (kernels/stagger.cuh).
      FirstWaveStagger stagger;
      const int ns = std::is_same<S, bf16>::value ? kFirstWaveStaggerNs : 0;
      if (const cudaError_t e = first_wave_stagger(kernel, grid, THREADS, smem, ns, stagger); e != cudaSuccess)
        return e;
      return launch_kernel(kernel, grid, THREADS, smem, stream, p.pdl, p, stagger);
    };
    return p.state_dtype == StateDtype::bf16 ? launch_kv(bf16{}) : launch_kv(float{});
  } else if constexpr (K <= 128) {
    return launch_kernel(recurrent_decode_vk_kernel<K, VB>, grid, kThreads, 0, stream, p.pdl, p);
  } else {
    return cudaErrorInvalidValue;
  }
}

}  // namespace

std::string validate(const RecurrentDecodeParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens != 1) return "tokens = " + std::to_string(p.in.tokens) + ": recurrent decode takes 1 token per row";
  if (!p.state || !p.slot || !p.o) return "state, slot and o must be set";
  if (p.num_slots < 1) return "num_slots must be >= 1";
  if (p.state_dtype != StateDtype::fp32 && p.layout != StateLayout::kv)
    return std::string("state_dtype = ") + to_string(p.state_dtype) +
           " with layout vk is not supported (allowed with vk: fp32)";
  if (p.layout == StateLayout::vk && p.shape.head_dim_k > 128)
    return "head_dim_k = " + std::to_string(p.shape.head_dim_k) + " with layout vk is not supported (allowed: 32, 64, 128)";
  if (auto e = validate_tile(p.tile, recurrent_decode_tiles(), p.shape, "recurrent decode"); !e.empty()) return e;
  if (!p.tile.is_auto() && p.layout == StateLayout::vk)
    return "tile = " + to_string(p.tile) + " with layout vk is not supported (allowed with vk: auto)";
  return "";
}

cudaError_t launch_recurrent_decode(const RecurrentDecodeParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  const bool narrow = narrow_slices(p.batch, p.shape);
  switch (p.shape.head_dim_k) {
    case 32: return narrow ? launch_tile<32, 16>(p, stream) : launch_tile<32, 32>(p, stream);
    case 64: return narrow ? launch_tile<64, 16>(p, stream) : launch_tile<64, 32>(p, stream);
    case 128:
      if (p.tile == TileShape{32, 128}) return launch_tile<128, 32>(p, stream);
      if (p.tile == TileShape{64, 256}) return launch_tile<128, 64, 256>(p, stream);
      if (p.tile == TileShape{128, 512}) return launch_tile<128, 128, 512>(p, stream);
      if (p.tile == TileShape{128, 128}) return launch_tile<128, 128, 128>(p, stream);
      if (p.tile == TileShape{128, 256}) return launch_tile<128, 128, 256>(p, stream);
      // auto: 16-wide slices when the batch does not fill the GPU, 32-wide up to the wide grid, then whole rows per
      // block (contiguous 64 KiB tiles), the fastest there; a bf16 state's whole rows (32 KiB) in 128-thread blocks,
      // each thread's copies twice the rows, so that a block keeps as many bytes in flight as an fp32 one.
      if (narrow) return launch_tile<128, 16>(p, stream);
      if (p.layout == StateLayout::vk || !wide_grid(p.batch, p.shape))
        return launch_tile<128, 32>(p, stream);
      if (p.state_dtype == StateDtype::bf16) return launch_tile<128, 128, 128>(p, stream);
      return launch_tile<128, 128, 256>(p, stream);
    case 256: return launch_tile<256, 16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace kvb
