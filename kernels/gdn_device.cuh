// Device building blocks shared by the GDN kernels: vector loads, gate preparation, warp norms, the register tile
// of a state slice and its column reductions. DESIGN.md section 2 gives the formulas.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/gdn_params.h"

namespace kvb::dev {

constexpr int kThreads = 128;             ///< default threads per block of the decode/flush kernels
constexpr int kWarps = kThreads / 32;
constexpr float kL2NormEps = 1e-6f;       ///< Qwen3-Next's l2-norm epsilon

// ---------------------------------------------------------------------------------------------------------------
// Loads and stores.

/// Loads N consecutive bf16 (N in {1, 2, 4, 8, 16}) as floats with the widest aligned vector loads (generic
/// addressing: global or shared memory).
template <int N>
__device__ __forceinline__ void load_bf16(const bf16* __restrict__ p, float (&out)[N]) {
  if constexpr (N % 8 == 0) {
#pragma unroll
    for (int c = 0; c < N / 8; ++c) {
      const uint4 raw = reinterpret_cast<const uint4*>(p)[c];
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(h[i]);
        out[c * 8 + 2 * i] = f.x;
        out[c * 8 + 2 * i + 1] = f.y;
      }
    }
  } else if constexpr (N == 4) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p);
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
    const float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
    out[0] = a.x; out[1] = a.y; out[2] = b.x; out[3] = b.y;
  } else if constexpr (N == 2) {
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
    out[0] = a.x; out[1] = a.y;
  } else {
    static_assert(N == 1, "load_bf16: N must be 1, 2, 4, 8 or 16");
    out[0] = __bfloat162float(p[0]);
  }
}

/// Dot product of two K-long bf16 rows (16-byte aligned, generic addressing) in fp32 FMAs over the elements in order.
/// kTwoChains: even and odd elements accumulate in two chains, added at the end (shorter dependency chains); else
/// one chain. The two orders round differently; each kernel keeps the one its GPU checks were made with.
template <int K, bool kTwoChains>
__device__ __forceinline__ float bf16_row_dot(const bf16* x, const bf16* y) {
  const uint4* x1 = reinterpret_cast<const uint4*>(x);
  const uint4* x2 = reinterpret_cast<const uint4*>(y);
  float s0 = 0.f, s1 = 0.f;
#pragma unroll 4
  for (int c = 0; c < K / 8; ++c) {
    const uint4 a = x1[c], b = x2[c];
    const __nv_bfloat162* ha = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* hb = reinterpret_cast<const __nv_bfloat162*>(&b);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 fa = __bfloat1622float2(ha[e]), fb = __bfloat1622float2(hb[e]);
      s0 = fmaf(fa.x, fb.x, s0);
      if constexpr (kTwoChains) s1 = fmaf(fa.y, fb.y, s1);
      else s0 = fmaf(fa.y, fb.y, s0);
    }
  }
  return kTwoChains ? s0 + s1 : s0;
}

/// Writes 4 consecutive output values (bf16 or fp32) at element offset `off` of o.
__device__ __forceinline__ void store_output4(void* o, OutputDtype dt, int64_t off, const float (&x)[4]) {
  if (dt == OutputDtype::fp32) {
    *reinterpret_cast<float4*>(static_cast<float*>(o) + off) = make_float4(x[0], x[1], x[2], x[3]);
  } else {
    __nv_bfloat162 h[2] = {__floats2bfloat162_rn(x[0], x[1]), __floats2bfloat162_rn(x[2], x[3])};
    *reinterpret_cast<uint2*>(static_cast<bf16*>(o) + off) = *reinterpret_cast<const uint2*>(h);
  }
}

/// Writes one output value.
__device__ __forceinline__ void store_output1(void* o, OutputDtype dt, int64_t off, float x) {
  if (dt == OutputDtype::fp32) static_cast<float*>(o)[off] = x;
  else static_cast<bf16*>(o)[off] = __float2bfloat16_rn(x);
}

