// KVBuffer speculative verification with the checkpoint slice staged in shared memory (VerifyKernel::staged;
// DESIGN.md section 3, delta form; bf16 checkpoints, head dims 128 x 128).
//
// One block of four warps per (row, value head). At its start the block asks for its key tile (the drafts' raw keys
// and queries, the entries' raw keys) and its whole 32 KiB slice (cp.async; the slice's 16-byte chunks swizzled by
// row so that ldmatrix reads them without bank conflicts), and for every small input at once, so that each resident
// block keeps its slice in flight and waits for one round trip; everything the slice does not feed (the drafts'
// gates, norms and decays, the key products, each entry's and draft's coefficients, the buffer's share of each value
// column) is formed while the slice lands, each step a short chain. Once it has landed:
// - a due row (n >= B) folds its n entries into it, warp w its 32 value columns, as m16n8k16 bf16 products in the
//   transposed orientation S^T[v][k] = e^{G_n} S0^T + sum_j (w_j / |k_j| u_j[v]) k_j[k]: the weighted deltas (fp32,
//   loaded straight into A fragments) split in three bf16 parts, the raw keys exact as B, the slice read and written
//   in place by ldmatrix / stmatrix .trans; the fold is rounded to bf16 where it is stored (shared memory and the
//   pool), and its drafts are computed from it with an empty buffer;
// - every row: P = X S over the warp's columns, X the drafts' raw keys (rows 0 .. m - 1) and raw queries (rows
//   8 .. 8 + m - 1), all exact bf16 operands with fp32 accumulators; the norms scale P afterwards;
// - thread t then owns value column t: the drafts' deltas in order (the triangular dependency) and their outputs,
//   u_i = beta_i (v_i - e^{G_i} P_k[i] / |k_i| - sum_j c^k_ij u_j - sum_{i'<i} d^k_ii' u_i'),
//   o_i = e^{G_i} P_q[i] r_q,i + sum_j c^q_ij u_j + sum_{i'<=i} d^q_ii' u_i',
//   with the buffer's coefficients c (entry j's decay to draft i times the key products) and the drafts' own d.
// Entries written as the other verify kernels write them (kvbuffer_verify_device.cuh): past the entries for a row
// that is not due; over entries 0 .. m - 1 for a due row, whose keys the key group's last block writes. The deltas
// are fp32 or bf16 (pool.delta_dtype: U, widened where they are read, rounded to nearest even where they are stored;
// the drafts' outputs take their own deltas unrounded).
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/gdn_device.cuh"
#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"
#include "kernels/kvbuffer_verify_device.cuh"
#include "kernels/launch_util.h"
#include "kernels/mma_tf32.cuh"
#include "kernels/pdl.cuh"
#include "kernels/stagger.cuh"
#include "kernels/verify_launch.h"

