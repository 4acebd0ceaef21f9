// Device building blocks of the KVBuffer verify kernels: the buffer's products with the drafts and the drafts'
// products with each other on CUDA cores (kernels/kvbuffer_verify.cu; the tensor-core kernel forms them as matrix
// products of its own), and, shared by both kernels, the drafts' triangular dependency and the writes of the drafts'
// entries, whose keys a due row's key group shares.
#pragma once

#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"

namespace kvb::dev {

/// The buffer's per-entry products with the drafts, for entries j < n (raw keys k_j from bs): 1 / |k_j| into
/// bs.rk[j], and dk[i * cap + j] = k_j . k^_i, dq[i * cap + j] = k_j . q^_i ([M][cap], no decay, no 1 / |k_j|).
/// Warp w takes entries w, w + WARPS, ...; keys read from the pool are requested four at a time (one round trip to
/// L2 per four entries, not per entry) and the drafts' k^ and q^ held in registers where they take at most 32 of
/// them; keys in shared memory are read one at a time and the drafts with them (fewer registers held). The 2M
/// products of an entry are summed over the warp at once (warp_sum_scatter).
/// Writes shared memory only: the caller synchronises before reading.
template <int K, int M, int WARPS, bool kSmemKeys, class Drafts>
__device__ __forceinline__ void buffer_draft_products(int n, Drafts& ds, const BufferSmem<K>& bs, float* dk, float* dq,
                                                      int cap) {
  constexpr int N = WarpVec<K>::N, P = pow2_at_least(2 * M), BATCH = kSmemKeys ? 1 : 4;
  constexpr int GROUP = 32 / P;  // lanes that end with the same total
  constexpr bool kHold = !kSmemKeys && 2 * M * N <= 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp >= n) return;
  WarpVec<K> kd[kHold ? M : 1], qd[kHold ? M : 1];
  const auto draft = [&](int i, WarpVec<K>& k, WarpVec<K>& q) {
#pragma unroll
    for (int e = 0; e < N; ++e) {
      k.x[e] = ds.k_at(i, lane * N + e);
      q.x[e] = ds.q_at(i, lane * N + e);
    }
  };
  if constexpr (kHold)
#pragma unroll
    for (int i = 0; i < M; ++i) draft(i, kd[i], qd[i]);
  const int total = lane / GROUP;  // which of the 2M sums this lane ends with: k^_i (i < M) or q^_{i - M}
  const bool writes = lane % GROUP == 0 && total < 2 * M;
  for (int j0 = warp; j0 < n; j0 += BATCH * WARPS) {
    WarpVecBf16<K> kj[BATCH];
#pragma unroll
    for (int t = 0; t < BATCH; ++t)
      if (j0 + t * WARPS < n) kj[t].load(bs.key(j0 + t * WARPS), lane);
#pragma unroll
    for (int t = 0; t < BATCH; ++t) {
      const int j = j0 + t * WARPS;
      if (j >= n) break;
      float v[P];
#pragma unroll
      for (int i = 0; i < M; ++i) {
        if constexpr (kHold) {
          v[i] = kj[t].dot(kd[i]);
          v[M + i] = kj[t].dot(qd[i]);
        } else {
          WarpVec<K> ki, qi;
          draft(i, ki, qi);
          v[i] = kj[t].dot(ki);
          v[M + i] = kj[t].dot(qi);
        }
      }
#pragma unroll
      for (int i = 2 * M; i < P; ++i) v[i] = 0.f;
      const float rk = kj[t].inverse_norm();
      const float x = warp_sum_scatter<P>(v);
      if (writes) (total < M ? dk + total * cap : dq + (total - M) * cap)[j] = x;
      if (lane == 0) bs.rk[j] = rk;
    }
  }
}