/// Zeroes columns [v0, min(v0 + VB, V)) of the output row that starts at element `off` (a padding row's slice of one
/// value head, so that every output element is written). The block's threads split the columns.
__device__ __forceinline__ void zero_output_slice(void* o, OutputDtype dt, int64_t off, int v0, int VB, int V) {
  for (int c = threadIdx.x; c < VB && v0 + c < V; c += blockDim.x) store_output1(o, dt, off + v0 + c, 0.f);
}

// ---------------------------------------------------------------------------------------------------------------
// Gates and norms (DESIGN.md section 2, all fp32).

__device__ __forceinline__ float softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }

struct Gate {
  float g;     ///< log-decay, <= 0
  float beta;  ///< in (0, 1), kept in fp32
};

/// The gate's formulas (DESIGN.md section 2): g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b).
__device__ __forceinline__ float gate_log_decay(float A_log, float a, float dt_bias) {
  return -expf(A_log) * softplus(a + dt_bias);
}
__device__ __forceinline__ float gate_beta(float b) { return 1.f / (1.f + expf(-b)); }

/// Gate of token `tok` (= row * T + t) and value head h: prepared values when given, else
/// g = -exp(A_log[h]) softplus(a + dt_bias[h]), beta = sigmoid(b). It keeps its own branches rather than being
/// form_gate(load_gate_inputs(...)): the decode kernels issue its loads in this order.
__device__ __forceinline__ Gate prepare_gate(const TokenInputs& in, int64_t tok, int h, int HV) {
  Gate r;
  const int64_t i = tok * HV + h;
  if (in.g) r.g = in.g[i];
  else r.g = gate_log_decay(in.A_log[h], __bfloat162float(in.a[i]), in.dt_bias[h]);
  if (in.beta) r.beta = in.beta[i];
  else r.beta = gate_beta(__bfloat162float(in.b[i]));
  return r;
}

/// The loaded inputs of one token's gate (value head h): g itself when prepared (in.g), else a, A_log and dt_bias;
/// beta itself when prepared (in.beta), else b. Loaded early (load_gate_inputs), formed later (form_gate): the same
/// values as prepare_gate.
struct GateInputs {
  float g_or_a = 0.f, A_log = 0.f, dt_bias = 0.f, beta_or_b = 0.f;
};
/// Loads token tok's gate inputs for value head h (TokenInputs layouts: [N, T, HV] per token, [HV] per head).
__device__ __forceinline__ GateInputs load_gate_inputs(const TokenInputs& in, int64_t tok, int h, int HV) {
  GateInputs x;
  const int64_t i = tok * HV + h;
  if (in.g) {
    x.g_or_a = in.g[i];
  } else {
    x.g_or_a = __bfloat162float(in.a[i]);
    x.A_log = in.A_log[h];
    x.dt_bias = in.dt_bias[h];
  }
  x.beta_or_b = in.beta ? in.beta[i] : __bfloat162float(in.b[i]);
  return x;
}
/// The gate from its loaded inputs: the same values as prepare_gate.
__device__ __forceinline__ Gate form_gate(const TokenInputs& in, const GateInputs& x) {
  Gate r;
  r.g = in.g ? x.g_or_a : gate_log_decay(x.A_log, x.g_or_a, x.dt_bias);
  r.beta = in.beta ? x.beta_or_b : gate_beta(x.beta_or_b);
  return r;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

/// The smallest power of two >= x (x >= 1).
constexpr int pow2_at_least(int x) { return x <= 1 ? 1 : 2 * pow2_at_least((x + 1) / 2); }
/// floor(log2 x) (x >= 1).
constexpr int log2_floor(int x) { return x <= 1 ? 0 : 1 + log2_floor(x / 2); }

/// Sums P values (P a power of two, at most 32) over the warp at once, each lane ending with one total: lane l gets
/// the total of value l / (32 / P), as do the other lanes of its group of 32 / P. Each exchange round sends half of
/// the values still held to the partner lane and keeps the other half; then log2(32 / P) butterfly rounds: P - 1 +
/// log2(32 / P) shuffles in all instead of 5 P. v is overwritten.
template <int P>
__device__ __forceinline__ float warp_sum_scatter(float (&v)[P]) {
  static_assert(P >= 1 && P <= 32 && (P & (P - 1)) == 0, "warp_sum_scatter: P must be a power of two <= 32");
  constexpr int ROUNDS = log2_floor(P);
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < ROUNDS; ++r) {
    const int half = P >> (r + 1), off = 16 >> r;
    const bool upper = lane & off;  // keeps values [half, 2 half), sends [0, half)
#pragma unroll
    for (int i = 0; i < P / 2; ++i)
      if (i < half) {
        const float keep = upper ? v[half + i] : v[i], send = upper ? v[i] : v[half + i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, off);
      }
  }
  float x = v[0];
#pragma unroll
  for (int r = ROUNDS; r < 5; ++r) x += __shfl_xor_sync(0xffffffffu, x, 16 >> r);
  return x;
}