namespace kvb {
namespace {

using namespace dev;

constexpr int kStK = 128, kStV = 128;          ///< the head dims the kernel takes
constexpr int kStThreads = 128, kStWarps = 4;  ///< four warps, 32 value columns each
constexpr int kStMinBlocks = 4;
static_assert(kStThreads == 32 * kStWarps, "32 value columns a warp");
constexpr int kStKeyPitch = 136;               ///< bf16 a row of the key tile: 272 bytes, conflict-free ldmatrix
constexpr int kStXRows = 16;                   ///< drafts' keys at rows 0 .. m - 1, queries at rows 8 .. 8 + m - 1
constexpr int kStQ0 = 8;
constexpr int kStMaxEntries = kStagedVerifyMaxEntries;  ///< buffer entries a row may hold (capacity)
static_assert(kStMaxEntries == 32, "a due row's fold takes its entries in two 16-entry k-steps (held[32])");
constexpr int kStMaxValueHeads = 1 << 16;    ///< value heads a launch may have (GdnShape::key_head exact)
/// Floats a row of P (the products, over the landed slice): 8 (mod 32), so that a warp's 8-byte stores of its
/// accumulators (rows lane / 4, columns 2 (lane % 4)) fill each half-warp phase's 32 banks once.
constexpr int kStPPitch = kStV + 8;

/// The 16-byte chunk c (0 .. 15) of slice row k: stored at chunk c ^ (k % 8) of that row (256 bytes), so that the
/// eight rows of an ldmatrix phase fall in eight distinct bank groups.
__device__ __forceinline__ uint32_t slice_offset(int k, int c) { return uint32_t(k) * 256u + (uint32_t(c ^ (k & 7)) << 4); }

/// The per-block coefficients in shared memory (floats at StLayout::coef).
template <int M>
struct StCoef {
  float *ck, *cq;   ///< [key_rows][M] entry j's decay to draft i times k^_j . k^_i (ck) or k^_j . q^_i (cq)
  float *dk, *dq;   ///< [M][M] draft i' (column) to draft i (row): decay times k^_i' . k^_i (i' < i) / . q^_i (<= i)
  float *ek, *eq;   ///< [M] the checkpoint's decay to draft i times 1 / |k_i| (ek) or r_q,i (eq)
  float *beta, *g;  ///< [M] the drafts' gates
  float *gd;        ///< [M] g_0 + ... + g_i
  float *rkd, *rqd; ///< [M] the drafts' 1 / |k_i| and r_q,i (the query scale included)
  float *suf, *rk, *wf;  ///< [key_rows] sums of the entries' log-decays after j, 1 / |k_j|, fold weights
  float* misc;      ///< [0]: sum of the entries' log-decays; [1]: 1 when this block writes a due row's keys
  /// Floats the arrays above take, in their order below.
  __host__ __device__ static int floats(int key_rows) { return 2 * M * key_rows + 2 * M * M + 7 * M + 3 * key_rows + 16; }
  __device__ StCoef(char* base, int key_rows) {
    float* f = reinterpret_cast<float*>(base);
    ck = f;
    cq = ck + M * key_rows;
    dk = cq + M * key_rows;
    dq = dk + M * M;
    ek = dq + M * M;
    eq = ek + M;
    beta = eq + M;
    g = beta + M;
    gd = g + M;
    rkd = gd + M;
    rqd = rkd + M;
    suf = rqd + M;
    rk = suf + key_rows;
    wf = rk + key_rows;
    misc = wf + key_rows;
  }
};

/// Shared memory of one block (byte offsets), for `cap` entries a slot and M drafts.
template <int M>
struct StLayout {
  int key_rows;    ///< buffer-key rows of the key tile: cap rounded up to 16
  int gram_pitch;  ///< floats a row of the Gram: 8 or 24 (mod 32), conflict-free 8-byte stores as P's
  int keys, gram, coef, bytes;
  __host__ __device__ explicit StLayout(int cap) {
    key_rows = (cap + 15) / 16 * 16;
    gram_pitch = kStXRows + key_rows + 8;
    keys = kStK * kStV * 2;  // after the slice
    gram = keys + (kStXRows + key_rows) * kStKeyPitch * 2;
    coef = gram + kStXRows * gram_pitch * 4;
    bytes = coef + StCoef<M>::floats(key_rows) * 4;
  }
};

/// The stored delta of element type U (pool.delta_dtype: float or bf16), widened exactly to fp32.
__device__ __forceinline__ float widen_delta(float u) { return u; }
__device__ __forceinline__ float widen_delta(bf16 u) { return __bfloat162float(u); }
/// u in element type U: itself (float) or rounded to nearest even (bf16), as the pool stores it.
template <class U>
__device__ __forceinline__ U narrow_delta(float u) {
  if constexpr (std::is_same_v<U, bf16>)
    return __float2bfloat16_rn(u);
  else
    return u;
}

/// U: the deltas' element type (float or bf16, pool.delta_dtype).
template <int M, class U>
__global__ void __launch_bounds__(kStThreads, kStMinBlocks)
    kvbuffer_verify_staged_kernel(const KVBufferVerifyParams p, const FirstWaveStagger stagger) {
  constexpr int K = kStK, V = kStV;
  extern __shared__ __align__(128) char smem[];
  const KVBufferPool& pool = p.pool;
  const int cap = pool.capacity;
  const StLayout<M> lay(cap);
  const int KR = lay.key_rows, GP = lay.gram_pitch;  // key rows, Gram pitch
  // Nothing is requested before the PDL wait: the row order, the keys and the fill come from the kernels before.
  pdl_wait();
  pdl_launch_dependents();
  stagger_first_wave(stagger);
  // The row: from row_order or in batch order.
  const OrderedRow ordered = p.row_order ? p.row_order[blockIdx.y] : OrderedRow{int(blockIdx.y), p.slot[blockIdx.y]};
  const int h = blockIdx.x, row = ordered.row, slot = ordered.slot;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, hk = p.shape.key_head(h);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (slot < 0 || slot >= pool.num_slots) {  // padding: nothing read, outputs zeroed
    for (int i = 0; i < M; ++i) zero_output_slice(p.o, p.o_dtype, ((int64_t(row) * M + i) * HV + h) * V, 0, V, V);
    return;
  }

  // Committed entries; n >= B: due, folded into the checkpoint here (KVBufferVerifyParams). The row order carries
  // the fill, so that nothing waits for its load.
  const int n = min(max(p.row_order ? ordered.fill : pool.fill[slot], 0), cap);
  const bool flush = n >= pool.buffer_size;

  // Two groups of copies: the key tile (the drafts' raw keys and queries, then the n entries' raw keys; zero rows
  // elsewhere), then, after the small loads below, the whole slice, which lands while the drafts' coefficients are
  // formed.
  const int64_t e0 = int64_t(slot) * cap;
  bf16* const keys = reinterpret_cast<bf16*>(smem + lay.keys);
  const uint32_t keys_s = static_cast<uint32_t>(__cvta_generic_to_shared(keys));
  constexpr int kKeyChunks = K / 8;  // 16-byte pieces of a key row
  // The A fragment of k-step ks over the drafts' rows 0 .. 15 (ldmatrix_x4: rows 0-7 / 8-15, columns 0-7 / 8-15).
  const auto drafts_fragment = [&](int ks) {
    return keys_s + ((lane % 8 + 8 * ((lane / 8) % 2)) * kStKeyPitch + 16 * ks + 8 * (lane / 16)) * 2;
  };
  {
    // Thread tid copies chunk c = tid % 16 of tile rows k0 + 8 r, k0 = tid / 16: row k0 the drafts' raw key k0, row
    // 8 + k0 their raw query k0 (zero rows from m on), rows 16 + j entry j's raw key (zero rows from n on).
    const int k0 = tid / kKeyChunks, c = tid % kKeyChunks;
    bf16* const dst = keys + k0 * kStKeyPitch + c * 8;
    const int64_t draft = (int64_t(row) * M + min(k0, M - 1)) * H + hk;
    cp_async16(dst, p.in.k + draft * K + c * 8, k0 < M);
    cp_async16(dst + kStQ0 * kStKeyPitch, p.in.q + draft * K + c * 8, k0 < M);
    const bf16* const entry = pool.keys + ((e0 + k0) * H + hk) * K + c * 8;
    const int64_t entry_stride = int64_t(8) * H * K;  // eight entries on
#pragma unroll
    for (int r = 0; r < kStMaxEntries / 8; ++r) {
      if (8 * r >= KR) break;
      const int j = k0 + 8 * r;
      cp_async16(dst + (kStXRows + 8 * r) * kStKeyPitch, j < n ? entry + r * entry_stride : entry, j < n);
    }
  }
  cp_async_commit();

  const int64_t draft_entry = e0 + (flush ? 0 : n);  // the drafts' first buffer entry
  const int64_t delta_stride = int64_t(HV) * V;  // one token (entry) to the next, in value-head rows
  const int64_t token_offset = (int64_t(row) * M * HV + h) * V + tid;  // draft 0's column tid, in v and o
  const U* const deltas = static_cast<const U*>(pool.deltas) + e0 * delta_stride + int64_t(h) * V;

  // Before the slice: what the first barrier waits for (gate inputs, warp 3, lane i: draft i; the entries'
  // log-decays, warp 2, lane j: entry j) and a row's buffered deltas (its share, or a due row's fold fragments, which
  // the fold takes as soon as the slice lands); after it, the drafts' values of column tid.
  GateInputs gate_in;
  if (warp == 3 && lane < M) gate_in = load_gate_inputs(p.in, int64_t(row) * M + lane, h, HV);
  const float lg_j = warp == 2 && lane < n ? pool.log_decay[(e0 + lane) * HV + h] : 0.f;
  // A row that is not due: the entries' deltas of column tid (the buffer's share). A due row: its fold's A
  // fragments, the weighted deltas of rows v = 32 warp + 16 mt + lane / 4 (+ 8), entries 16 ks + 2 (lane % 4) (+ 1,
  // + 8, + 9), loaded now, weighted once the weights are known. Held as stored (U) and widened where they are used,
  // so that no widening waits for its load here, where each would hold back the loads after it.
  U held[2 * 2 * 8];  // not due: held[j], j < 32; due: [mt][ks][8]
  if (!flush) {
#pragma unroll
    for (int j = 0; j < kStMaxEntries; ++j) {
      if (j >= n) break;
      held[j] = deltas[j * delta_stride + tid];
    }
  } else {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int ks = 0; ks < 2; ++ks)
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int v = 32 * warp + 16 * mt + g + 8 * ((e / 2) % 2);
          const int j = 16 * ks + 2 * t + (e % 2) + 8 * (e / 4);
          held[(mt * 2 + ks) * 8 + e] = j < n ? deltas[j * delta_stride + v] : narrow_delta<U>(0.f);
        }
  }
  const bf16* const s0 = static_cast<const bf16*>(pool.checkpoint) + (int64_t(slot) * HV + h) * K * V;
  const uint32_t slice_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  {
    // Thread tid copies chunk c = tid % 16 of slice rows k0 + 8 r, k0 = tid / 16: all in one swizzled column
    // (k0 + 8 r = k0 mod 8), 2 KiB apart in shared memory and 8 rows apart in the pool.
    const int k0 = tid / 16, c = tid % 16;
    char* const dst = smem + slice_offset(k0, c);
    const bf16* const src = s0 + k0 * V + c * 8;
#pragma unroll
    for (int r = 0; r < K / 8; ++r) cp_async16(dst + r * 8 * 256, src + r * 8 * V, true);
  }
  cp_async_commit();
  bf16 vals[M];  // widened where the deltas use them, so that no thread waits for them before the first barrier
#pragma unroll
  for (int i = 0; i < M; ++i) vals[i] = p.in.v[token_offset + i * delta_stride];
  float* const gram = reinterpret_cast<float*>(smem + lay.gram);
  const StCoef<M> cf(smem + lay.coef, KR);
  // What needs no key: the drafts' gates and their running sums (warp 3), the sums of the entries' log-decays after
  // each entry (warp 2, lane j: entry j).
  if (warp == 3) {
    const Gate gate = form_gate(p.in, gate_in);  // lanes >= M: unused
    float gi = lane < M ? gate.g : 0.f;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const float y = __shfl_up_sync(0xffffffffu, gi, off);
      if (lane >= off) gi += y;
    }
    if (lane < M) {
      cf.g[lane] = gate.g;
      cf.beta[lane] = gate.beta;
      cf.gd[lane] = gi;
      if (!flush) pool.log_decay[(draft_entry + lane) * HV + h] = gate.g;  // past the entries: no block reads there
    }
  } else if (warp == 2) {
    float incl = lg_j;  // g_j + ... + g_{n-1}
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const float y = __shfl_down_sync(0xffffffffu, incl, off);
      if (lane + off < 32) incl += y;
    }
    if (lane < n) cf.suf[lane] = incl - lg_j;
    if (lane == 0) cf.misc[0] = incl;
  }
  cp_async_wait_group<1>();  // this thread's key copies have landed
  __syncthreads();  // keys, gates, decay sums in shared memory

  if (warp != 2) {
    // Key products, exact bf16 operands, one 16-column block a warp: warp 0 the drafts' rows against themselves
    // (columns 0 .. 15), warps 1 and 3 against entries 0 .. 15 and 16 .. 31 (columns 16 + j, j < n; a row that is
    // not due).
    const int c0 = warp == 3 ? 16 : 0, r0 = warp == 0 ? 0 : kStXRows + c0;
    if (warp == 0 || (!flush && c0 < n)) {
      float d[2][4] = {};
#pragma unroll
      for (int ks = 0; ks < K / 16; ++ks) {
        uint32_t a[4], b[4];
        ldmatrix_x4(drafts_fragment(ks), a);
        ldmatrix_x4(keys_s + ((r0 + lane % 8 + 8 * (lane / 16)) * kStKeyPitch + 16 * ks + 8 * ((lane / 8) % 2)) * 2,
                    b);
        mma_bf16(d[0], a, b[0], b[1]);
        mma_bf16(d[1], a, b[2], b[3]);
      }
      const int gr = lane / 4, gc = r0 + 2 * (lane % 4);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        *reinterpret_cast<float2*>(gram + gr * GP + gc + 8 * nt) = make_float2(d[nt][0], d[nt][1]);
        *reinterpret_cast<float2*>(gram + (gr + 8) * GP + gc + 8 * nt) = make_float2(d[nt][2], d[nt][3]);
      }
    }
    if (warp == 0) {  // the drafts' norms from the diagonal
      __syncwarp();
      if (lane < M) {
        cf.rkd[lane] = rsqrtf(gram[lane * GP + lane] + kL2NormEps);
        cf.rqd[lane] = p.in.scale * rsqrtf(gram[(kStQ0 + lane) * GP + kStQ0 + lane] + kL2NormEps);
      }
    }
    // A due row has read the pool's keys for the last time: it counts its arrival in its key group (warp 3, idle in a
    // due row, so that no product waits for the atomic); the last block writes the drafts' keys over entries
    // 0 .. m - 1 at the end, where the flag is read.
    if (warp == 3 && flush && lane == 0)
      cf.misc[1] = last_in_key_group(p, row, hk, atomicAdd(key_group_arrivals(p, row, hk), 1), 1) ? 1.f : 0.f;
  } else if (lane < n) {
    // Entry j's 1 / |k_j|, lane j over its key (no chain of reductions), in four partial sums.
    const uint4* key = reinterpret_cast<const uint4*>(keys + (kStXRows + lane) * kStKeyPitch);
    float sum[4] = {};
#pragma unroll
    for (int c = 0; c < kKeyChunks; ++c) {
      const uint4 w = key[c];
      const float4 x = widen_bf16x4(make_uint2(w.x, w.y)), y = widen_bf16x4(make_uint2(w.z, w.w));
      sum[0] = fmaf(y.x, y.x, fmaf(x.x, x.x, sum[0]));
      sum[1] = fmaf(y.y, y.y, fmaf(x.y, x.y, sum[1]));
      sum[2] = fmaf(y.z, y.z, fmaf(x.z, x.z, sum[2]));
      sum[3] = fmaf(y.w, y.w, fmaf(x.w, x.w, sum[3]));
    }
    cf.rk[lane] = rsqrtf((sum[0] + sum[1]) + (sum[2] + sum[3]) + kL2NormEps);
  }
  __syncthreads();  // key products, norms

  // Coefficients, one a thread: the drafts' pairs (decay e^{G_i - G_i'}), the checkpoint's share of each draft,
  // each entry's share of each draft (a row that is not due) or each entry's fold weight (a due row).
  {
    const float total = flush ? 0.f : cf.misc[0];  // a due row's drafts start from the folded checkpoint
    const int entry_items = flush ? KR : n * M;
    for (int x = tid; x < 2 * M * M + 2 * M + entry_items; x += kStThreads) {
      if (x < 2 * M * M) {
        const bool q = x >= M * M;
        const int i = (x % (M * M)) / M, ip = x % M;
        float c = 0.f;
        if (q ? ip <= i : ip < i)
          c = expf(cf.gd[i] - cf.gd[ip]) * cf.rkd[ip] * (q ? cf.rqd[i] : cf.rkd[i]) *
              gram[(q ? kStQ0 + i : i) * GP + ip];
        (q ? cf.dq : cf.dk)[i * M + ip] = c;
      } else if (x < 2 * M * M + 2 * M) {
        const bool q = x >= 2 * M * M + M;
        const int i = (x - 2 * M * M) % M;
        (q ? cf.eq : cf.ek)[i] = expf(total + cf.gd[i]) * (q ? cf.rqd[i] : cf.rkd[i]);
      } else if (!flush) {
        const int y = x - 2 * M * M - 2 * M, j = y / M, i = y % M;
        const float w = expf(cf.suf[j] + cf.gd[i]) * cf.rk[j];
        cf.ck[j * M + i] = w * cf.rkd[i] * gram[i * GP + kStXRows + j];
        cf.cq[j * M + i] = w * cf.rqd[i] * gram[(kStQ0 + i) * GP + kStXRows + j];
      } else {
        const int j = x - 2 * M * M - 2 * M;
        cf.wf[j] = j < n ? expf(cf.suf[j]) * cf.rk[j] : 0.f;  // a due row's fold weight w_j / |k_j|
      }
    }
  }
  __syncthreads();  // coefficients

  // The buffer's share of column tid (a row that is not due), while the slice lands.
  float share_k[M] = {}, share_q[M] = {};
  if (!flush)
