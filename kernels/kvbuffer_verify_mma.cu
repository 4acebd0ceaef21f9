// KVBuffer speculative verification on tensor cores (VerifyKernel::tensor_cores; DESIGN.md section 3, delta form).
// The same algebra as kernels/kvbuffer_verify.cu, with w_ij = e^{G_i - G_j}:
//   a_i = e^{G_i} S0^T k^_i + sum_{j<n} w_ij (k^_j . k^_i) u_j        the checkpoint's and the buffer's share
//   o_i = e^{G_i} S0^T q^_i + sum_{j<n} w_ij (k^_j . q^_i) u_j        (one matrix product over [S0; u_0..u_{n-1}])
//   u_i = beta_i (v_i - a_i - sum_{i'<i} w_ii' (k^_i' . k^_i) u_i')    the small triangular dependency
//   o_i += sum_{i'<=i} w_ii' (k^_i' . q^_i) u_i'
// and, for a due row (n >= B), the flush S0 <- e^{G_n} S0 + sum_{j<n} w_j k^_j u_j^T.
//
// A persistent kernel, one block per SM, each taking the items (row, value head) blockIdx.x, + gridDim.x, ...:
// - a producer warp streams every item's checkpoint slice (64 KB), buffered entries, draft tokens and gate inputs
//   into one of two shared-memory stages with the copy engine (bulk copies completing on the stage's `full`
//   mbarrier), one item ahead of the consumers, so that the bytes of the next item are in flight while this one is
//   computed;
// - 16 consumer warps compute the item from the stage and release it (`empty`). Warp w holds the 16 value columns
//   16 (w % 8) .. + 15 (the M dimension of an m16n8k8 TF32 tensor-core product) of the rows of half w / 8 of the
//   checkpoint (its K dimension); the drafts' keys and queries are N (8 columns: k^ in 0-3, q^ in 4-7, up to 4
//   drafts; 16 above). A lane reads the two values of its column pair at rows 2t and 2t + 1 of each 8-row step, and
//   those same four values are its elements of the flush's output tile (columns x 8 rows), so the flush accumulates
//   onto the checkpoint values as read and writes them out from registers.
// Every product whose result reaches a buffer entry or the checkpoint is split 3xTF32 (kernels/mma_tf32.cuh).
#include <algorithm>
#include <string>

#include "kernels/bulk_copy.cuh"
#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"
#include "kernels/kvbuffer_verify_device.cuh"
#include "kernels/launch_util.h"
#include "kernels/mma_tf32.cuh"
#include "kernels/pdl.cuh"
#include "kernels/verify_launch.h"

