// Device building blocks of the KVBuffer raw-form kernels (DESIGN.md section 3, "Raw form"; the algebra is in
// kernels/kvbuffer_raw_params.h). One block owns one (row, value head, VB-wide column slice) and holds in shared
// memory: the K x VB checkpoint slice, the T raw entries' keys (its key head) and value slices, their gates, and the
// Gram matrix of keys and queries. Steps, each ending in a block barrier unless said otherwise:
//   load (cp.async)  ->  gates + cumulative log-decays  ->  Gram of raw keys/queries (fp32 on CUDA cores from bf16,
//   products exact)  ->  A and c in place  ->  d = (I + A)^-T c per query (one warp each)  ->  effective queries
//   ->  one pass over S0 and the value slices for the outputs;  a flush or fold adds  P = K S0  and
//   S0 <- e^{G_t} S0 + K^T (w * rk * U)  on tensor cores (WMMA TF32, S0 and U split into hi + lo TF32 parts; the
//   raw bf16 keys are exact in TF32, so both products keep fp32 accuracy) with U from forward substitution.
// Cumulative log-decays G_j are summed in float64 so that e^{G_i - G_j} keeps fp32 accuracy however long the buffer.
#pragma once

#include <mma.h>

#include "kernels/gdn_device.cuh"
#include "kernels/kvbuffer_raw_params.h"

namespace kvb::dev {

constexpr int kMaxRawQueries = kMaxDraftTokens;  ///< queries per block: 1 (decode) or m (verify)
constexpr int kMaxRawEntries = kMaxRawBuffer - 1 + kMaxDraftTokens;  ///< T: entries a block rebuilds (<= 71)
constexpr int kRawLaneRows = (kMaxRawEntries + 31) / 32;             ///< entries per lane in the solve

__host__ __device__ constexpr size_t align128(size_t x) { return (x + 127) / 128 * 128; }
__host__ __device__ constexpr int round_up16(int x) { return (x + 15) / 16 * 16; }

/// Shared memory of one raw-form block, for up to `entries` entries (T), `queries` queries (Q) and, when `fold`,
/// the tensor-core fold's operands. Row r < T of keys is entry r's raw key; row T + q is query q's raw query.
template <int K, int VB>
struct RawSmem {
  static constexpr int KS = K + 8;  ///< key row stride (bf16): rows start 4 banks apart
  float* tile;     ///< [K][VB] checkpoint slice (SmemTile layout)
  float* kf;       ///< [Tpad][K] raw keys as fp32, zero rows past T (fold only)
  float* pu;       ///< [Tpad][VB] P = K S0, then U, then w * rk * U (fold only)
  bf16* keys;      ///< [T + Q][KS] raw keys, then raw queries
  bf16* vals;      ///< [T][VB] raw value slices
  float* gram;     ///< [T + Q][GS] raw dot products (lower triangle), then A (i > j < T) and c (query rows)
  float* qeff;     ///< [Q][K] effective queries
  float* vw;       ///< [Q][T] value weights d_j beta_j
  double* G;       ///< [T] cumulative log-decay G_j = g_0 + ... + g_j
  float* g;        ///< [T]
  float* beta;     ///< [T]
  float* decay0;   ///< [T] e^{G_j}
  float* rn;       ///< [T + Q] 1 / sqrt(|x|^2 + eps), times the scale for query rows
  int T, Q, GS;