#pragma unroll
    for (int j = 0; j < kStMaxEntries; ++j) {
      if (j >= n) break;
      float ck[M], cq[M];  // entry j's coefficients, as 16-byte words where M allows (the rows are 16-byte aligned)
      if constexpr (M % 4 == 0) {
#pragma unroll
        for (int i = 0; i < M; i += 4) {
          *reinterpret_cast<float4*>(ck + i) = *reinterpret_cast<const float4*>(cf.ck + j * M + i);
          *reinterpret_cast<float4*>(cq + i) = *reinterpret_cast<const float4*>(cf.cq + j * M + i);
        }
      } else {
#pragma unroll
        for (int i = 0; i < M; ++i) ck[i] = cf.ck[j * M + i], cq[i] = cf.cq[j * M + i];
      }
      const float u = widen_delta(held[j]);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        share_k[i] = fmaf(ck[i], u, share_k[i]);
        share_q[i] = fmaf(cq[i], u, share_q[i]);
      }
    }
  cp_async_wait_all();
  __syncthreads();  // the slice has landed

  const int vb = 32 * warp;  // this warp's first value column
  if (flush) {
    // The fold over this warp's columns, in place: D^T[v][k] = decay0 S0^T + W^T K over 16-entry k-steps.
    const float decay0 = expf(cf.misc[0]);
    const int t = lane % 4;
    const int ksteps = (n + 15) / 16;
    uint32_t a[2][2][3][4];  // [mt][ks][hi, mid, lo]
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        float x[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) x[e] = widen_delta(held[(mt * 2 + ks) * 8 + e]);
        const int j0 = 16 * ks + 2 * t;
        const float w0 = cf.wf[min(j0, KR - 1)], w1 = cf.wf[min(j0 + 1, KR - 1)];
        const float w8 = cf.wf[min(j0 + 8, KR - 1)], w9 = cf.wf[min(j0 + 9, KR - 1)];
        const Bf16x3Word p0 = split_bf16x3(x[0] * w0, x[1] * w1), p1 = split_bf16x3(x[2] * w0, x[3] * w1);
        const Bf16x3Word p2 = split_bf16x3(x[4] * w8, x[5] * w9), p3 = split_bf16x3(x[6] * w8, x[7] * w9);
        a[mt][ks][0][0] = p0.hi, a[mt][ks][0][1] = p1.hi, a[mt][ks][0][2] = p2.hi, a[mt][ks][0][3] = p3.hi;
        a[mt][ks][1][0] = p0.mid, a[mt][ks][1][1] = p1.mid, a[mt][ks][1][2] = p2.mid, a[mt][ks][1][3] = p3.mid;
        a[mt][ks][2][0] = p0.lo, a[mt][ks][2][1] = p1.lo, a[mt][ks][2][2] = p2.lo, a[mt][ks][2][3] = p3.lo;
      }
    uint32_t fold_row[2];  // lane's ldmatrix row at ntp = 0; row 16 ntp + r, its swizzle fixed by lane % 8
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
      fold_row[mt] = slice_s + slice_offset(8 * (lane / 16) + lane % 8, (vb + 16 * mt) / 8 + (lane / 8) % 2);