namespace kvb {
namespace {

using namespace dev;

constexpr int kTcK = 128, kTcV = 128;                 ///< the head dims the kernel takes
constexpr int kTcConsumerWarps = 16;                  ///< 8 column pairs of 16 x 2 row halves
constexpr int kTcConsumers = 32 * kTcConsumerWarps;   ///< consumer threads: 0 .. 511
constexpr int kTcThreads = kTcConsumers + 32;         ///< plus the producer warp
constexpr int kTcBarrier = 1;                         ///< the consumers' named barrier
constexpr size_t kTcMaxSmem = 227 * 1024;             ///< shared memory a block may take on sm_90

/// The block's dynamic shared memory for a pool of `capacity` entries per slot (rows: capacity rounded up to 8, one
/// k-step; rows past an item's n entries hold finite values of earlier items, met only by zero coefficients).
/// Two stages, each:
///   s0      [K][V] fp32      the checkpoint slice, as it lies in the pool
///   deltas  [rows][132] fp32 the buffered deltas u_j
///   keys    [rows][K] bf16   the buffered raw keys
///   g4      [rows][4] fp32   the 16-byte piece of each entry's log-decays holding value head h (at h % 4)
///   q, k    [M][K] bf16      the drafts' raw queries and keys;  v [M][V] bf16 their values
///   a4, b4  [M][16 bytes]    the 16-byte piece of each draft's gate input a (or prepared g) and b (or prepared beta)
///   head    A_log and dt_bias pieces (16 bytes each);  meta: slot (-1: padding) and n
/// then the consumers' work area:
///   khat, qhat [M][K] fp32   normalised drafts (q^ includes the scale)
///   bc        [N][168] fp32  B of the products: K checkpoint rows, then one row per entry (168 = 8 mod 32)
///   kw        [rows][132]    B of a flush, w_j k^_j (over bc, which is read before kw is formed)
///   red       [V][20] fp32   the products' column sums
///   dk, dq    [M][rows]      the raw keys' products with k^_i, q^_i;  gw, ww, rkw [rows]: g_j, w_j, 1 / |k_j|
template <int M>
struct TcSmem {
  static constexpr int K = kTcK, V = kTcV;
  static constexpr int NT = M <= 4 ? 1 : 2;  ///< 8-column tiles of the products
  static constexpr int NCOL = 8 * NT;        ///< product columns: k^ side, then q^ side from Q0
  static constexpr int Q0 = 4 * NT;
  /// Floats from one row to the next: the checkpoint slice lands as it lies in the pool (one 64 KB copy), deltas
  /// and kw rows padded to 528 bytes (conflict-free fragment reads), bc rows to 168 = 8 (mod 32).
  static constexpr int S0_PITCH = kTcV, ROW_PITCH = 132, BC_PITCH = 168, RED_PITCH = 20;
  static constexpr int kMaxRows = BC_PITCH - K - 8;  ///< entries bc has rows for
  int rows;
  size_t s0, deltas, keys, g4, q, k, v, a4, b4, head, meta, stage_bytes;
  size_t khat, qhat, bc, red, dk, dq, gw, ww, rkw;
  size_t bytes = 0;  ///< the total; while the layout is built, the next free offset
  KVB_HOST_DEVICE explicit TcSmem(int capacity) {
    rows = (capacity + 7) / 8 * 8;
    s0 = take(size_t(K) * S0_PITCH * 4);
    deltas = take(size_t(rows) * ROW_PITCH * 4);
    keys = take(size_t(rows) * K * 2);
    g4 = take(size_t(rows) * 16);
    q = take(size_t(M) * K * 2);
    k = take(size_t(M) * K * 2);
    v = take(size_t(M) * V * 2);
    a4 = take(size_t(M) * 16);
    b4 = take(size_t(M) * 16);
    head = take(32);
    meta = take(16);
    stage_bytes = (bytes + 127) / 128 * 128;
    bytes = 2 * stage_bytes;
    khat = take(size_t(M) * K * 4);
    qhat = take(size_t(M) * K * 4);
    const size_t bc_bytes = size_t(NCOL) * BC_PITCH * 4, kw_bytes = size_t(rows) * ROW_PITCH * 4;
    bc = take(bc_bytes > kw_bytes ? bc_bytes : kw_bytes);
    red = take(size_t(V) * RED_PITCH * 4);
    dk = take(size_t(M) * rows * 4);
    dq = take(size_t(M) * rows * 4);
    gw = take(size_t(rows) * 4);
    ww = take(size_t(rows) * 4);
    rkw = take(size_t(rows) * 4);
  }
  /// The offset of the next `b` bytes (16-byte aligned), which `bytes` then includes.
  KVB_HOST_DEVICE size_t take(size_t b) {
    const size_t o = bytes;
    bytes += (b + 15) / 16 * 16;
    return o;
  }
};

/// The drafts' scalars of the item being computed, and the pipeline's barriers (static shared memory).
template <int M>
struct TcShared {
  uint64_t full[2], empty[2];
  float g[M], beta[M], D[M];  ///< log-decay, beta, D_i = e^{g_0 + ... + g_i}
  float kk[M][M], kq[M][M];   ///< draft_pair_coefficients
  float decay0;               ///< e^{G_n}
  int due_last;               ///< this block writes a due row's drafts' keys (last of its key group to read them)
};

/// The drafts as buffer_draft_products and draft_pair_coefficients read them.
template <int M>
struct TcDrafts {
  float* khat;
  float* qhat;
  float* g;
  float (*kk)[M];
  float (*kq)[M];
  __device__ __forceinline__ float& k_at(int i, int r) { return khat[i * kTcK + r]; }
  __device__ __forceinline__ float& q_at(int i, int r) { return qhat[i * kTcK + r]; }
};

__device__ __forceinline__ int load_fill(const KVBufferPool& pool, int slot) {
  return min(max(pool.fill[slot], 0), pool.capacity);
}

/// The producer warp: for each of the block's items, waits for its stage to be free, then copies into it the
/// checkpoint slice, the n buffered entries (deltas, raw keys, log-decay pieces), the drafts' q, k, v and gate
/// inputs, and the item's meta, all completing on the stage's `full` barrier. The first item's slice is requested
/// before the PDL wait (no earlier kernel of a step writes a checkpoint); every fill after it.
template <int M>
__device__ void tc_produce(const KVBufferVerifyParams& p, const TcSmem<M>& L, char* smem, TcShared<M>& sh) {
  constexpr int K = kTcK, V = kTcV;
  const int lane = threadIdx.x % 32;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, group = p.shape.group();
  const int items = p.batch * HV;
  const KVBufferPool& pool = p.pool;
  int item = blockIdx.x;
  int slot = -1, n = 0;  // the next item's meta
  if (item < items) slot = p.slot[item / HV];
  bool waited = false;
  for (int j = 0; item < items; ++j, item += gridDim.x) {
    const int stage = j & 1;
    char* st = smem + stage * L.stage_bytes;
    uint64_t* full = &sh.full[stage];
    if (j >= 2) mbarrier_wait(&sh.empty[stage], ((j >> 1) - 1) & 1);
    const int row = item / HV, h = item % HV, hk = h / group;
    const bool valid = slot >= 0 && slot < pool.num_slots;
    if (valid) {
      if (lane == 0) mbarrier_expect_tx(full, K * V * 4);
      __syncwarp();
      const float* src = pool.checkpoint + (int64_t(slot) * HV + h) * K * V;
      // One copy of the whole slice, as it lies (the copy engine's cost grows with the number of copies); the
      // lanes of a fragment read then meet 4-way bank conflicts on these rows.
      if (lane == 0) bulk_copy_g2s(st + L.s0, src, K * V * 4, full);
    }
    if (!waited) {
      pdl_wait();
      pdl_launch_dependents();
      waited = true;
      if (valid) n = load_fill(pool, slot);
    }
    if (valid) {
      const int64_t e0 = int64_t(slot) * pool.capacity;
      const uint32_t bytes = uint32_t(n) * (V * 4 + K * 2 + 16) + uint32_t(M) * (2 * K * 2 + V * 2 + 2 * 16) +
                             (p.in.g ? 0u : 32u);
      if (lane == 0) mbarrier_expect_tx(full, bytes);
      __syncwarp();
      for (int e = lane; e < n; e += 32) {
        bulk_copy_g2s(st + L.deltas + size_t(e) * L.ROW_PITCH * 4, pool.deltas + ((e0 + e) * HV + h) * V, V * 4,
                      full);
        bulk_copy_g2s(st + L.keys + size_t(e) * K * 2, pool.keys + ((e0 + e) * H + hk) * K, K * 2, full);
        bulk_copy_g2s(st + L.g4 + size_t(e) * 16, pool.log_decay + (e0 + e) * HV + (h & ~3), 16, full);
      }
      for (int i = lane; i < M; i += 32) {
        const int64_t tok = int64_t(row) * M + i;
        bulk_copy_g2s(st + L.q + size_t(i) * K * 2, p.in.q + (tok * H + hk) * K, K * 2, full);
        bulk_copy_g2s(st + L.k + size_t(i) * K * 2, p.in.k + (tok * H + hk) * K, K * 2, full);
        bulk_copy_g2s(st + L.v + size_t(i) * V * 2, p.in.v + (tok * HV + h) * V, V * 2, full);
        const void* a = p.in.g ? static_cast<const void*>(p.in.g + tok * HV + (h & ~3))
                               : static_cast<const void*>(p.in.a + tok * HV + (h & ~7));
        const void* b = p.in.beta ? static_cast<const void*>(p.in.beta + tok * HV + (h & ~3))
                                  : static_cast<const void*>(p.in.b + tok * HV + (h & ~7));
        bulk_copy_g2s(st + L.a4 + size_t(i) * 16, a, 16, full);
        bulk_copy_g2s(st + L.b4 + size_t(i) * 16, b, 16, full);
      }
      if (lane == 31 && !p.in.g) {
        bulk_copy_g2s(st + L.head, p.in.A_log + (h & ~3), 16, full);
        bulk_copy_g2s(st + L.head + 16, p.in.dt_bias + (h & ~3), 16, full);
      }
    }
    if (lane == 0) {
      *reinterpret_cast<int2*>(st + L.meta) = make_int2(valid ? slot : -1, n);
      mbarrier_arrive(full);
    }
    // The next item's slot and fill, while the consumers work.
    const int next = item + gridDim.x;
    slot = -1;
    n = 0;
    if (next < items) {
      slot = p.slot[next / HV];
      if (slot >= 0 && slot < pool.num_slots) n = load_fill(pool, slot);
    }
  }
  if (!waited) {  // no item: still keep the PDL contract
    pdl_wait();
    pdl_launch_dependents();
  }
}

/// The consumer warps: every item of the block from its stage (see the file's head).
template <int M>
__device__ void tc_consume(const KVBufferVerifyParams& p, const TcSmem<M>& L, char* smem, TcShared<M>& sh) {
  constexpr int K = kTcK, V = kTcV, WARPS = kTcConsumerWarps;
  using Lay = TcSmem<M>;
  constexpr int NT = Lay::NT, NCOL = Lay::NCOL, Q0 = Lay::Q0, RP = Lay::ROW_PITCH, SP = Lay::S0_PITCH,
                BP = Lay::BC_PITCH, RED = Lay::RED_PITCH;
  const int ctid = threadIdx.x, warp = ctid / 32, lane = ctid % 32, g = lane / 4, t = lane % 4;
  const int HV = p.shape.heads_v, group = p.shape.group();
  const int items = p.batch * HV;
  const KVBufferPool& pool = p.pool;
  const int cap = pool.capacity;
  const int half = warp / 8;                       // checkpoint rows [64 half, 64 half + 64)
  const int col0 = 16 * (warp % 8) + 2 * g;        // this lane's column pair
  float* const khat = reinterpret_cast<float*>(smem + L.khat);
  float* const qhat = reinterpret_cast<float*>(smem + L.qhat);
  float* const bc = reinterpret_cast<float*>(smem + L.bc);
  float* const kw = bc;
  float* const red = reinterpret_cast<float*>(smem + L.red);
  float* const dk = reinterpret_cast<float*>(smem + L.dk);
  float* const dq = reinterpret_cast<float*>(smem + L.dq);
  TcDrafts<M> dv{khat, qhat, sh.g, sh.kk, sh.kq};
  BufferSmem<K> bs;
  bs.key_stride = K;
  bs.g = reinterpret_cast<float*>(smem + L.gw);
  bs.w = reinterpret_cast<float*>(smem + L.ww);
  bs.rk = reinterpret_cast<float*>(smem + L.rkw);
  bs.ck = bs.cq = nullptr;
  bs.decay0 = &sh.decay0;
  pdl_wait();  // every write below follows the producer's wait as well; this keeps each thread's order plain
  pdl_launch_dependents();

  for (int j = 0, item = blockIdx.x; item < items; ++j, item += gridDim.x) {
    const int stage = j & 1;
    const char* st = smem + stage * L.stage_bytes;
    mbarrier_wait(&sh.full[stage], (j >> 1) & 1);
    const int2 meta = *reinterpret_cast<const int2*>(st + L.meta);
    const int row = item / HV, h = item % HV, hk = h / group;
    const int slot = meta.x, n = meta.y;
    if (slot < 0) {  // padding: nothing read or written, outputs zeroed
      for (int idx = ctid; idx < M * V; idx += kTcConsumers)
        store_output1(p.o, p.o_dtype, ((int64_t(row) * M + idx / V) * HV + h) * V + idx % V, 0.f);
      __syncwarp();
      if (lane == 0) mbarrier_arrive(&sh.empty[stage]);
      named_barrier(kTcBarrier, kTcConsumers);
      continue;
    }
    const bool flush = n >= pool.buffer_size;  // due: the n entries fold into the checkpoint here
    const int64_t e0 = int64_t(slot) * cap;
    const int64_t draft_entry = e0 + (flush ? 0 : n);
    const float* s0 = reinterpret_cast<const float*>(st + L.s0);
    const float* deltas_s = reinterpret_cast<const float*>(st + L.deltas);
    const bf16* keys_s = reinterpret_cast<const bf16*>(st + L.keys);
    bs.keys = const_cast<bf16*>(keys_s);
    // A due row has read the buffer's keys (they are in the stage): it counts its arrival in its key group; the last
    // writes the drafts' keys over entries 0 .. m - 1, which the group's other blocks read.
    if (flush && ctid == 0) {
      __threadfence();
      sh.due_last = last_in_key_group(p, row, hk, atomicAdd(key_group_arrivals(p, row, hk), 1), 1);
    }

    // Drafts (warp i: draft i) and the gates; the entries' log-decays and decay weights (the last warp).
    if (warp < M) {
      const int i = warp;
      WarpVec<K> qv, kv;
      qv.load(reinterpret_cast<const bf16*>(st + L.q) + i * K, lane);
      kv.load(reinterpret_cast<const bf16*>(st + L.k) + i * K, lane);
      const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
#pragma unroll
      for (int e = 0; e < WarpVec<K>::N; ++e) {
        khat[i * K + lane * WarpVec<K>::N + e] = kv.x[e] * nrm.rk;
        qhat[i * K + lane * WarpVec<K>::N + e] = qv.x[e] * nrm.rq;
      }
      if (lane == 0) {
        const float* head = reinterpret_cast<const float*>(st + L.head);
        const float* a4 = reinterpret_cast<const float*>(st + L.a4 + i * 16);
        const float* b4 = reinterpret_cast<const float*>(st + L.b4 + i * 16);
        sh.g[i] = p.in.g ? a4[h & 3]
                         : gate_log_decay(head[h & 3], __bfloat162float(reinterpret_cast<const bf16*>(a4)[h & 7]),
                                          head[4 + (h & 3)]);
        sh.beta[i] = p.in.beta ? b4[h & 3] : gate_beta(__bfloat162float(reinterpret_cast<const bf16*>(b4)[h & 7]));
      }
    }
    if (warp == WARPS - 1) {
      const float* g4 = reinterpret_cast<const float*>(st + L.g4);
      for (int e = lane; e < n; e += 32) bs.g[e] = g4[e * 4 + (h & 3)];
      __syncwarp();
      buffer_weights<K>(n, 0.f, bs);
    }
    named_barrier(kTcBarrier, kTcConsumers);

    // The drafts' decays, the keys' products with the drafts (and 1 / |k_j|), the drafts' products with each other.
    if (warp == WARPS - 1 && lane == 0) {
      float gsum = 0.f;
#pragma unroll
      for (int i = 0; i < M; ++i) {
        gsum += sh.g[i];
        sh.D[i] = expf(gsum);
      }
    }
    buffer_draft_products<K, M, WARPS, true>(n, dv, bs, dk, dq, L.rows);
    draft_pair_coefficients<K, M, WARPS>(dv);
    named_barrier(kTcBarrier, kTcConsumers);

    // B of the products: column c < Q0 for k^_c, Q0 + i for q^_i (zero past m); row r < K: e^{G_n} D_i x_i[r]
    // (x = k^ or q^), row K + j: w_j D_i (k^_j . x_i) for j < n, zero for the rows up to L.rows.
    const float decay0 = sh.decay0;
    {
      constexpr int PARTS = WARPS / NCOL;
      const int c = warp % NCOL, part = warp / NCOL;
      const bool qside = c >= Q0;
      const int i = qside ? c - Q0 : c;
      const float* x = (qside ? qhat : khat) + i * K;
      const float* d = (qside ? dq : dk) + i * L.rows;
      const float scale = i < M ? decay0 * sh.D[i] : 0.f;
      const float dscale = i < M ? sh.D[i] : 0.f;
      for (int r = lane + 32 * part; r < K + L.rows; r += 32 * PARTS) {
        float b = 0.f;
        if (i < M) {
          if (r < K) b = scale * x[r];
          else if (r - K < n) b = bs.w[r - K] * bs.rk[r - K] * dscale * d[r - K];
        }
        bc[c * BP + r] = b;
      }
    }
    named_barrier(kTcBarrier, kTcConsumers);

    // The products: acc[nt] is the 16 x 8 tile of columns (col0, col0 + 1 over the lanes' g) x product columns
    // 8 nt .. 8 nt + 7. This half's 64 checkpoint rows (rows r, r + 1 of k-step r = 8 s + 2 t), then every other 8
    // of the buffer's rows.
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = 0.f;
    const auto product_step = [&](const float* rows2, int pitch, int r) {
      // rows2: this lane's column pair at row r of the stacked [S0; u] matrix, the next row `pitch` floats on.
      const float2 p0 = *reinterpret_cast<const float2*>(rows2);
      const float2 p1 = *reinterpret_cast<const float2*>(rows2 + pitch);
      const Tf32A a = split_a(p0.x, p0.y, p1.x, p1.y);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const float2 b = *reinterpret_cast<const float2*>(bc + (8 * nt + g) * BP + r);
        mma_3xtf32(acc[nt], a, split_tf32(b.x), split_tf32(b.y));
      }
    };
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const int r = 64 * half + 8 * s + 2 * t;
      product_step(s0 + r * SP + col0, SP, r);
    }
    const int chunks = (n + 7) / 8;  // 8-entry steps of the buffer's rows
    for (int c = half; c < chunks; c += 2) {
      const int r = 8 * c + 2 * t;
      product_step(deltas_s + r * RP + col0, RP, K + r);
    }
    if (half == 1)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        float* r = red + col0 * RED + 8 * nt + 2 * t;
        *reinterpret_cast<float2*>(r) = make_float2(acc[nt][0], acc[nt][1]);
        *reinterpret_cast<float2*>(r + RED) = make_float2(acc[nt][2], acc[nt][3]);
      }
    named_barrier(kTcBarrier, kTcConsumers);
    if (half == 0) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        float* r = red + col0 * RED + 8 * nt + 2 * t;
        const float2 x0 = *reinterpret_cast<float2*>(r), x1 = *reinterpret_cast<float2*>(r + RED);
        *reinterpret_cast<float2*>(r) = make_float2(x0.x + acc[nt][0], x0.y + acc[nt][1]);
        *reinterpret_cast<float2*>(r + RED) = make_float2(x1.x + acc[nt][2], x1.y + acc[nt][3]);
      }
    } else if (flush) {
      // B of the flush over bc (read by every warp before the barrier): kw[j][r] = w_j k^_j[r], zero past n.
      for (int e = warp - 8; e < L.rows; e += 8) {
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (e < n) {
          float kr[4];
          load_bf16<4>(keys_s + e * K + 4 * lane, kr);
          const float s = bs.w[e] * bs.rk[e];
          x = make_float4(s * kr[0], s * kr[1], s * kr[2], s * kr[3]);
        }
        *reinterpret_cast<float4*>(kw + e * RP + 4 * lane) = x;
      }
    }
    named_barrier(kTcBarrier, kTcConsumers);

    // The triangular dependency, one column a thread (warps 0-3): u_i into the draft's entry, o_i to the output.
    if (ctid < V) {
      const int c = ctid;
      const float* x = red + c * RED;
      const bf16* vd = reinterpret_cast<const bf16*>(st + L.v);
      float u[M];
      draft_deltas<M>(
          sh.kk, sh.beta, [&](int i) { return x[i]; }, [&](int i) { return __bfloat162float(vd[i * V + c]); }, u);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        float o = x[Q0 + i];
#pragma unroll
        for (int ip = 0; ip <= i; ++ip) o = fmaf(sh.kq[ip][i], u[ip], o);
        store_output1(p.o, p.o_dtype, ((int64_t(row) * M + i) * HV + h) * V + c, o);
        // Only this value head's items read its deltas, and this one has them in its stage: the drafts' may
        // replace them now (a due row's entries 0 .. m - 1).
        pool.deltas[((draft_entry + i) * HV + h) * V + c] = u[i];
      }
    } else if (ctid < V + M) {
      pool.log_decay[(draft_entry + (ctid - V)) * HV + h] = sh.g[ctid - V];
    } else if (ctid >= 160 && ctid < 256) {
      // The drafts' raw keys: past the entries (no block reads there) by the key group's first value head; over a
      // due row's entries by the last block of its key group to have read them.
      if (flush ? sh.due_last != 0 : h % group == 0) write_draft_keys(p, row, draft_entry, M, hk, ctid - 160, 96);
    }

    if (flush) {
      // The flush onto the checkpoint values as read: S <- e^{G_n} S + sum_j u_j^T (w_j k^_j), as 16 x 8 tiles of
      // columns (col0, col0 + 1) x rows r0 .. r0 + 7, whose lane elements are its values at rows r0 + 2t, + 1.
      constexpr int kMaxChunks = Lay::kMaxRows / 8;
      Tf32A a[kMaxChunks];
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c)
        if (c < chunks) {
          const float* u = deltas_s + (8 * c + 2 * t) * RP + col0;
          const float2 p0 = *reinterpret_cast<const float2*>(u), p1 = *reinterpret_cast<const float2*>(u + RP);
          a[c] = split_a(p0.x, p0.y, p1.x, p1.y);
        }
      float* const ck = pool.checkpoint + (int64_t(slot) * HV + h) * K * V;