/// A K-vector spread over one warp: lane l holds elements [l * K/32, (l + 1) * K/32).
template <int K>
struct WarpVec {
  static constexpr int N = K / 32;
  float x[N];
  __device__ __forceinline__ void load(const bf16* __restrict__ p, int lane) { load_bf16<N>(p + lane * N, x); }
  __device__ __forceinline__ float dot(const WarpVec& o) const {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i) s = fmaf(x[i], o.x[i], s);
    return s;
  }
};

/// A raw bf16 K-vector spread over one warp like WarpVec, kept packed (half the registers) until used.
template <int K>
struct WarpVecBf16 {
  static constexpr int N = K / 32;
  bf16 x[N];
  /// Loads from global or shared memory (generic addressing).
  __device__ __forceinline__ void load(const bf16* __restrict__ p, int lane) {
    const bf16* src = p + lane * N;
    if constexpr (N == 8) *reinterpret_cast<uint4*>(x) = *reinterpret_cast<const uint4*>(src);
    else if constexpr (N == 4) *reinterpret_cast<uint2*>(x) = *reinterpret_cast<const uint2*>(src);
    else if constexpr (N == 2) *reinterpret_cast<unsigned*>(x) = *reinterpret_cast<const unsigned*>(src);
    else x[0] = src[0];
  }
  /// Sum over this lane's elements of x[i] * o[i] (and of x[i]^2 into sq).
  __device__ __forceinline__ float dot(const WarpVec<K>& o) const {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i) s = fmaf(__bfloat162float(x[i]), o.x[i], s);
    return s;
  }
  __device__ __forceinline__ float norm2() const {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float f = __bfloat162float(x[i]);
      s = fmaf(f, f, s);
    }
    return s;
  }
  /// 1 / sqrt(|x|^2 + eps) of the whole vector (every lane calls it; Qwen3-Next's l2-norm, DESIGN.md section 2).
  __device__ __forceinline__ float inverse_norm() const { return rsqrtf(warp_sum(norm2()) + kL2NormEps); }
  /// The same vector in fp32 (exact).
  __device__ __forceinline__ WarpVec<K> widen() const {
    WarpVec<K> w;
#pragma unroll
    for (int i = 0; i < N; ++i) w.x[i] = __bfloat162float(x[i]);
    return w;
  }
};

/// Normalisation factors of one token for one key head, computed by every warp on its own (no block barrier):
/// k^ = k * rk, q^ = q * rq (rq includes the query scale), and k^ . q^.
struct QKNorm {
  float rk, rq, kq;
};

template <int K>
__device__ __forceinline__ QKNorm warp_qk_norm(const WarpVec<K>& q, const WarpVec<K>& k, float scale) {
  const float qq = warp_sum(q.dot(q)), kk = warp_sum(k.dot(k)), kq = warp_sum(k.dot(q));
  QKNorm n;
  n.rk = rsqrtf(kk + kL2NormEps);
  n.rq = scale * rsqrtf(qq + kL2NormEps);
  n.kq = kq * n.rk * n.rq;
  return n;
}