#pragma unroll 1
    for (int ntp = 0; ntp < K / 16; ++ntp) {  // k rows 16 ntp .. + 15: two n-tiles of the transposed product
      uint32_t c[2][4], addr[2];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        addr[mt] = fold_row[mt] + ntp * 16 * 256;
        ldmatrix_x4_trans(addr[mt], c[mt]);
      }
      float d[2][2][4];  // [mt][n-tile]
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const float4 s = widen_bf16x4(make_uint2(c[mt][2 * nt], c[mt][2 * nt + 1]));  // rows v and v + 8
          d[mt][nt][0] = decay0 * s.x;
          d[mt][nt][1] = decay0 * s.y;
          d[mt][nt][2] = decay0 * s.z;
          d[mt][nt][3] = decay0 * s.w;
        }
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        if (ks >= ksteps) break;
        uint32_t b[4];  // keys of entries 16 ks .. + 15, k rows 16 ntp .. + 15
        ldmatrix_x4_trans(keys_s + ((kStXRows + 16 * ks + lane % 8 + 8 * ((lane / 8) % 2)) * kStKeyPitch +
                                    16 * ntp + 8 * (lane / 16)) * 2,
                          b);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int part = 0; part < 3; ++part) mma_bf16(d[mt][nt], a[mt][ks][part], b[2 * nt], b[2 * nt + 1]);
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const uint32_t r[4] = {pack_bf16x2(d[mt][0][0], d[mt][0][1]), pack_bf16x2(d[mt][0][2], d[mt][0][3]),
                               pack_bf16x2(d[mt][1][0], d[mt][1][1]), pack_bf16x2(d[mt][1][2], d[mt][1][3])};
        stmatrix_x4_trans(addr[mt], r);
      }
    }
    __syncwarp();
    // The folded columns to the pool: 128 rows x 64 bytes, 16 bytes a lane a step, evict-first.
    bf16* const s0w = static_cast<bf16*>(pool.checkpoint) + (int64_t(slot) * HV + h) * K * V + vb;
    {
      // Lane: chunk c = lane % 4 of rows k0 + 8 s, k0 = lane / 4 (one swizzled column, 2 KiB apart).
      const int k0 = lane / 4, c = lane % 4;
      const char* const src = smem + slice_offset(k0, vb / 8 + c);
      bf16* const dst = s0w + k0 * V + 8 * c;
#pragma unroll
      for (int s = 0; s < K / 8; ++s)
        __stcs(reinterpret_cast<uint4*>(dst + s * 8 * V), *reinterpret_cast<const uint4*>(src + s * 8 * 256));
    }
  }

  // P = X S over this warp's columns: 16 rows (drafts' keys, queries) x 32 columns, 8 k-steps. Lane's ldmatrix row
  // in k-step ks: 16 ks + r0, r0 = lane % 8 + 8 ((lane / 8) % 2), its swizzle fixed by lane % 8 (16 rows = 4 KiB).
  uint32_t product_row[2];