/// The drafts' products with each other, with their decays (sums of at most M log-decays): for ip <= i,
/// kk[ip][i] = w (k^_ip . k^_i) for ip < i (0 on the diagonal) and kq[ip][i] = w (k^_ip . q^_i), w = e^{g_{ip+1} + ...
/// + g_i} (ds.g: the drafts' log-decays). Pair (ip, i), numbered row by row, goes to warp pair % WARPS; its two sums
/// at once (lanes 0-15 end with k^_ip . k^_i, lanes 16-31 with k^_ip . q^_i). ds: the drafts' k_at, q_at, g, kk, kq.
/// Writes shared memory only: the caller synchronises before reading.
template <int K, int M, int WARPS, class Drafts>
__device__ __forceinline__ void draft_pair_coefficients(Drafts& ds) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int pair = warp; pair < M * (M + 1) / 2; pair += WARPS) {
    int ip = 0, i = pair;  // earlier draft ip, later draft i
    while (i >= M - ip) i -= M - ip++;
    i += ip;
    float v[2] = {0.f, 0.f};
#pragma unroll
    for (int e = 0; e < WarpVec<K>::N; ++e) {
      const int c = lane * WarpVec<K>::N + e;
      v[0] = fmaf(ds.k_at(ip, c), ds.k_at(i, c), v[0]);
      v[1] = fmaf(ds.k_at(ip, c), ds.q_at(i, c), v[1]);
    }
    const float x = warp_sum_scatter<2>(v);
    if (lane % 16 == 0) {
      float gsum = 0.f;
      for (int l = ip + 1; l <= i; ++l) gsum += ds.g[l];
      const float w = expf(gsum);
      if (lane == 0) ds.kk[ip][i] = ip < i ? w * x : 0.f;
      else ds.kq[ip][i] = w * x;
    }
  }
}

/// The drafts' corrected deltas of one value column, the triangular dependency among them (DESIGN.md section 3):
/// u_i = beta_i (v(i) - a(i) - sum_{i'<i} kk[i'][i] u_i'), with a(i) the checkpoint's and the buffer's share of
/// draft i's S^T k^ in that column and v(i) its value there.
template <int M, class KK, class Share, class Value>
__device__ __forceinline__ void draft_deltas(const KK& kk, const float* beta, Share a, Value v, float (&u)[M]) {
#pragma unroll
  for (int i = 0; i < M; ++i) {
    float corr = 0.f;
#pragma unroll
    for (int ip = 0; ip < i; ++ip) corr = fmaf(kk[ip][i], u[ip], corr);
    u[i] = beta[i] * (v(i) - a(i) - corr);
  }
}

/// The m drafts' raw keys of key head hk (verify's input k, [N, m, H, K]) into buffer entries e0 .. e0 + m - 1, by
/// threads t = 0 .. nthreads - 1 of the caller's.
__device__ __forceinline__ void write_draft_keys(const KVBufferVerifyParams& p, int row, int64_t e0, int m, int hk,
                                                 int t, int nthreads) {
  const int H = p.shape.heads_qk, K = p.shape.head_dim_k;
  const int chunks = K / 8;  // 16-byte pieces of one key
  for (int idx = t; idx < m * chunks; idx += nthreads) {
    const int i = idx / chunks, part = idx % chunks;
    reinterpret_cast<uint4*>(p.pool.keys + ((e0 + i) * H + hk) * K)[part] =
        reinterpret_cast<const uint4*>(p.in.k + ((int64_t(row) * m + i) * H + hk) * K)[part];
  }
}

/// The m drafts' raw keys of key head hk and their log-decays (every value head of the key group) into buffer
/// entries e0 .. e0 + m - 1, by threads t = 0 .. nthreads - 1 of the caller's.
__device__ __forceinline__ void write_draft_entries(const KVBufferVerifyParams& p, int row, int64_t e0, int m, int hk,
                                                    int t, int nthreads) {
  write_draft_keys(p, row, e0, m, hk, t, nthreads);
  const int HV = p.shape.heads_v, group = p.shape.group();
  for (int idx = t; idx < m * group; idx += nthreads) {
    const int i = idx / group, h = hk * group + idx % group;
    p.pool.log_decay[(e0 + i) * HV + h] = prepare_gate(p.in, int64_t(row) * m + i, h, HV).g;
  }
}

/// The arrival counter of a due row's key group (the blocks of row `row` whose value heads share key head hk).
__device__ __forceinline__ int* key_group_arrivals(const KVBufferVerifyParams& p, int row, int hk) {
  return p.group_arrivals + int64_t(row) * p.shape.heads_qk + hk;
}
/// Whether this block is the last of its key group to arrive: `arrival` is what its atomicAdd on
/// key_group_arrivals returned, and the group holds group() value heads of `blocks_per_head` blocks each. The last
/// sets the count back to 0, ready for the next launch.
__device__ __forceinline__ bool last_in_key_group(const KVBufferVerifyParams& p, int row, int hk, int arrival,
                                                  int blocks_per_head) {
  const bool last = arrival == p.shape.group() * blocks_per_head - 1;
  if (last) *key_group_arrivals(p, row, hk) = 0;
  return last;
}

}  // namespace kvb::dev