/// One draft token's inputs as loaded (token tok, key head hk, value head h): raw q and k spread over the warp like
/// WarpVec, and on lane 0 its gate's inputs. Requested early (load_draft_inputs), used later (normalise_drafts).
template <int K>
struct DraftInputs {
  WarpVecBf16<K> q, k;
  GateInputs gate;
};
/// Requests draft token tok's inputs (q, k of key head hk; on lane 0 the gate's of value head h); every lane calls it.
template <int K>
__device__ __forceinline__ DraftInputs<K> load_draft_inputs(const TokenInputs& in, int64_t tok, int H, int HV,
                                                            int h, int hk) {
  const int lane = threadIdx.x % 32;
  DraftInputs<K> d;
  d.q.load(in.q + (tok * H + hk) * K, lane);
  d.k.load(in.k + (tok * H + hk) * K, lane);
  if (lane == 0) d.gate = load_gate_inputs(in, tok, h, HV);
  return d;
}

/// The calling warp's share of a block's m draft tokens of row `row` (token row * m + i, key head hk, value head h):
/// for i = first, first + stride, ... < m, hands raw(i, kv) the raw key as loaded (WarpVec, lane l holding elements
/// [l * K/32, (l + 1) * K/32)), store(i, r, k^[r], q^[r]) every element r this lane holds (q^ includes the scale),
/// and on lane 0 gate(i, Gate of draft i, k^ . q^). DESIGN.md section 2. `first_inputs`, when given, are draft
/// `first`'s inputs already loaded (load_draft_inputs).
template <int K, class RawKey, class Store, class GateSink>
__device__ __forceinline__ void normalise_drafts(const TokenInputs& in, int row, int m, int first, int stride, int H,
                                                 int HV, int h, int hk, RawKey raw, Store store, GateSink gate,
                                                 const DraftInputs<K>* first_inputs = nullptr) {
  const int lane = threadIdx.x % 32;
  for (int i = first; i < m; i += stride) {
    const int64_t tok = int64_t(row) * m + i;
    const bool preloaded = first_inputs && i == first;
    WarpVec<K> qv, kv;
    if (preloaded) {
      qv = first_inputs->q.widen();
      kv = first_inputs->k.widen();
    } else {  // loaded straight into fp32 (recurrent verify does not go through load_draft_inputs)
      qv.load(in.q + (tok * H + hk) * K, lane);
      kv.load(in.k + (tok * H + hk) * K, lane);
    }
    raw(i, static_cast<const WarpVec<K>&>(kv));
    const QKNorm nrm = warp_qk_norm<K>(qv, kv, in.scale);
#pragma unroll
    for (int e = 0; e < WarpVec<K>::N; ++e) store(i, lane * WarpVec<K>::N + e, kv.x[e] * nrm.rk, qv.x[e] * nrm.rq);
    if (lane == 0)
      gate(i, preloaded ? form_gate(in, first_inputs->gate) : prepare_gate(in, tok, h, HV), nrm.kq);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Asynchronous copies into shared memory (cp.async, 16 bytes, L2 only): the state streams into shared memory
// without holding registers while in flight, so many blocks per SM keep many bytes in flight.

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
/// 4-byte asynchronous copy (cp.async.ca), for scalars.
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
}
/// 8-byte asynchronous copy (cp.async.ca); valid false: zero-fill, nothing read.
__device__ __forceinline__ void cp_async8(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
/// Asks L2 for the line holding p (global memory), without waiting.
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
/// Waits until at most N of this thread's cp.async groups are pending (groups complete in commit order).
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
/// cp_async_wait_group<n> for n in [0, 8] known only after unrolling (a loop index: verify's chunk waits go up to 7,
/// at K = 256); above 8, waits for all.
__device__ __forceinline__ void cp_async_wait_pending(int n) {
  switch (n) {
    case 0: cp_async_wait_group<0>(); break;
    case 1: cp_async_wait_group<1>(); break;
    case 2: cp_async_wait_group<2>(); break;
    case 3: cp_async_wait_group<3>(); break;
    case 4: cp_async_wait_group<4>(); break;
    case 5: cp_async_wait_group<5>(); break;
    case 6: cp_async_wait_group<6>(); break;
    case 7: cp_async_wait_group<7>(); break;
    case 8: cp_async_wait_group<8>(); break;
    default: cp_async_wait_all();
  }
}



// ---------------------------------------------------------------------------------------------------------------
// Bulk copies (cp.async.bulk, sm_90): one thread asks the SM's copy engine (TMA) for a whole contiguous run of global
// memory in one instruction; it lands in shared memory with no registers and no per-thread copies in flight, and
// completes a transaction barrier (mbarrier) in shared memory, used once: phase 0.

/// Initialises the one-phase barrier `bar` (shared memory, 8-byte aligned) for one arrival. One thread; a block
/// barrier must separate it from any other thread's bulk_wait.
__device__ __forceinline__ void bulk_barrier_init(uint64_t* bar) {
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// Starts copying `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `gmem` into shared `smem`;
/// the copy completes `bar`'s phase 0. One thread, after bulk_barrier_init.
__device__ __forceinline__ void bulk_load(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(s),
               "l"(gmem), "r"(bytes), "r"(b)
               : "memory");
}
/// Waits until the bulk_load on `bar` has landed in shared memory. Every thread that reads the slice.
__device__ __forceinline__ void bulk_wait(uint64_t* bar) {
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(b)
        : "memory");
}

/// Starts copying the value slices of row `row`'s m draft tokens into shared memory: vs[i][c] = v[token row * m + i,
/// value head h, column v0 + c] for c < VB (bf16, zero past V), 4 values per copy. v: bf16 [N * m, HV, V]. Drafts'
/// values are needed only after the state pass; copying them up front keeps their global latency off that path.
template <int VB>
__device__ __forceinline__ void load_draft_values_async(const bf16* __restrict__ v, int row, int m, int HV, int h,
                                                        int V, int v0, bf16 (*vs)[VB]) {
  for (int idx = threadIdx.x; idx < m * (VB / 4); idx += blockDim.x) {
    const int i = idx / (VB / 4), c = 4 * (idx % (VB / 4));
    const bool ok = v0 + c < V;
    cp_async8(&vs[i][c], v + ((int64_t(row) * m + i) * HV + h) * V + (ok ? v0 + c : 0), ok);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Shared-memory tile of a K x VB slice of a kv-layout state ([K][V], V contiguous), plus `extra` rows of V-vectors
// (buffered deltas) below it: rows [0, K) hold the state, rows [K, K + extra) the extra vectors.
//
// Thread t owns column group cg = t % CG (4 consecutive columns) and row group rg = t / CG: the ROWS consecutive
// state rows [rg * ROWS, (rg + 1) * ROWS) and the extra rows rg, rg + RG, ... A warp's copy covers 32 / CG rows x
// 16 * CG bytes: whole 128-byte lines for VB = 32; its shared-memory reads are conflict-free for the same reason.

//
// kExtraOnly: the tile holds only the extra rows (a launch whose rows have no state): rows [0, K) take no shared
// memory and must not be read.
// S: the stored state's element type, float or bf16 (StateDtype). The state rows are held as stored (a bf16 slice
// takes half the shared memory and is widened to fp32 where it is read); the extra rows are always fp32. Arithmetic
// is fp32 either way; a store rounds to S (nearest even).

/// Four consecutive bf16 elements (8 bytes, the first in the low half of w.x), widened to fp32 (exact).
__device__ __forceinline__ float4 widen_bf16x4(const uint2& w) {
  return make_float4(__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u), __uint_as_float(w.y << 16),
                     __uint_as_float(w.y & 0xffff0000u));
}
/// Stores four consecutive state elements as S (bf16: rounded to nearest even), streaming (evict-first).
template <typename S>
__device__ __forceinline__ void store_state4(S* p, const float4& x) {
  if constexpr (std::is_same<S, float>::value) {
    __stcs(reinterpret_cast<float4*>(p), x);
  } else {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(x.x, x.y), hi = __floats2bfloat162_rn(x.z, x.w);
    __stcs(reinterpret_cast<uint2*>(p), make_uint2(*reinterpret_cast<const uint32_t*>(&lo),
                                                   *reinterpret_cast<const uint32_t*>(&hi)));
  }
}

template <int K, int VB, int THREADS = kThreads, bool kExtraOnly = false, typename S = float>
struct SmemTile {
  static constexpr int WARPS = THREADS / 32;
  static constexpr int CG = VB / 4;
  static constexpr int RG = THREADS / CG;
  static constexpr int ROWS = K / RG;
  static constexpr int kFirstRow = kExtraOnly ? K : 0;  ///< first row backed by shared memory
  static_assert(VB % 4 == 0 && THREADS % CG == 0 && K % RG == 0 && ROWS >= 1, "SmemTile: unsupported K x VB");
  static_assert(CG <= 32 && 32 % CG == 0, "SmemTile: column groups must tile a warp");
  static_assert(std::is_same<S, float>::value || std::is_same<S, bf16>::value, "SmemTile: S is float or bf16");
  using State = S;
  static constexpr bool kFp32 = std::is_same<S, float>::value;
  /// Shared-memory bytes of the state slice (none when kExtraOnly), a multiple of 16.
  static constexpr size_t state_bytes() { return size_t(K - kFirstRow) * VB * sizeof(S); }
  /// 16-byte words of the state slice: the extra rows start there.
  static constexpr int kStateWords = int(state_bytes() / 16);
  /// Shared-memory bytes for the state slice plus `extra` fp32 rows.
  static constexpr size_t bytes(int extra) { return state_bytes() + size_t(extra) * VB * sizeof(float); }

  float4* sm;       ///< the state rows [K][VB] as S (state_bytes()), then the extra rows [extra][CG] float4
  int cg, rg, col;  ///< col: first column of this thread inside the whole V (may be >= V: masked)
  bool active;      ///< col < V

  __device__ __forceinline__ void setup(float4* smem, int v0, int V) {
    sm = smem;
    cg = threadIdx.x % CG;
    rg = threadIdx.x / CG;
    col = v0 + 4 * cg;
    active = col < V;
  }
  __device__ __forceinline__ int row(int i) const { return rg * ROWS + i; }
  /// Row r of an fp32 tile (state rows, then extra rows from K), in place.
  __device__ __forceinline__ float4& at(int r) const {
    static_assert(kFp32, "SmemTile::at: an fp32 tile only (state(), extra() read either)");
    return sm[(r - kFirstRow) * CG + cg];
  }
  /// This thread's four columns of state row r, widened to fp32.
  __device__ __forceinline__ float4 state(int r) const {
    if constexpr (kFp32)
      return sm[(r - kFirstRow) * CG + cg];
    else
      return widen_bf16x4(state_word(r));
  }
  /// This thread's four columns of extra row j.
  __device__ __forceinline__ float4& extra(int j) const { return sm[kStateWords + j * CG + cg]; }

  /// Starts copying this thread's state rows of matrix m ([K][V], S) into the tile (zeros for masked columns).
  __device__ __forceinline__ void load_state_async(const S* __restrict__ m, int V) const {
    static_assert(!kExtraOnly, "SmemTile: a tile of extra rows only holds no state");
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const S* src = m + int64_t(row(i)) * V + (active ? col : 0);
      if constexpr (kFp32)
        cp_async16(&sm[(row(i) - kFirstRow) * CG + cg], src, active);
      else
        cp_async8(&state_word(row(i)), src, active);
    }
  }
  /// Starts copying the whole slice of matrix m ([K][VB], S: a whole value head, VB == V, the caller checks) into the
  /// tile, whose rows then have the global layout, as one bulk copy completing `bar`. One thread, after
  /// bulk_barrier_init; every reader then bulk_wait(bar).
  __device__ __forceinline__ void load_state_bulk(const S* __restrict__ m, uint64_t* bar) const {
    static_assert(!kExtraOnly, "SmemTile: a tile of extra rows only holds no state");
    bulk_load(sm, m, static_cast<uint32_t>(state_bytes()), bar);
  }
  /// Starts copying extra rows j = rg, rg + RG, ... < n from rows of `base` spaced `stride` floats apart.
  __device__ __forceinline__ void load_extra_async(const float* __restrict__ base, int64_t stride, int n) const {
    for (int j = rg; j < n; j += RG) cp_async16(&extra(j), base + j * stride + (active ? col : 0), active);
  }
  /// acc[c] += sum_i S[row(i)][c] * w[i] over this thread's state rows.
  __device__ __forceinline__ void accumulate(const float (&w)[ROWS], float (&acc)[4]) const {
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const float4 s = state(row(i));
      acc[0] = fmaf(s.x, w[i], acc[0]);
      acc[1] = fmaf(s.y, w[i], acc[1]);
      acc[2] = fmaf(s.z, w[i], acc[2]);
      acc[3] = fmaf(s.w, w[i], acc[3]);
    }
  }
  /// Two state-row accumulations in one pass over the tile.
  __device__ __forceinline__ void accumulate2(const float (&w1)[ROWS], float (&acc1)[4], const float (&w2)[ROWS],
                                              float (&acc2)[4]) const {
#pragma unroll
    for (int i = 0; i < ROWS; ++i) fma_row2(state(row(i)), w1[i], acc1, w2[i], acc2);
  }
  /// accumulate2 with the row weights read from shared memory (16-byte aligned): w1s[i] and w2s[i] for this thread's
  /// rows i < ROWS, four at a time.
  __device__ __forceinline__ void accumulate2_shared(const float* w1s, float (&acc1)[4], const float* w2s,
                                                     float (&acc2)[4]) const {
    static_assert(ROWS % 4 == 0, "accumulate2_shared: rows in groups of four");
#pragma unroll
    for (int i0 = 0; i0 < ROWS; i0 += 4) {
      const float4 a = *reinterpret_cast<const float4*>(w1s + i0), b = *reinterpret_cast<const float4*>(w2s + i0);
      const float wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) fma_row2(state(row(i0 + j)), wa[j], acc1, wb[j], acc2);
    }
  }
  /// acc1 += w1 s and acc2 += w2 s for one state row s of this thread's four columns.
  __device__ __forceinline__ static void fma_row2(const float4& s, float w1, float (&acc1)[4], float w2,
                                                  float (&acc2)[4]) {
    acc1[0] = fmaf(s.x, w1, acc1[0]);
    acc1[1] = fmaf(s.y, w1, acc1[1]);
    acc1[2] = fmaf(s.z, w1, acc1[2]);
    acc1[3] = fmaf(s.w, w1, acc1[3]);
    acc2[0] = fmaf(s.x, w2, acc2[0]);
    acc2[1] = fmaf(s.y, w2, acc2[1]);
    acc2[2] = fmaf(s.z, w2, acc2[2]);
    acc2[3] = fmaf(s.w, w2, acc2[3]);
  }
  /// Writes decay * S + kcol u^T for this thread's rows to m ([K][V], S), streaming (evict-first); the tile keeps S.
  __device__ __forceinline__ void store_decay_rank1(S* __restrict__ m, int V, float decay, const float (&kcol)[ROWS],
                                                    const float (&u)[4]) const {
    if (!active) return;
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const float4 s = state(row(i));
      const float4 y = make_float4(fmaf(kcol[i], u[0], decay * s.x), fmaf(kcol[i], u[1], decay * s.y),
                                   fmaf(kcol[i], u[2], decay * s.z), fmaf(kcol[i], u[3], decay * s.w));
      store_state4(m + int64_t(row(i)) * V + col, y);
    }
  }
  /// Sums two 4-column partials over all row groups of the block; every thread gets the totals for its columns.
  /// red: shared [2][WARPS][VB]. Contains a __syncthreads (all threads must call).
  __device__ __forceinline__ void reduce_rows(float (&a)[4], float (&b)[4], float* red) const {
    reduce_rows_in_warp(a, b);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane < CG) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        red[warp * VB + 4 * lane + c] = a[c];
        red[(WARPS + warp) * VB + 4 * lane + c] = b[c];
      }
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      float sa = 0.f, sb = 0.f;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) {
        sa += red[w * VB + 4 * cg + c];
        sb += red[(WARPS + w) * VB + 4 * cg + c];
      }
      a[c] = sa;
      b[c] = sb;
    }
  }
  /// reduce_rows through half the shared memory: red is shared [WARPS][VB] and carries a's partials, then b's.
  /// Contains three __syncthreads (all threads must call).
  __device__ __forceinline__ void reduce_rows_in_turn(float (&a)[4], float (&b)[4], float* red) const {
    reduce_rows_in_warp(a, b);
    reduce_warps(a, red);
    __syncthreads();  // every thread has read a's partials before b's overwrite them
    reduce_warps(b, red);
  }

 private:
  /// This thread's four bf16 elements of state row r (8 bytes).
  __device__ __forceinline__ uint2& state_word(int r) const {
    return reinterpret_cast<uint2*>(sm)[(r - kFirstRow) * CG + cg];
  }
  /// Sums a and b over the row groups of one warp (lanes CG apart).
  __device__ __forceinline__ static void reduce_rows_in_warp(float (&a)[4], float (&b)[4]) {
#pragma unroll
    for (int off = CG; off < 32; off <<= 1) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        a[c] += __shfl_xor_sync(0xffffffffu, a[c], off);
        b[c] += __shfl_xor_sync(0xffffffffu, b[c], off);
      }
    }
  }
  /// Sums a, already summed within each warp, over the warps through red ([WARPS][VB]); one __syncthreads.
  __device__ __forceinline__ void reduce_warps(float (&a)[4], float* red) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane < CG) {
#pragma unroll
      for (int c = 0; c < 4; ++c) red[warp * VB + 4 * lane + c] = a[c];
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < WARPS; ++w) s += red[w * VB + 4 * cg + c];
      a[c] = s;
    }
  }
};