#pragma unroll
  for (int np = 0; np < 2; ++np)
    product_row[np] = slice_s + slice_offset(lane % 8 + 8 * ((lane / 8) % 2), vb / 8 + 2 * np + lane / 16);
  float acc[4][4] = {};
#pragma unroll
  for (int ks = 0; ks < K / 16; ++ks) {
    uint32_t a[4];
    ldmatrix_x4(drafts_fragment(ks), a);
#pragma unroll
    for (int np = 0; np < 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4_trans(product_row[np] + ks * 16 * 256, b);
      mma_bf16(acc[2 * np], a, b[0], b[1]);
      mma_bf16(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
  __syncthreads();  // every warp is done with the slice: P takes its place
  float* const P = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int r = lane / 4, c = vb + 8 * nt + 2 * (lane % 4);
    *reinterpret_cast<float2*>(P + r * kStPPitch + c) = make_float2(acc[nt][0], acc[nt][1]);
    *reinterpret_cast<float2*>(P + (r + 8) * kStPPitch + c) = make_float2(acc[nt][2], acc[nt][3]);
  }
  __syncthreads();

  // Column tid: the drafts' deltas in order, then their outputs.
  float u[M];
#pragma unroll
  for (int i = 0; i < M; ++i) {
    float x = __bfloat162float(vals[i]) - cf.ek[i] * P[i * kStPPitch + tid] - share_k[i];
#pragma unroll
    for (int ip = 0; ip < i; ++ip) x = fmaf(-cf.dk[i * M + ip], u[ip], x);
    u[i] = cf.beta[i] * x;
  }
  U* const draft_deltas_out = static_cast<U*>(pool.deltas) + draft_entry * delta_stride + int64_t(h) * V + tid;
  float o[M];
#pragma unroll
  for (int i = 0; i < M; ++i) {
    o[i] = fmaf(cf.eq[i], P[(kStQ0 + i) * kStPPitch + tid], share_q[i]);
#pragma unroll
    for (int ip = 0; ip <= i; ++ip) o[i] = fmaf(cf.dq[i * M + ip], u[ip], o[i]);
    // Past the entries (nothing reads there), or over a due row's entries 0 .. m - 1, which only this thread read;
    // the outputs above take u unrounded, the pool stores it as U.
    draft_deltas_out[i * delta_stride] = narrow_delta<U>(u[i]);
  }
  if (p.o_dtype == OutputDtype::fp32) {
    float* const out = static_cast<float*>(p.o) + token_offset;
#pragma unroll
    for (int i = 0; i < M; ++i) out[i * delta_stride] = o[i];
  } else {
    bf16* const out = static_cast<bf16*>(p.o) + token_offset;
#pragma unroll
    for (int i = 0; i < M; ++i) out[i * delta_stride] = __float2bfloat16_rn(o[i]);
  }
  if (!flush) {
    if (h == 0 || p.shape.key_head(h - 1) != hk)  // the key group's first head
      write_draft_keys(p, row, draft_entry, M, hk, tid, kStThreads);
  } else {
    // This head's log-decays over entries 0 .. m - 1 (read by this block only, into shared memory, before the first
    // barrier); the drafts' keys by the key group's last block to have read its entries.
    if (tid < M) pool.log_decay[(draft_entry + tid) * HV + h] = cf.g[tid];
    if (cf.misc[1] != 0.f) {
      __threadfence();
      write_draft_keys(p, row, draft_entry, M, hk, tid, kStThreads);
    }
  }
}

template <int M>
cudaError_t launch_staged(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  const auto kernel = p.pool.delta_dtype == StateDtype::bf16 ? kvbuffer_verify_staged_kernel<M, bf16>
                                                              : kvbuffer_verify_staged_kernel<M, float>;
  const size_t smem = StLayout<M>(p.pool.capacity).bytes;
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  if (describe) {
    describe->kernel = VerifyKernel::staged;
    describe->smem_bytes = smem;
    describe->predicted_blocks_per_sm = smem_blocks_per_sm(smem);
    describe->blocks_per_row = p.shape.heads_v;
    return resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), kStThreads, smem,
                                  describe->resident_blocks_per_sm);
  }
  const dim3 grid(p.shape.heads_v, p.batch);
  FirstWaveStagger stagger;
  if (const cudaError_t e = first_wave_stagger(kernel, grid, kStThreads, smem, kFirstWaveStaggerNs, stagger);
      e != cudaSuccess)
    return e;
  return launch_kernel(kernel, grid, dim3(kStThreads), smem, stream, p.pdl, p, stagger);
}

}  // namespace