#pragma unroll 2
      for (int s = 0; s < 8; ++s) {
        const int r0 = 64 * half + 8 * s, r = r0 + 2 * t;
        const float2 p0 = *reinterpret_cast<const float2*>(s0 + r * SP + col0);
        const float2 p1 = *reinterpret_cast<const float2*>(s0 + (r + 1) * SP + col0);
        float d[4] = {decay0 * p0.x, decay0 * p1.x, decay0 * p0.y, decay0 * p1.y};
#pragma unroll
        for (int c = 0; c < kMaxChunks; ++c)
          if (c < chunks) {
            const float* b = kw + (8 * c + 2 * t) * RP + r0 + g;
            mma_3xtf32(d, a[c], split_tf32(b[0]), split_tf32(b[RP]));
          }
        __stcs(reinterpret_cast<float2*>(ck + int64_t(r) * V + col0), make_float2(d[0], d[2]));
        __stcs(reinterpret_cast<float2*>(ck + int64_t(r + 1) * V + col0), make_float2(d[1], d[3]));
      }
    }
    __syncwarp();
    if (lane == 0) mbarrier_arrive(&sh.empty[stage]);  // this warp is done with the stage
    named_barrier(kTcBarrier, kTcConsumers);            // and every warp with the work area
  }
}

template <int M>
__global__ void __launch_bounds__(kTcThreads, 1) kvbuffer_verify_tc_kernel(const KVBufferVerifyParams p) {
  extern __shared__ __align__(128) char smem[];
  __shared__ TcShared<M> sh;
  const TcSmem<M> L(p.pool.capacity);
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2; ++s) {
      mbarrier_init(&sh.full[s], 1);
      mbarrier_init(&sh.empty[s], kTcConsumerWarps);
    }
    mbarrier_init_fence();
  }
  // Stage rows past an item's entries meet only zero coefficients: finite values from the start.
  for (int s = 0; s < 2; ++s)
    for (size_t i = threadIdx.x; i < size_t(L.rows) * TcSmem<M>::ROW_PITCH; i += blockDim.x)
      reinterpret_cast<float*>(smem + s * L.stage_bytes + L.deltas)[i] = 0.f;
  __syncthreads();
  if (threadIdx.x >= kTcConsumers) tc_produce<M>(p, L, smem, sh);
  else tc_consume<M>(p, L, smem, sh);
}

