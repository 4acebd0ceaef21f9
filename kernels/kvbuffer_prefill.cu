// Stateless prefill (DESIGN.md section 3): a prompt of L <= B tokens into an empty buffer from S0 = 0, by the L x L
// triangular solve
//   u_t = beta_t (v_t - sum_{j<t} w_tj (k^_j . k^_t) u_j),   o_t = sum_{j<=t} w_tj (k^_j . q^_t) u_j,
// w_tj = e^{G_t - G_j} = exp(g_{j+1} + ... + g_t) summed from the per-token gates (never a difference of cumulative
// sums). L < B appends the L entries; L = B folds them into a state materialised from zero instead.
// Grid: (V slices of kCols columns, HV, N); block: kCols threads, one value column each.
#include <algorithm>
#include <string>

#include "kernels/gdn_device.cuh"
#include "kernels/kvbuffer_prefill.h"
#include "kernels/launch_util.h"

namespace kvb {
namespace {

using namespace dev;

constexpr int kCols = 128;  ///< value columns per block, one per thread

/// One (row, value head)'s prompt in shared memory for Lmax tokens: raw keys and queries of its key head
/// [Lmax][K] (bf16), per token 1/|k|, scale/|q|, g, beta, the fold weights wl[j] = e^{G_L - G_j} (for L = B), the
/// decayed products kk[t][j] = w_tj (k^_j . k^_t) (j < t) and kq[t][j] = w_tj (k^_j . q^_t) (j <= t), and the corrected
/// deltas u[t][column] of this block's columns.
template <int K>
struct PromptSmem {
  bf16* keys;
  bf16* queries;
  float *rk, *rq, *g, *beta, *wl, *kk, *kq, *u;
  int lmax;
  __device__ __forceinline__ void setup(void* base, int Lmax) {
    lmax = Lmax;
    keys = static_cast<bf16*>(base);
    queries = keys + size_t(Lmax) * K;
    rk = reinterpret_cast<float*>(queries + size_t(Lmax) * K);
    rq = rk + Lmax;
    g = rq + Lmax;
    beta = g + Lmax;
    wl = beta + Lmax;
    kk = wl + Lmax;
    kq = kk + Lmax * Lmax;
    u = kq + Lmax * Lmax;
  }
  static constexpr size_t bytes(int Lmax) {
    return size_t(Lmax) * K * 2 * sizeof(bf16) + size_t(Lmax) * (5 + 2 * Lmax + kCols) * sizeof(float);
  }
};

template <int K>
__global__ void __launch_bounds__(kCols) kvbuffer_prefill_kernel(const KVBufferPrefillParams p) {
  extern __shared__ __align__(16) char dyn_smem[];  // PromptSmem<K>::bytes(Lmax)
  const int v0 = blockIdx.x * kCols, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const int Lmax = p.in.tokens, B = p.pool.buffer_size, cap = p.pool.capacity;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = kCols / 32;
  const int col = v0 + threadIdx.x;
  const bool active = col < V;
  const int slot = p.slot[row];
  const bool padding = slot < 0 || slot >= p.pool.num_slots;
  const int L = padding ? 0 : min(max(p.prompt_len[row], 0), min(Lmax, B));
  for (int t = L; t < Lmax; ++t)  // tokens past the prompt (and padding rows): zero outputs
    if (active) store_output1(p.o, p.o_dtype, ((int64_t(row) * Lmax + t) * HV + h) * V + col, 0.f);
  if (L == 0) return;

  PromptSmem<K> ps;
  ps.setup(dyn_smem, Lmax);
  const int64_t tok0 = int64_t(row) * Lmax;
  constexpr int kChunks = K / 8;  // 16-byte chunks per key
  for (int c = threadIdx.x; c < L * kChunks; c += kCols) {
    const int t = c / kChunks, part = c % kChunks;
    const int64_t src = ((tok0 + t) * H + hk) * K + part * 8;
    cp_async16(ps.keys + t * K + part * 8, p.in.k + src, true);
    cp_async16(ps.queries + t * K + part * 8, p.in.q + src, true);
  }
  cp_async_commit();
  for (int t = threadIdx.x; t < L; t += kCols) {
    const Gate gate = prepare_gate(p.in, tok0 + t, h, HV);
    ps.g[t] = gate.g;
    ps.beta[t] = gate.beta;
  }
  cp_async_wait_all();
  __syncthreads();

  // Per-token norms (a warp per token) and decay weights (a thread per token t: w_tj for j <= t, newest first).
  for (int t = warp; t < L; t += warps) {
    WarpVecBf16<K> kt, qt;
    kt.load(ps.keys + t * K, lane);
    qt.load(ps.queries + t * K, lane);
    const float kk2 = warp_sum(kt.norm2()), qq2 = warp_sum(qt.norm2());
    if (lane == 0) {
      ps.rk[t] = rsqrtf(kk2 + kL2NormEps);
      ps.rq[t] = p.in.scale * rsqrtf(qq2 + kL2NormEps);
    }
  }
  for (int t = threadIdx.x; t < L; t += kCols) {
    float sum = 0.f;  // g_{j+1} + ... + g_t
    for (int j = t; j >= 0; --j) {
      const float w = expf(sum);
      ps.kq[t * Lmax + j] = w;
      if (t == L - 1) ps.wl[j] = w;
      sum += ps.g[j];
    }
  }
  __syncthreads();

  // Decayed key-key and key-query products, a warp per pair (t, j <= t).
  for (int pair = warp; pair < L * L; pair += warps) {
    const int t = pair / L, j = pair % L;
    if (j > t) continue;
    WarpVecBf16<K> kj;
    WarpVec<K> kt, qt;
    kj.load(ps.keys + j * K, lane);
    kt.load(ps.keys + t * K, lane);
    qt.load(ps.queries + t * K, lane);
    const float kd = warp_sum(kj.dot(kt)), qd = warp_sum(kj.dot(qt));
    if (lane == 0) {
      const float w = ps.kq[t * Lmax + j];
      ps.kk[t * Lmax + j] = j < t ? w * kd * ps.rk[j] * ps.rk[t] : 0.f;
      ps.kq[t * Lmax + j] = w * qd * ps.rk[j] * ps.rq[t];
    }
  }
  __syncthreads();

  // Forward substitution down this thread's column: u_t, then o_t. The column's u lives in shared memory (u[t][tid]).
  const bool append = L < B;
  float* ucol = ps.u + threadIdx.x;
  if (active) {
    for (int t = 0; t < L; ++t) {
      const int64_t vo = ((tok0 + t) * HV + h) * V + col;
      float acc = __bfloat162float(p.in.v[vo]);
      for (int j = 0; j < t; ++j) acc = fmaf(-ps.kk[t * Lmax + j], ucol[j * kCols], acc);
      const float ut = ps.beta[t] * acc;
      ucol[t * kCols] = ut;
      float o = 0.f;
      for (int j = 0; j <= t; ++j) o = fmaf(ps.kq[t * Lmax + j], ucol[j * kCols], o);
      store_output1(p.o, p.o_dtype, vo, o);
      if (append) p.pool.fp32_deltas()[((int64_t(slot) * cap + t) * HV + h) * V + col] = ut;
    }
  }

  if (append) {  // g_t (one thread per token), raw keys (one block per key head)
    if (blockIdx.x == 0) {
      for (int t = threadIdx.x; t < L; t += kCols) p.pool.log_decay[(int64_t(slot) * cap + t) * HV + h] = ps.g[t];
      if (h % p.shape.group() == 0)
        for (int c = threadIdx.x; c < L * kChunks; c += kCols) {
          const int t = c / kChunks, part = c % kChunks;
          reinterpret_cast<uint4*>(p.pool.keys + ((int64_t(slot) * cap + t) * H + hk) * K)[part] =
              reinterpret_cast<const uint4*>(ps.keys + t * K)[part];
        }
    }
    return;
  }
  // L = B: S = sum_j wl[j] k^_j u_j^T materialised from zero, row by row of K, this thread's column.
  const int cslot = p.state_slot ? p.state_slot[row] : slot;
  if (!active || cslot < 0 || cslot >= p.pool.checkpoint_rows()) return;
  float* s0 = static_cast<float*>(p.pool.checkpoint) + (int64_t(cslot) * HV + h) * K * V;
  for (int i = 0; i < K; ++i) {
    float acc = 0.f;
    for (int j = 0; j < L; ++j)
      acc = fmaf(ps.wl[j] * ps.rk[j] * __bfloat162float(ps.keys[j * K + i]), ucol[j * kCols], acc);
    __stcs(s0 + int64_t(i) * V + col, acc);
  }
}

template <int K>
cudaError_t launch_prompt(const KVBufferPrefillParams& p, cudaStream_t stream) {
  const size_t smem = PromptSmem<K>::bytes(p.in.tokens);
  if (const cudaError_t e = allow_dynamic_smem(kvbuffer_prefill_kernel<K>, smem); e != cudaSuccess) return e;
  const dim3 grid(num_slices(p.shape.head_dim_v, kCols), p.shape.heads_v, p.batch);
  kvbuffer_prefill_kernel<K><<<grid, kCols, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

std::string validate(const KVBufferPrefillParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens > kMaxPrefillTokens)
    return "tokens = " + std::to_string(p.in.tokens) + " is out of range (allowed: 1 to " +
           std::to_string(kMaxPrefillTokens) + " prompt tokens per row)";
  if (auto e = validate_pool(p.pool); !e.empty()) return e;
  if (auto e = validate_fp32_checkpoint(p.pool, "kvbuffer prefill"); !e.empty()) return e;
  if (auto e = validate_fp32_deltas(p.pool, "kvbuffer prefill"); !e.empty()) return e;
  if (!p.slot || !p.prompt_len || !p.o) return "slot, prompt_len and o must be set";
  return "";
}

cudaError_t launch_kvbuffer_prefill(const KVBufferPrefillParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  return by_head_dim_k(p.shape.head_dim_k, [&](auto k) { return launch_prompt<decltype(k)::value>(p, stream); });
}

cudaError_t launch_kvbuffer_advance_prefill(int32_t* fill, const int32_t* slot, const int32_t* prompt_len, int batch,
                                            int buffer_size, cudaStream_t stream) {
  // From an empty buffer this is the accept rule fill = fill + L >= B ? 0 : fill + L with fill = 0.
  return launch_kvbuffer_advance_accepted(fill, slot, prompt_len, batch, buffer_size, stream);
}

}  // namespace kvb