  static size_t bytes(int entries, int queries, bool fold) {
    const int R = entries + queries, Tp = round_up16(entries);
    size_t b = align128(size_t(K) * VB * 4);
    if (fold) b += align128(size_t(Tp) * K * 4) + align128(size_t(Tp) * VB * 4);
    b += align128(size_t(R) * KS * 2) + align128(size_t(entries) * VB * 2) + align128(size_t(R) * (R + 1) * 4);
    b += align128(size_t(queries) * K * 4) + align128(size_t(queries) * entries * 4);
    b += align128(size_t(entries) * 8) + 3 * align128(size_t(entries) * 4) + align128(size_t(R) * 4);
    return b;
  }
  /// Carves the arrays out of `base` (128-byte aligned) for capacities `entries` and `queries`; T and Q are set to
  /// them (a kernel lowers T to the row's entry count before use).
  __device__ __forceinline__ void setup(char* base, int entries, int queries, bool fold) {
    const int R = entries + queries, Tp = round_up16(entries);
    auto take = [&base](size_t n) {
      char* p = base;
      base += align128(n);
      return p;
    };
    tile = reinterpret_cast<float*>(take(size_t(K) * VB * 4));
    kf = fold ? reinterpret_cast<float*>(take(size_t(Tp) * K * 4)) : nullptr;
    pu = fold ? reinterpret_cast<float*>(take(size_t(Tp) * VB * 4)) : nullptr;
    keys = reinterpret_cast<bf16*>(take(size_t(R) * KS * 2));
    vals = reinterpret_cast<bf16*>(take(size_t(entries) * VB * 2));
    gram = reinterpret_cast<float*>(take(size_t(R) * (R + 1) * 4));
    qeff = reinterpret_cast<float*>(take(size_t(queries) * K * 4));
    vw = reinterpret_cast<float*>(take(size_t(queries) * entries * 4));
    G = reinterpret_cast<double*>(take(size_t(entries) * 8));
    g = reinterpret_cast<float*>(take(size_t(entries) * 4));
    beta = reinterpret_cast<float*>(take(size_t(entries) * 4));
    decay0 = reinterpret_cast<float*>(take(size_t(entries) * 4));
    rn = reinterpret_cast<float*>(take(size_t(R) * 4));
    T = entries;
    Q = queries;
    GS = R + 1;
  }

  /// Starts copying one raw key (or query) row (K bf16 at src, 16-byte aligned) into keys row r. All threads call.
  __device__ __forceinline__ void load_key_async(int r, const bf16* src) const {
    for (int c = threadIdx.x; c < K / 8; c += blockDim.x) cp_async16(keys + r * KS + c * 8, src + c * 8, true);
  }
  /// Starts copying one value slice (VB bf16 at src) into vals row r. All threads call.
  __device__ __forceinline__ void load_value_async(int r, const bf16* src) const {
    for (int c = threadIdx.x; c < VB / 8; c += blockDim.x) cp_async16(vals + r * VB + c * 8, src + c * 8, true);
  }
  /// Starts copying rows [r0, r0 + count) of keys and value slices from a raw pool's entries [e0, e0 + count).
  __device__ __forceinline__ void load_pool_async(const RawKVBufferPool& pool, int H, int HV, int V, int64_t e0,
                                                  int r0, int count, int h, int hk, int v0) const {
    constexpr int kc = K / 8, vc = VB / 8;
    for (int c = threadIdx.x; c < count * kc; c += blockDim.x) {
      const int j = c / kc, part = c % kc;
      cp_async16(keys + (r0 + j) * KS + part * 8, pool.keys + ((e0 + j) * H + hk) * K + part * 8, true);
    }
    for (int c = threadIdx.x; c < count * vc; c += blockDim.x) {
      const int j = c / vc, part = c % vc;
      cp_async16(vals + (r0 + j) * VB + part * 8, pool.values + ((e0 + j) * HV + h) * V + v0 + part * 8, true);
    }
  }
  /// Starts copying `count` tokens' keys and value slices (tokens tok0 .. of the inputs) into rows r0 .., and, when
  /// `queries`, their queries into rows T + 0 .. (T already set to the row's entry count).
  __device__ __forceinline__ void load_tokens_async(const TokenInputs& in, int H, int HV, int V, int64_t tok0, int r0,
                                                    int count, int h, int hk, int v0, bool queries) const {
    for (int i = 0; i < count; ++i) {
      load_key_async(r0 + i, in.k + ((tok0 + i) * H + hk) * K);
      load_value_async(r0 + i, in.v + ((tok0 + i) * HV + h) * V + v0);
      if (queries) load_key_async(T + i, in.q + ((tok0 + i) * H + hk) * K);
    }
  }
};

/// Gate of one raw entry (DESIGN.md section 2, fp32): g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b).
__device__ __forceinline__ Gate raw_gate(bf16 a, bf16 b, float A_log, float dt_bias) {
  Gate r;
  r.g = -expf(A_log) * softplus(__bfloat162float(a) + dt_bias);
  r.beta = 1.f / (1.f + expf(-__bfloat162float(b)));
  return r;
}

/// Entry j's gate inputs, j < n from the pool (entries e0 + j), else token tok0 + j - n of the inputs; writes g, beta
/// (no barrier).
template <class Smem>
__device__ __forceinline__ void raw_gates(const Smem& sm, const RawKVBufferPool& pool, const TokenInputs& in, int HV,
                                          int64_t e0, int n, int64_t tok0, int h) {
  const float A_log = in.A_log[h], dt_bias = in.dt_bias[h];
  for (int j = threadIdx.x; j < sm.T; j += blockDim.x) {
    const int64_t i = j < n ? (e0 + j) * HV + h : (tok0 + j - n) * HV + h;
    const Gate gt = j < n ? raw_gate(pool.gate_a[i], pool.gate_b[i], A_log, dt_bias)
                          : raw_gate(in.a[i], in.b[i], A_log, dt_bias);
    sm.g[j] = gt.g;
    sm.beta[j] = gt.beta;
  }
}

/// After the loads and raw_gates (cp.async complete, barrier passed): warp 0 sums G_j in float64 and e^{G_j}; all
/// threads form the raw dot products x_r1 . x_r2 (r1 >= r2) of the T + Q key/query rows. Ends with a barrier.
template <int K, class Smem>
__device__ __forceinline__ void raw_gram(const Smem& sm) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0) {
    double carry = 0;
    for (int c = 0; c * 32 < sm.T; ++c) {
      const int j = c * 32 + lane;
      double x = j < sm.T ? double(sm.g[j]) : 0.0;
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const double y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off) x += y;
      }
      if (j < sm.T) {
        sm.G[j] = carry + x;
        sm.decay0[j] = expf(float(carry + x));
      }
      carry += __shfl_sync(0xffffffffu, x, 31);
    }
  }
  const int R = sm.T + sm.Q, pairs = R * (R + 1) / 2;
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    int r1 = int((sqrtf(8.f * float(p) + 1.f) - 1.f) * 0.5f);
    while (r1 * (r1 + 1) / 2 > p) --r1;
    while ((r1 + 1) * (r1 + 2) / 2 <= p) ++r1;
    const int r2 = p - r1 * (r1 + 1) / 2;
    sm.gram[r1 * sm.GS + r2] = bf16_row_dot<K, false>(sm.keys + r1 * Smem::KS, sm.keys + r2 * Smem::KS);
  }
  __syncthreads();
}