/// Dynamic shared memory of the kernel for m drafts and a pool of `capacity` entries per slot.
size_t tc_smem_bytes(int m, int capacity) {
  switch (m) {
    case 1: return TcSmem<1>(capacity).bytes;
    case 2: return TcSmem<2>(capacity).bytes;
    case 3: return TcSmem<3>(capacity).bytes;
    case 4: return TcSmem<4>(capacity).bytes;
    case 5: return TcSmem<5>(capacity).bytes;
    case 6: return TcSmem<6>(capacity).bytes;
    case 7: return TcSmem<7>(capacity).bytes;
    default: return TcSmem<8>(capacity).bytes;
  }
}

template <int M>
cudaError_t launch_tc(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  const auto kernel = kvbuffer_verify_tc_kernel<M>;
  const size_t smem = TcSmem<M>(p.pool.capacity).bytes;
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  int per_sm = 0;
  if (const cudaError_t e = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), kTcThreads, smem, per_sm);
      e != cudaSuccess)
    return e;
  if (describe) {
    describe->kernel = VerifyKernel::tensor_cores;
    describe->smem_bytes = smem + sizeof(TcShared<M>);
    describe->predicted_blocks_per_sm = 1;
    describe->resident_blocks_per_sm = per_sm;
    return cudaSuccess;
  }
  if (per_sm < 1) return cudaErrorInvalidConfiguration;
  const int64_t items = int64_t(p.batch) * p.shape.heads_v;
  const int grid = int(std::min<int64_t>(items, int64_t(per_sm) * sm_count()));
  return launch_kernel(kernel, dim3(grid), dim3(kTcThreads), smem, stream, p.pdl, p);
}