std::string validate_staged_verify(const KVBufferVerifyParams& p) {
  if (p.pool.state_dtype != StateDtype::bf16)
    return std::string("state_dtype = ") + to_string(p.pool.state_dtype) +
           ": kernel = staged takes bf16 checkpoints (allowed with fp32: kernel = automatic, cuda_cores or "
           "tensor_cores)";
  if (p.shape.head_dim_k != kStK || p.shape.head_dim_v != kStV)
    return "kernel = staged takes head_dim_k = head_dim_v = " + std::to_string(kStK) + " (got " +
           std::to_string(p.shape.head_dim_k) + " x " + std::to_string(p.shape.head_dim_v) + ")";
  if (p.shape.heads_v > kStMaxValueHeads)  // GdnShape::key_head is exact below 2^22
    return "heads_v = " + std::to_string(p.shape.heads_v) + ": kernel = staged takes at most " +
           std::to_string(kStMaxValueHeads) + " value heads";
  if (p.pool.capacity > kStMaxEntries)
    return "pool.capacity = " + std::to_string(p.pool.capacity) + ": kernel = staged holds at most " +
           std::to_string(kStMaxEntries) + " entries a slot (buffer_size - 1 + draft_tokens <= " +
           std::to_string(kStMaxEntries) + ")";
  if (!p.tile.is_auto())
    return "tile = " + to_string(p.tile) + ": kernel = staged has one block shape (allowed: tile = auto)";
  return "";
}

cudaError_t launch_staged_verify(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  return with_draft_tokens(p.in.tokens,
                           [&](auto m) { return launch_staged<decltype(m)::value>(p, stream, describe); });
}

}  // namespace kvb