/// Turns the raw products into the system (DESIGN.md section 3): rn (norms, the query scale on query rows), then in
/// place A_ij = beta_i e^{G_i - G_j} k^_i . k^_j (i > j) and, for query q answered at entry t_q = t0 + q,
/// c_j = e^{G_tq - G_j} k^_j . q^ (j <= t_q; 0 beyond). Ends with a barrier.
template <class Smem>
__device__ __forceinline__ void raw_system(const Smem& sm, int t0, float scale) {
  const int T = sm.T, R = T + sm.Q;
  for (int r = threadIdx.x; r < R; r += blockDim.x)
    sm.rn[r] = (r < T ? 1.f : scale) * rsqrtf(sm.gram[r * sm.GS + r] + kL2NormEps);
  __syncthreads();
  const int lower = T * (T - 1) / 2;
  for (int p = threadIdx.x; p < lower + sm.Q * T; p += blockDim.x) {
    if (p < lower) {
      int i = int((sqrtf(8.f * float(p) + 1.f) + 1.f) * 0.5f);  // pairs (i, j), j < i: p = i (i - 1) / 2 + j
      while (i * (i - 1) / 2 > p) --i;
      while ((i + 1) * i / 2 <= p) ++i;
      const int j = p - i * (i - 1) / 2;
      float& x = sm.gram[i * sm.GS + j];
      x *= sm.beta[i] * expf(float(sm.G[i] - sm.G[j])) * sm.rn[i] * sm.rn[j];
    } else {
      const int q = (p - lower) / T, j = (p - lower) % T, t = t0 + q;
      float& x = sm.gram[(T + q) * sm.GS + j];
      x = j <= t ? x * expf(float(sm.G[t] - sm.G[j])) * sm.rn[T + q] * sm.rn[j] : 0.f;
    }
  }
  __syncthreads();
}