bool aligned16(const void* x) { return (reinterpret_cast<uintptr_t>(x) & 15) == 0; }

}  // namespace

std::string validate_tensor_core_verify(const KVBufferVerifyParams& p) {
  if (p.shape.head_dim_k != kTcK || p.shape.head_dim_v != kTcV)
    return "kernel = tensor_cores takes head_dim_k = " + std::to_string(kTcK) + " and head_dim_v = " +
           std::to_string(kTcV) + " (got " + std::to_string(p.shape.head_dim_k) + " x " +
           std::to_string(p.shape.head_dim_v) + "; allowed elsewhere: kernel = cuda_cores)";
  if (!p.tile.is_auto())
    return "tile = " + to_string(p.tile) + ": kernel = tensor_cores has one block shape (allowed: tile = auto)";
  if (p.shape.heads_v % 8 != 0)
    return "heads_v = " + std::to_string(p.shape.heads_v) +
           ": kernel = tensor_cores takes a multiple of 8 (allowed elsewhere: kernel = cuda_cores)";
  const int rows = (p.pool.capacity + 7) / 8 * 8;
  if (rows > TcSmem<8>::kMaxRows || tc_smem_bytes(p.in.tokens, p.pool.capacity) > kTcMaxSmem)
    return "pool.capacity = " + std::to_string(p.pool.capacity) + ": kernel = tensor_cores stages at most " +
           std::to_string(TcSmem<8>::kMaxRows) + " entries and " + std::to_string(kTcMaxSmem / 1024) +
           " KB a block (two stages; 24 entries at 8 drafts; allowed above: kernel = cuda_cores)";
  const TokenInputs& in = p.in;
  const KVBufferPool& pool = p.pool;
  for (const void* x : {static_cast<const void*>(in.q), static_cast<const void*>(in.k),
                        static_cast<const void*>(in.v), static_cast<const void*>(in.a),
                        static_cast<const void*>(in.b), static_cast<const void*>(in.A_log),
                        static_cast<const void*>(in.dt_bias), static_cast<const void*>(in.g),
                        static_cast<const void*>(in.beta), static_cast<const void*>(pool.checkpoint),
                        static_cast<const void*>(pool.keys), static_cast<const void*>(pool.deltas),
                        static_cast<const void*>(pool.log_decay)})
    if (!aligned16(x))
      return "kernel = tensor_cores copies with the bulk-copy engine: every input and pool pointer must be 16-byte "
             "aligned";
  return "";
}

cudaError_t launch_tensor_core_verify(const KVBufferVerifyParams& p, cudaStream_t stream,
                                      KVBufferVerifyLaunch* describe) {
  switch (p.in.tokens) {
    case 1: return launch_tc<1>(p, stream, describe);
    case 2: return launch_tc<2>(p, stream, describe);
    case 3: return launch_tc<3>(p, stream, describe);
    case 4: return launch_tc<4>(p, stream, describe);
    case 5: return launch_tc<5>(p, stream, describe);
    case 6: return launch_tc<6>(p, stream, describe);
    case 7: return launch_tc<7>(p, stream, describe);
    case 8: return launch_tc<8>(p, stream, describe);
  }
  return cudaErrorInvalidValue;
}
static_assert(kMaxDraftTokens == 8, "launch_tensor_core_verify covers 1 to 8 drafts");

}  // namespace kvb
