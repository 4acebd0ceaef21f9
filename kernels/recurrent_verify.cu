// Recurrent verification (the baseline of DESIGN.md section 3): each row's m draft tokens stepped one by one from its
// state, the state after draft i written to scratch[slot][i], the pool untouched; and the accept that copies the
// accepted draft's state back. Grid of verify: (V slices, HV, N), one block per K x VB state slice kept in registers
// across the m drafts.
#include <string>

#include "kernels/gdn_device.cuh"
#include "kernels/gdn_params.h"
#include "kernels/launch_util.h"
#include "kernels/pdl.cuh"

namespace kvb {
namespace {

using namespace dev;

/// Register layout of the recurrent verify: a block of WARPS warps owns VB columns of one value head's state over all
/// K rows, every element held in one lane's registers across the m drafts, so the state is read once and each draft's
/// state written once. The K rows are cut into BANDS bands of consecutive rows; warp w owns band w % BANDS of
/// column group w / BANDS. Inside a warp, lane = CGW * sub + cg holds float4 column cg of the warp's CGW and the band's
/// rows sub, sub + SUBS, ... . Partial sums of S^T k^ and S^T q^ meet inside the warp by shuffles over sub and across
/// bands in shared memory (one barrier per draft when BANDS > 1).
///   Row bands (CGW = 32, BANDS = K / 16): one warp store writes a whole 128-column state row (512 contiguous bytes).
///   Column warps (BANDS = 1): a warp owns 4 * CGW columns of every row (16 * CGW bytes of each of 32 / CGW rows per
///   store); no barrier at all.
template <int K, int CGW_, int BANDS_, int WARPS_>
struct VerifyRegLanes {
  static constexpr int CGW = CGW_;                ///< float4 columns per warp
  static constexpr int BANDS = BANDS_;            ///< row bands per block
  static constexpr int WARPS = WARPS_;            ///< warps per block
  static constexpr int SUBS = 32 / CGW;           ///< row subgroups per warp
  static constexpr int ROWS = K / BANDS / SUBS;   ///< state rows per lane
  static constexpr int VB = WARPS / BANDS * CGW * 4;  ///< columns per block
  static_assert(32 % CGW == 0 && WARPS % BANDS == 0 && K % (BANDS * SUBS) == 0,
                "VerifyRegLanes: unsupported layout");
};

/// Per block: the drafts' normalised keys and queries (q^ includes the scale), k^ . q^, gates; with row bands, each
/// band's partial S^T k^ and S^T q^ per float4 column, double-buffered over drafts ([draft parity][band][column]).
template <int K, int BANDS, int VB>
struct RecurrentDraftSmem {
  float khat[kMaxDraftTokens][K];
  float qhat[kMaxDraftTokens][K];
  float kq[kMaxDraftTokens], g[kMaxDraftTokens], beta[kMaxDraftTokens];
  float4 part_k[BANDS > 1 ? 2 : 1][BANDS][VB / 4];
  float4 part_q[BANDS > 1 ? 2 : 1][BANDS][VB / 4];
};

template <int K, class L>
__global__ void __launch_bounds__(L::WARPS * 32, L::BANDS > 1 ? 2 : 1) recurrent_verify_kernel(
    const RecurrentVerifyParams p) {
  constexpr int VB = L::VB;
  __shared__ RecurrentDraftSmem<K, L::BANDS, VB> ds;
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const int m = p.in.tokens;
  const int slot = p.slot[row];
  if (slot < 0 || slot >= p.num_slots) {  // padding: nothing read, outputs zeroed after the PDL wait
    pdl_wait();
    pdl_launch_dependents();
    for (int i = 0; i < m; ++i) zero_output_slice(p.o, p.o_dtype, ((int64_t(row) * m + i) * HV + h) * V, v0, VB, V);
    return;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int band = warp % L::BANDS, cgi = (warp / L::BANDS) * L::CGW + lane % L::CGW;  // float4 column in block
  const int sub = lane / L::CGW, r0 = band * (K / L::BANDS) + sub;                    // rows r0 + SUBS * t
  const int col = v0 + 4 * cgi;
  const bool active = col < V;

  // This lane's state rows, streamed once (the pool is read only here), before the PDL wait (kernels/pdl.cuh:
  // nothing but the slot index and the state is read before it).
  const float* s0 = p.state + (int64_t(slot) * HV + h) * K * V + (active ? col : 0);
  float4 S[L::ROWS];
#pragma unroll
  for (int t = 0; t < L::ROWS; ++t)
    S[t] = active ? __ldg(reinterpret_cast<const float4*>(s0 + int64_t(r0 + L::SUBS * t) * V))
                  : make_float4(0.f, 0.f, 0.f, 0.f);
  pdl_wait();
  pdl_launch_dependents();

  // The drafts' normalised keys and queries, one warp per draft, while the state loads are in flight.
  normalise_drafts<K>(
      p.in, row, m, warp, L::WARPS, H, HV, h, hk, [](int, const WarpVec<K>&) {},
      [&](int i, int r, float k, float q) {
        ds.khat[i][r] = k;
        ds.qhat[i][r] = q;
      },
      [&](int i, const Gate& gate, float kq) {
        ds.kq[i] = kq;
        ds.g[i] = gate.g;
        ds.beta[i] = gate.beta;
      });
  __syncthreads();

  for (int i = 0; i < m; ++i) {
    const int64_t tok = int64_t(row) * m + i;
    const int64_t vo = (tok * HV + h) * V + col;
    float vv[4];
    load4(p.in.v + vo, active, vv);
    float sk[4] = {0.f, 0.f, 0.f, 0.f}, sq[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int t = 0; t < L::ROWS; ++t) {
      const int r = r0 + L::SUBS * t;
      fma4(ds.khat[i][r], S[t], sk);
      fma4(ds.qhat[i][r], S[t], sq);
    }
#pragma unroll
    for (int off = L::CGW; off < 32; off <<= 1)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        sk[c] += __shfl_xor_sync(0xffffffffu, sk[c], off);
        sq[c] += __shfl_xor_sync(0xffffffffu, sq[c], off);
      }
    if constexpr (L::BANDS > 1) {  // the bands' partial sums meet in shared memory
      const int par = i & 1;       // double-buffered: draft i + 1 writes the other half while slow warps read this one
      if (sub == 0) {
        ds.part_k[par][band][cgi] = make_float4(sk[0], sk[1], sk[2], sk[3]);
        ds.part_q[par][band][cgi] = make_float4(sq[0], sq[1], sq[2], sq[3]);
      }
      __syncthreads();
#pragma unroll
      for (int c = 0; c < 4; ++c) sk[c] = sq[c] = 0.f;
#pragma unroll
      for (int b = 0; b < L::BANDS; ++b) {
        fma4(1.f, ds.part_k[par][b][cgi], sk);
        fma4(1.f, ds.part_q[par][b][cgi], sq);
      }
    }
    const float decay = expf(ds.g[i]), beta = ds.beta[i], kq = ds.kq[i];
    float u[4], o[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      u[c] = beta * (vv[c] - decay * sk[c]);
      o[c] = decay * sq[c] + kq * u[c];
    }
    float* dst = p.scratch + ((int64_t(slot) * m + i) * HV + h) * K * V + col;
#pragma unroll
    for (int t = 0; t < L::ROWS; ++t) {
      const int r = r0 + L::SUBS * t;
      const float kr = ds.khat[i][r];
      S[t] = make_float4(fmaf(kr, u[0], decay * S[t].x), fmaf(kr, u[1], decay * S[t].y),
                         fmaf(kr, u[2], decay * S[t].z), fmaf(kr, u[3], decay * S[t].w));
      // Plain write-back stores: they beat evict-first stores (st.global.cs) at every m.
      if (active) *reinterpret_cast<float4*>(dst + int64_t(r) * V) = S[t];
    }
    if (sub == 0 && band == 0 && active) store_output4(p.o, p.o_dtype, vo, o);
  }
}

/// state[slot] = scratch[slot][a - 1]: blockIdx.y is the row, blocks stride over the state's float4s.
__global__ void recurrent_accept_kernel(const RecurrentAcceptParams p) {
  pdl_wait();  // kernels/pdl.cuh: the verify that wrote the scratch pool has completed
  pdl_launch_dependents();
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

template <int K, class L>
cudaError_t launch_layout(const RecurrentVerifyParams& p, cudaStream_t stream) {
  const dim3 grid(num_slices(p.shape.head_dim_v, L::VB), p.shape.heads_v, p.batch);
  return launch_kernel(recurrent_verify_kernel<K, L>, grid, L::WARPS * 32, 0, stream, p.pdl, p);
}

}  // namespace

std::string validate(const RecurrentVerifyParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (auto e = validate_draft_tokens(p.in.tokens); !e.empty()) return e;
  if (!p.state || !p.scratch || !p.slot || !p.o) return "state, scratch, slot and o must be set";
  if (p.num_slots < 1) return "num_slots must be >= 1";
  if (auto e = validate_tile(p.tile, recurrent_verify_tiles(), p.shape, "recurrent verify"); !e.empty()) return e;
  return "";
}

std::string validate(const RecurrentAcceptParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (p.batch < 1) return "batch = " + std::to_string(p.batch) + " must be >= 1";
  if (auto e = validate_draft_tokens(p.draft_tokens); !e.empty()) return e;
  if (!p.state || !p.scratch || !p.slot || !p.accepted) return "state, scratch, slot and accepted must be set";
  if (p.num_slots < 1) return "num_slots must be >= 1";
  return "";
}

template <int K>
cudaError_t launch_k(const RecurrentVerifyParams& p, cudaStream_t stream) {
  constexpr int CGW = K >= 256 ? 2 : 4;  // column warps: 16 state rows per lane at K = 128 and 256
  using Columns4 = VerifyRegLanes<K, CGW, 1, 4>;
  using Columns2 = VerifyRegLanes<K, CGW, 1, 2>;
  // auto: blocks of two column warps (8 * CGW columns) when the grid would not fill the GPU; otherwise row bands, one
  // block per value head and 16 rows a lane (K <= 128: at K = 256 the bands' partial sums pass the static
  // shared-memory limit), or four column warps (16 * CGW columns). An explicit tile at K = 128 picks one layout:
  // 64x128 four column warps, 128x256 row bands of 16 rows a lane, 128x512 row bands of 8 rows a lane.
  if constexpr (K == 128) {
    if (p.tile == TileShape{64, 128}) return launch_layout<K, Columns4>(p, stream);
    if (p.tile == TileShape{128, 256}) return launch_layout<K, VerifyRegLanes<K, 32, K / 16, K / 16>>(p, stream);
    if (p.tile == TileShape{128, 512}) return launch_layout<K, VerifyRegLanes<K, 32, K / 8, K / 8>>(p, stream);
  }
  const bool narrow = int64_t(p.batch) * p.shape.heads_v * num_slices(p.shape.head_dim_v, 64) < 4 * sm_count();
  if (narrow) return launch_layout<K, Columns2>(p, stream);
  if constexpr (K <= 128) return launch_layout<K, VerifyRegLanes<K, 32, K / 16, K / 16>>(p, stream);
  return launch_layout<K, Columns4>(p, stream);
}

cudaError_t launch_recurrent_verify(const RecurrentVerifyParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  return by_head_dim_k(p.shape.head_dim_k, [&](auto k) { return launch_k<decltype(k)::value>(p, stream); });
}

cudaError_t launch_recurrent_accept(const RecurrentAcceptParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  const int64_t n4 = p.shape.state_elems() / 4;
  const dim3 grid(unsigned(std::min<int64_t>((n4 + 255) / 256, 64)), p.batch);
  return launch_kernel(recurrent_accept_kernel, grid, dim3(256), 0, stream, p.pdl, p);
}

}  // namespace kvb