/// d = (I + A)^-T c for every query (warp q, q + WARPS, ...: back substitution, lanes own entries lane + 32 s),
/// then vw[q][j] = d_j beta_j. Ends with a barrier.
template <class Smem>
__device__ __forceinline__ void raw_solve_queries(const Smem& sm, int t0) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, T = sm.T;
  for (int q = warp; q < sm.Q; q += int(blockDim.x / 32)) {
    const int t = t0 + q;
    float r[kRawLaneRows];
#pragma unroll
    for (int s = 0; s < kRawLaneRows; ++s) {
      const int j = lane + 32 * s;
      r[s] = j <= t ? sm.gram[(T + q) * sm.GS + j] : 0.f;
    }
    for (int j = t; j > 0; --j) {  // d_j = r_j is final; remove its share from every earlier entry
      const int s = j / 32;
      const float own = s == 0 ? r[0] : (s == 1 ? r[1 % kRawLaneRows] : r[2 % kRawLaneRows]);
      const float dj = __shfl_sync(0xffffffffu, own, j % 32);
#pragma unroll
      for (int s2 = 0; s2 < kRawLaneRows; ++s2) {
        const int k = lane + 32 * s2;
        if (k < j) r[s2] = fmaf(-sm.gram[j * sm.GS + k], dj, r[s2]);
      }
    }
#pragma unroll
    for (int s = 0; s < kRawLaneRows; ++s) {
      const int j = lane + 32 * s;
      if (j < T) sm.vw[q * T + j] = r[s] * sm.beta[j];
    }
  }
  __syncthreads();
}

/// qeff_q = e^{G_tq} q^ - sum_j vw[q][j] e^{G_j} k^_j, K values per query, from the raw rows. Ends with a barrier.
template <int K, class Smem>
__device__ __forceinline__ void raw_effective_queries(const Smem& sm, int t0) {
  const int T = sm.T;
  for (int idx = threadIdx.x; idx < sm.Q * K; idx += blockDim.x) {
    const int q = idx / K, k = idx % K, t = t0 + q;
    float x = sm.decay0[t] * sm.rn[T + q] * __bfloat162float(sm.keys[(T + q) * Smem::KS + k]);
    for (int j = 0; j <= t; ++j)
      x = fmaf(-sm.vw[q * T + j] * sm.decay0[j] * sm.rn[j], __bfloat162float(sm.keys[j * Smem::KS + k]), x);
    sm.qeff[q * K + k] = x;
  }
  __syncthreads();
}