/// Loads 4 consecutive floats of a V-vector at column col (zeros when inactive).
__device__ __forceinline__ void load4(const float* __restrict__ p, bool active, float (&x)[4]) {
  if (active) {
    const float4 f = __ldg(reinterpret_cast<const float4*>(p));
    x[0] = f.x; x[1] = f.y; x[2] = f.z; x[3] = f.w;
  } else {
    x[0] = x[1] = x[2] = x[3] = 0.f;
  }
}

/// Loads 4 consecutive bf16 of a V-vector as floats (zeros when inactive).
__device__ __forceinline__ void load4(const bf16* __restrict__ p, bool active, float (&x)[4]) {
  if (active) {
    float t[4];
    load_bf16<4>(p, t);
    x[0] = t[0]; x[1] = t[1]; x[2] = t[2]; x[3] = t[3];
  } else {
    x[0] = x[1] = x[2] = x[3] = 0.f;
  }
}

/// acc[c] += a * u[c] for the 4 columns of u.
__device__ __forceinline__ void fma4(float a, const float4& u, float (&acc)[4]) {
  acc[0] = fmaf(a, u.x, acc[0]);
  acc[1] = fmaf(a, u.y, acc[1]);
  acc[2] = fmaf(a, u.z, acc[2]);
  acc[3] = fmaf(a, u.w, acc[3]);
}

/// s[i] += k[i] u for i < N: a rank-1 update of N state rows held as float4 columns (a fold's entry).
template <int N>
__device__ __forceinline__ void fma_rows(float4 (&s)[N], const float (&k)[N], const float4& u) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    s[i].x = fmaf(k[i], u.x, s[i].x);
    s[i].y = fmaf(k[i], u.y, s[i].y);
    s[i].z = fmaf(k[i], u.z, s[i].z);
    s[i].w = fmaf(k[i], u.w, s[i].w);
  }
}

/// Number of VB-wide column slices covering V.
__host__ __device__ constexpr int num_slices(int V, int VB) { return (V + VB - 1) / VB; }

}  // namespace kvb::dev