/// This thread's share of o_q = S0^T qeff_q + sum_j vw[q][j] v_j on its rows and 4 columns, for q < Q <= QMAX
/// (not reduced over row groups: follow with tile.reduce_rows).
template <int QMAX, class Tile, int K, class Smem>
__device__ __forceinline__ void raw_output_partials(const Tile& tile, const Smem& sm, float (&acc)[QMAX][4]) {
#pragma unroll
  for (int q = 0; q < QMAX; ++q)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[q][c] = 0.f;
#pragma unroll 4
  for (int i = 0; i < Tile::ROWS; ++i) {
    const float4 s = tile.at(tile.row(i));
#pragma unroll
    for (int q = 0; q < QMAX; ++q) {
      if (q >= sm.Q) break;
      const float w = sm.qeff[q * K + tile.row(i)];
      acc[q][0] = fmaf(s.x, w, acc[q][0]);
      acc[q][1] = fmaf(s.y, w, acc[q][1]);
      acc[q][2] = fmaf(s.z, w, acc[q][2]);
      acc[q][3] = fmaf(s.w, w, acc[q][3]);
    }
  }
  for (int j = tile.rg; j < sm.T; j += Tile::RG) {
    float v[4];
    load_bf16<4>(sm.vals + j * Tile::CG * 4 + 4 * tile.cg, v);
#pragma unroll
    for (int q = 0; q < QMAX; ++q) {
      if (q >= sm.Q) break;
      const float w = sm.vw[q * sm.T + j];
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[q][c] = fmaf(w, v[c], acc[q][c]);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The fold on tensor cores (WMMA m16n16k8, TF32 in, fp32 accumulate).

namespace wmma = nvcuda::wmma;
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragAt = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

/// Rounds a fragment of values that are exact in TF32 (raw bf16 keys) to the TF32 encoding.
template <class Frag>
__device__ __forceinline__ void to_tf32(Frag& f) {
#pragma unroll
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = wmma::__float_to_tf32(f.x[i]);
}

/// Splits fp32 values into TF32 hi + lo parts (hi + lo equals x to about 2^-22 relative).
__device__ __forceinline__ void split_tf32(FragB& hi, FragB& lo) {
#pragma unroll
  for (int i = 0; i < hi.num_elements; ++i) {
    const float x = hi.x[i];
    hi.x[i] = wmma::__float_to_tf32(x);
    lo.x[i] = wmma::__float_to_tf32(x - hi.x[i]);
  }
}

/// acc += a b on the tensor cores for one 16 x 8 tile of a (loaded by the caller, converted to TF32 here) and the
/// 8 x 16 fp32 tile of b at `b` (row-major, leading dimension ldb), b split into TF32 hi + lo parts and the small
/// product taken first.
template <class FragAT>
__device__ __forceinline__ void mma_split_b(FragC& acc, FragAT& a, const float* b, unsigned ldb) {
  FragB hi, lo;
  wmma::load_matrix_sync(hi, b, ldb);
  to_tf32(a);
  split_tf32(hi, lo);
  wmma::mma_sync(acc, a, lo, acc);
  wmma::mma_sync(acc, a, hi, acc);
}

/// Folds the sm.T entries into the checkpoint slice and writes it to s0 ([K][V] of this value head, columns
/// v0 .. v0 + VB): S0 <- e^{G_t} S0 + sum_j e^{G_t - G_j} k^_j u_j^T, t = T - 1, with
/// u = (I + A)^-1 (beta (v - e^{G} P)), P = K^ S0. Needs raw_system done (rn, A, decay0, G). Barriers inside; all
/// threads call.
template <int K, int VB, class Smem>
__device__ __forceinline__ void raw_fold(const Smem& sm, float* __restrict__ s0, int V, int v0) {
  const int T = sm.T, Tp = round_up16(T), warp = threadIdx.x / 32, warps = int(blockDim.x / 32);
  for (int idx = threadIdx.x; idx < Tp * K; idx += blockDim.x) {
    const int j = idx / K, k = idx % K;
    sm.kf[idx] = j < T ? __bfloat162float(sm.keys[j * Smem::KS + k]) : 0.f;
  }
  __syncthreads();
  // P = K S0 (raw keys; rk applied below): [Tp x K] x [K x VB].
  for (int tIdx = warp; tIdx < (Tp / 16) * (VB / 16); tIdx += warps) {
    const int j0 = (tIdx / (VB / 16)) * 16, c0 = (tIdx % (VB / 16)) * 16;
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
#pragma unroll 2
    for (int k0 = 0; k0 < K; k0 += 8) {
      FragA a;
      wmma::load_matrix_sync(a, sm.kf + j0 * K + k0, K);
      mma_split_b(acc, a, sm.tile + k0 * VB + c0, VB);
    }
    wmma::store_matrix_sync(sm.pu + j0 * VB + c0, acc, VB, wmma::mem_row_major);
  }
  __syncthreads();
  // Forward substitution, one thread per column: u_i = beta_i (v_i - e^{G_i} rk_i P_i) - sum_{j<i} A_ij u_j.
  for (int c = threadIdx.x; c < VB; c += blockDim.x) {
    for (int i = 0; i < T; ++i) {
      float x = sm.beta[i] * (__bfloat162float(sm.vals[i * VB + c]) - sm.decay0[i] * sm.rn[i] * sm.pu[i * VB + c]);
      for (int j = 0; j < i; ++j) x = fmaf(-sm.gram[i * sm.GS + j], sm.pu[j * VB + c], x);
      sm.pu[i * VB + c] = x;
    }
    for (int j = 0; j < T; ++j) sm.pu[j * VB + c] *= expf(float(sm.G[T - 1] - sm.G[j])) * sm.rn[j];
  }
  __syncthreads();
  // S0 <- e^{G_t} S0 + K^T (w rk U): [K x Tp] x [Tp x VB] on a zero accumulator, added to e^{G_t} S0 in fp32 on
  // CUDA cores. (The tensor cores align and truncate their fp32 sums rather than round them to nearest; accumulating
  // onto S0 itself would shrink every element of the state toward zero by up to an ulp per MMA, a bias that every
  // flush repeats and that adds up over a long run.)
  const float decay = sm.decay0[T - 1];
  for (int tIdx = warp; tIdx < (K / 16) * (VB / 16); tIdx += warps) {
    const int k0 = (tIdx / (VB / 16)) * 16, c0 = (tIdx % (VB / 16)) * 16;
    FragC acc, state;
    wmma::fill_fragment(acc, 0.f);
    for (int j0 = 0; j0 < Tp; j0 += 8) {
      FragAt a;
      wmma::load_matrix_sync(a, sm.kf + j0 * K + k0, K);
      mma_split_b(acc, a, sm.pu + j0 * VB + c0, VB);
    }
    wmma::load_matrix_sync(state, sm.tile + k0 * VB + c0, VB, wmma::mem_row_major);
#pragma unroll
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = fmaf(decay, state.x[i], acc.x[i]);
    wmma::store_matrix_sync(s0 + int64_t(k0) * V + v0 + c0, acc, V, wmma::mem_row_major);
  }
}

}  // namespace kvb::dev
