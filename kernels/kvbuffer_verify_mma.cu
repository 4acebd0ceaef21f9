// KVBuffer speculative verification on tensor cores (VerifyKernel::tensor_cores; DESIGN.md section 3, delta form).
// The same algebra as kernels/kvbuffer_verify.cu, with w_ij = e^{G_i - G_j}:
//   a_i = e^{G_i} S0^T k^_i + sum_{j<n} w_ij (k^_j . k^_i) u_j        the checkpoint's and the buffer's share
//   o_i = e^{G_i} S0^T q^_i + sum_{j<n} w_ij (k^_j . q^_i) u_j        (one matrix product over [S0; u_0..u_{n-1}])
//   u_i = beta_i (v_i - a_i - sum_{i'<i} w_ii' (k^_i' . k^_i) u_i')    the small triangular dependency
//   o_i += sum_{i'<=i} w_ii' (k^_i' . q^_i) u_i'
// and, for a due row (n >= B), the flush S0 <- e^{G_n} S0 + sum_{j<n} w_j k^_j u_j^T.
//
// One block of four warps per row and pair of value heads of one key group (one head where the group is odd), the
// heads one after the other; warp w owns the value columns [32 w, 32 w + 32), which are the M dimension of m16n8k8
// TF32 tensor-core products; the drafts' keys and queries are N (8 columns: k^ in 0-3, q^ in 4-7, up to 4 drafts;
// 16 above), the checkpoint rows and then the buffered entries K. A k-step's eight rows are
// taken in the order 0, 2, 4, 6 | 1, 3, 5, 7 (fragment column t is row 2t, t + 4 is row 2t + 1): a lane then holds
// rows 2t and 2t + 1 of its columns, which is both its A fragment of the products and its accumulator fragment of a
// fold whose N dimension is the same eight checkpoint rows. So:
// - the checkpoint streams from global memory straight into the registers of the A fragments (a lane reads one
//   float4 of each of its two rows, a warp four whole 128-byte lines), tc_in_flight k-steps ahead, without any
//   shared-memory staging or block barrier; the first k-steps are requested before the PDL wait (no kernel of a step
//   writes another layer's checkpoint);
// - a due row (n >= B) folds its entries as the slice streams, S = e^{G_n} S0 + sum_j (w_j / |k_j| u_j)^T k_j per
//   k-step (A: the buffered deltas scaled, B: the raw bf16 keys, exact in TF32 and bf16; with fp32 checkpoints the
//   first 16 entries as one bf16 product of the deltas split in three parts), writes the new checkpoint rows and
//   takes them as the A fragments of the drafts' products, whose buffer's share is then nothing:
//   a_i = e^{G_i - G_n} S^T k^_i. The slice is read and written once.
// A row that is not due starts its first head's pass as soon as x is in shared memory, with the key products below
// interleaved k-step by k-step where the ring is shallow (tc_interleaves), so that the slice keeps streaming while
// they are formed; a due row forms them first (its fold needs the keys' norms and weights).
// The products' B columns are the drafts' k^ and q^ as normalised, split once, shared by the block's heads; the
// decays e^{G_n} and e^{G_i - G_n} are applied to the totals. The drafts' products with the buffer's raw keys and
// with each other (and the keys' norms) are one more tensor-core product, of the raw bf16 keys (exact in TF32) with
// those same B columns, also shared by the heads: only the gates and the entries' log-decays are per head.
// Every product is split 3xTF32 (kernels/mma_tf32.cuh), the queries' too: an output sums terms many times its own
// size, and one TF32 product (about 2^-11 of each term) can then reach 1e-2 of the head's largest output.
//
// The checkpoint is fp32 or bf16 (pool.state_dtype: S). A bf16 slice streams at half the bytes (a lane reads 8 bytes
// of each of its rows), and bf16 values are exact in TF32: their products over the checkpoint rows take two TF32
// products (with x's hi and lo) instead of three. A due row's fold is formed in fp32, rounded to bf16 (nearest even)
// where it is stored, and the drafts' products take the rounded values, which are what the next step reads.
#include <algorithm>
#include <string>
#include <type_traits>

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

constexpr int kTcK = 128, kTcV = 128;              ///< the head dims the kernel takes
static_assert(kTcK == kTcV, "validate_tensor_core_verify names one head dim");
constexpr int kTcWarps = 4;                        ///< warps a block: 32 value columns each
constexpr int kTcThreads = 32 * kTcWarps;
constexpr int kTcColumns = kTcV / kTcWarps;        ///< value columns a warp
constexpr int kTcSteps = kTcK / 8;                 ///< k-steps over the checkpoint rows of one value head
/// Checkpoint k-steps a warp has requested ahead for m = M drafts and checkpoint elements S: for fp32 the depth that
/// leaves the block's 128 registers a thread (kTcMinBlocks) with the fewest spills, since a spill's local-memory round
/// trip stalls the stream more than one k-step fewer in flight does; for bf16 twice that, the same registers and the
/// same bytes in flight.
template <int M, typename S>
constexpr int tc_in_flight() {
  return (M == 3 || M == 4 ? 2 : 3) * (std::is_same<S, float>::value ? 1 : 2);
}
/// Whether a row that is not due runs its first head's pass over the checkpoint right after the drafts are in
/// shared memory, with the key products interleaved (checkpoint_pass), for m = M drafts: where the ring holds two
/// k-steps, whose stream the key products would otherwise stall; with three the interleaved products' registers
/// spill in the pass.
template <int M>
constexpr bool tc_interleaves() {
  return tc_in_flight<M, float>() == 2;
}
constexpr int kTcHeldChunks = 2;                   ///< 8-entry chunks a due row's fold keeps split in registers
/// Whether a due row folds its two held chunks as one m16n8k16 bf16 product a tile (the deltas split in three bf16
/// parts, the raw keys exact: three products a 16-column tile instead of four TF32 ones), for checkpoint elements S:
/// fp32 checkpoints do; bf16 ones keep the TF32 fold, whose registers their deeper ring leaves room for.
template <typename S>
constexpr bool tc_fold_bf16() {
  return std::is_same<S, float>::value;
}
/// Whether the bf16 fold's small parts (mid, lo) join the checkpoint's chain of products rather than a chain from
/// zero, for m = M drafts: from m = 5 on (the faster choice for each: docs/FINDINGS.md).
template <int M>
constexpr bool tc_fold_one_chain() {
  return M >= 5;
}
constexpr int kTcMinBlocks = 4;                    ///< blocks per SM the registers allow (128 a thread)

/// Rows from 8 (mod 16) up: a pitch (in 8-byte elements) whose 16-byte fragment words of a quarter warp (two rows
/// g, four t) meet distinct banks.
KVB_HOST_DEVICE constexpr int fragment_pitch(int rows) { return (rows - 8 + 15) / 16 * 16 + 8; }

/// The block's dynamic shared memory for m = M drafts, HPC value heads a block and a pool of `capacity` entries per
/// slot (rows: capacity rounded up to 8, one k-step). B operands hold fp32 values split (hi, lo) for 3xTF32, rows
/// 2t, 2t + 1 of a column in one 16-byte word (hi 2t, hi 2t + 1, lo 2t, lo 2t + 1: each pair one fragment's two
/// registers), so that a k-step reads one word a column tile.
///   x     [NCOL][x_pitch] uint2          the drafts' k^_i (column i) and q^_i (column Q0 + i), rows 0 .. K - 1: B of
///                                        the products over the checkpoint rows, shared by the key group's heads
///   bb    [HPC][NCOL][bb_pitch] uint2    B over the buffer's rows: w_j (k^_j . x_c), zero past n (a row not due)
///   keys  [key_rows][KEY_PITCH] bf16     raw keys: the n entries' (B of a due row's fold, exact in TF32), then the
///                                        drafts' from row `rows`
///   kp    [key_rows][KP_PITCH] fp32      the key products of every key row with the columns of x
///   tr    [warps][32][TR_PITCH] fp32     each warp's product columns, one value column a lane
///   vals  [HPC][M][V] bf16               the drafts' values
///   g, w [HPC][rows], rk [rows], decay0 [HPC]   log-decays, decay weights, 1 / |k_j|, e^{G_n}
template <int M, int HPC>
struct TcLayout {
  static constexpr int K = kTcK, V = kTcV;
  static constexpr int NT = M <= 4 ? 1 : 2;  ///< 8-column tiles of the products
  static constexpr int NCOL = 8 * NT;        ///< product columns: k^ side from 0, q^ side from Q0
  static constexpr int Q0 = 4 * NT;
  static constexpr int TR_PITCH = NCOL + 2;  ///< even: float2 stores; rows 4 g apart meet distinct banks
  static constexpr int KEY_PITCH = K + 8;    ///< bf16: a fragment read of 8 rows x 4 words meets distinct banks
  static constexpr int KP_PITCH = NCOL + 1;
  static constexpr int X_PITCH = fragment_pitch(K);
  int rows, key_rows, bb_pitch;
  size_t x, bb, keys, kp, tr, vals, g, w, rk, decay0;
  size_t bytes = 0;  ///< the total; while the layout is built, the next free offset
  KVB_HOST_DEVICE explicit TcLayout(int capacity) {
    rows = (capacity + 7) / 8 * 8;
    key_rows = (rows + 8 + 15) / 16 * 16;  // entries, then 8 rows for the drafts, in whole 16-row tiles
    bb_pitch = fragment_pitch(rows);
    x = take(size_t(NCOL) * X_PITCH * 8);
    bb = take(size_t(HPC) * NCOL * bb_pitch * 8);
    keys = take(size_t(key_rows) * KEY_PITCH * 2);
    kp = take(size_t(key_rows) * KP_PITCH * 4);
    tr = take(size_t(kTcWarps) * 32 * TR_PITCH * 4);
    vals = take(size_t(HPC) * M * V * 2);
    g = take(size_t(HPC) * rows * 4);
    w = take(size_t(HPC) * rows * 4);
    rk = take(size_t(rows) * 4);
    decay0 = take(size_t(HPC) * 4);
  }
  /// The offset of the next `n` bytes (16-byte aligned), which `bytes` then includes.
  KVB_HOST_DEVICE size_t take(size_t n) {
    const size_t o = bytes;
    bytes += (n + 15) / 16 * 16;
    return o;
  }
};

/// The drafts' scalars (static shared memory), per value head of the block where they depend on it.
template <int M, int HPC>
struct TcShared {
  float g[HPC][M], beta[HPC][M], D[HPC][M];  ///< log-decay, beta, D_i = e^{g_0 + ... + g_i}
  float rk[M];                               ///< 1 / |k_i|
  float kk[HPC][M][M], kq[HPC][M][M];  ///< kk[i'][i] = w_ii' (k^_i' . k^_i) (i' < i), kq[i'][i] = w_ii' (k^_i' . q^_i)
  int due_last;                        ///< this block writes a due row's drafts' keys (last of its key group to read)
};

__device__ __forceinline__ float4 load4_nc(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }

/// Four consecutive checkpoint elements of one row as stored: float4 (fp32) or uint2 (bf16, two to a word, the first
/// in the low half).
template <typename S>
using Stored4 = std::conditional_t<std::is_same<S, float>::value, float4, uint2>;
/// Four checkpoint elements of the slice, read once, for m = M drafts: fp32 ones from m = 5 on without allocating them
/// in L1, the rest through it (the faster choice for each: docs/FINDINGS.md).
template <int M, typename S>
__device__ __forceinline__ Stored4<S> load_stored4(const S* p) {
  constexpr bool kNoAllocate = std::is_same<S, float>::value && M >= 5;
  if constexpr (kNoAllocate) {
    float4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
                 : "l"(p));
    return r;
  } else {
    return __ldg(reinterpret_cast<const Stored4<S>*>(p));
  }
}

/// Puts x, split, at row r of column c of a B operand (pitch in 8-byte elements; layout: TcLayout).
__device__ __forceinline__ void put_b(uint32_t* b, int pitch, int c, int r, float x) {
  const Tf32Pair s = split_tf32(x);
  uint32_t* const word = b + 2 * (c * pitch + (r & ~1)) + (r & 1);
  word[0] = s.hi;
  word[2] = s.lo;
}
/// Puts x[0 .. 3], split, at rows r .. r + 3 (r a multiple of 4) of column c of a B operand: the rows' eight words
/// are contiguous (hi r, hi r + 1, lo r, lo r + 1, then the same for r + 2, r + 3), two 16-byte stores.
__device__ __forceinline__ void put_b4(uint32_t* b, int pitch, int c, int r, const float (&x)[4]) {
  Tf32Pair s[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) s[e] = split_tf32(x[e]);
  uint4* const words = reinterpret_cast<uint4*>(b + 2 * (c * pitch + r));
  words[0] = make_uint4(s[0].hi, s[1].hi, s[0].lo, s[1].lo);
  words[1] = make_uint4(s[2].hi, s[3].hi, s[2].lo, s[3].lo);
}

/// HPC: value heads a block (1, or 2 when the key group's heads pair up), which share the drafts' keys and queries,
/// the buffer's keys and their products. S: the checkpoint's element type (float or bf16).
template <int M, int HPC, typename S>
__global__ void __launch_bounds__(kTcThreads, kTcMinBlocks) kvbuffer_verify_tc_kernel(const KVBufferVerifyParams p) {
  constexpr bool kFp32 = std::is_same<S, float>::value;
  constexpr bool kFoldBf16 = tc_fold_bf16<S>(), kFoldOneChain = tc_fold_one_chain<M>();
  constexpr int K = kTcK, V = kTcV;
  using Lay = TcLayout<M, HPC>;
  constexpr int NT = Lay::NT, NCOL = Lay::NCOL, Q0 = Lay::Q0, TRP = Lay::TR_PITCH, KEYP = Lay::KEY_PITCH,
                KPP = Lay::KP_PITCH, XP = Lay::X_PITCH;
  constexpr int kInFlight = tc_in_flight<M, S>();
  extern __shared__ __align__(16) char smem[];
  __shared__ TcShared<M, HPC> sh;
  const Lay lay(p.pool.capacity);
  // The row: from row_order (written by the kernel before this one, so read after the PDL wait) or in batch order.
  if (p.row_order) pdl_wait();
  const OrderedRow ordered = p.row_order ? p.row_order[blockIdx.y] : OrderedRow{int(blockIdx.y), p.slot[blockIdx.y]};
  const int h0 = blockIdx.x * HPC, row = ordered.row;  // value heads h0 .. h0 + HPC - 1
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, group = p.shape.group(), hk = h0 / group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int vb = kTcColumns * warp;  // this warp's first value column
  const KVBufferPool& pool = p.pool;
  const int cap = pool.capacity, rows = lay.rows, bbp = lay.bb_pitch;
  const int slot = ordered.slot;
  if (slot < 0 || slot >= pool.num_slots) {  // padding: nothing read, outputs zeroed after the PDL wait
    pdl_wait();
    pdl_launch_dependents();
    for (int hh = 0; hh < HPC; ++hh)
      for (int i = 0; i < M; ++i)
        zero_output_slice(p.o, p.o_dtype, ((int64_t(row) * M + i) * HV + h0 + hh) * V, 0, V, V);
    return;
  }

  // This lane's checkpoint values: at k-step q (head q / 16), rows 8 (q % 16) + 2t and + 1, columns vb + 4 g .. + 3.
  const int64_t slice = (int64_t(slot) * HV + h0) * K * V + 2 * t * V + vb + 4 * g;
  const S* const s0 = static_cast<const S*>(pool.checkpoint) + slice;
  const auto slice_rows = [&](int q) { return s0 + (q / kTcSteps) * (K * V) + 8 * (q % kTcSteps) * V; };
  Stored4<S> ring[kInFlight][2];
#pragma unroll
  for (int q = 0; q < kInFlight; ++q) {
    ring[q][0] = load_stored4<M>(slice_rows(q));
    ring[q][1] = load_stored4<M>(slice_rows(q) + V);
  }
  pdl_wait();
  pdl_launch_dependents();

  // What does not depend on the buffer is requested before its fill is known, so that the latencies overlap: this
  // thread's gate inputs (threads 0 .. HPC M - 1: head h0 + c / M, draft c % M) and this warp's drafts' raw keys and
  // queries (drafts warp, warp + kTcWarps, ...).
  constexpr int kDraftsPerWarp = (M + kTcWarps - 1) / kTcWarps;
  GateInputs gate_in;
  if (threadIdx.x < HPC * M)
    gate_in = load_gate_inputs(p.in, int64_t(row) * M + threadIdx.x % M, h0 + threadIdx.x / M, HV);
  WarpVecBf16<K> draft_q[kDraftsPerWarp], draft_k[kDraftsPerWarp];
#pragma unroll
  for (int r = 0; r < kDraftsPerWarp; ++r)
    if (warp + kTcWarps * r < M) {
      const int64_t tok = int64_t(row) * M + warp + kTcWarps * r;
      draft_q[r].load(p.in.q + (tok * H + hk) * K, lane);
      draft_k[r].load(p.in.k + (tok * H + hk) * K, lane);
    }

  // Committed entries; n >= B: due, folded into the checkpoint here (KVBufferVerifyParams).
  const int n = min(max(p.row_order ? ordered.fill : pool.fill[slot], 0), cap);
  const bool flush = n >= pool.buffer_size;
  const int64_t e0 = int64_t(slot) * cap;
  const int64_t draft_entry = e0 + (flush ? 0 : n);  // the drafts' first buffer entry
  const int64_t delta_stride = int64_t(HV) * V;
  // This lane's columns of head h0 + hh's entry j's delta (rows 8c + 2t and + 1 of chunk c, as the checkpoint's).
  const float* const deltas = pool.fp32_deltas() + (e0 * HV + h0) * V + vb + 4 * g;
  const auto load_delta = [&](int hh, int j) {
    return j < n ? load4_nc(deltas + hh * V + j * delta_stride) : make_float4(0.f, 0.f, 0.f, 0.f);
  };

  uint32_t* const xmat = reinterpret_cast<uint32_t*>(smem + lay.x);
  uint32_t* const bbmat = reinterpret_cast<uint32_t*>(smem + lay.bb);
  bf16* const keys = reinterpret_cast<bf16*>(smem + lay.keys);
  float* const kp = reinterpret_cast<float*>(smem + lay.kp);
  bf16(*const vals)[M][V] = reinterpret_cast<bf16(*)[M][V]>(smem + lay.vals);
  float* const lg = reinterpret_cast<float*>(smem + lay.g);   // [HPC][rows]
  float* const lw = reinterpret_cast<float*>(smem + lay.w);   // [HPC][rows]
  float* const rk = reinterpret_cast<float*>(smem + lay.rk);  // [rows]
  float* const decay0s = reinterpret_cast<float*>(smem + lay.decay0);

  // The entries' raw keys and log-decays, the drafts' raw keys (rows `rows` on) and values: copied while the
  // drafts are normalised.
  {
    constexpr int kChunks = K / 8;  // 16-byte pieces of one key
    for (int c = threadIdx.x; c < (n + M) * kChunks; c += kTcThreads) {
      const int r = c / kChunks, part = c % kChunks;
      const bf16* src = r < n ? pool.keys + ((e0 + r) * H + hk) * K
                              : p.in.k + ((int64_t(row) * M + (r - n)) * H + hk) * K;
      cp_async16(keys + (r < n ? r : rows + r - n) * KEYP + part * 8, src + part * 8, true);
    }
    for (int c = threadIdx.x; c < HPC * n; c += kTcThreads) {
      const int hh = c / n, j = c % n;
      cp_async4(lg + hh * rows + j, pool.log_decay + (e0 + j) * HV + h0 + hh);
    }
    for (int hh = 0; hh < HPC; ++hh) load_draft_values_async<V>(p.in.v, row, M, HV, h0 + hh, V, 0, vals[hh]);
    cp_async_commit();
  }

  // The drafts' gates, one thread each; a row that is not due writes their log-decays past its entries (no block
  // reads there).
  static_assert(HPC * M <= kTcThreads, "one thread a draft and value head");
  if (threadIdx.x < HPC * M) {
    const int hh = threadIdx.x / M, i = threadIdx.x % M;
    const Gate gate = form_gate(p.in, gate_in);
    sh.g[hh][i] = gate.g;
    sh.beta[hh][i] = gate.beta;
    if (!flush) pool.log_decay[(draft_entry + i) * HV + h0 + hh] = gate.g;
  }
  // The drafts (warp w: drafts w, w + 4) into x, split, and 1 / |k_i|; a row that is not due writes their raw keys
  // past its entries (the key group's first block).
  const bool write_keys = !flush && h0 % group == 0;
#pragma unroll
  for (int r = 0; r < kDraftsPerWarp; ++r) {
    const int i = warp + kTcWarps * r;
    if (i >= M) break;
    const WarpVec<K> qv = draft_q[r].widen(), kv = draft_k[r].widen();
    if (write_keys) {
      bf16* dst = pool.keys + ((draft_entry + i) * H + hk) * K + lane * WarpVec<K>::N;
#pragma unroll
      for (int e = 0; e < WarpVec<K>::N; ++e) dst[e] = __float2bfloat16_rn(kv.x[e]);  // exact: loaded from bf16
    }
    const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
    static_assert(WarpVec<K>::N == 4, "a lane's rows of x are one put_b4");
    const float kx[4] = {kv.x[0] * nrm.rk, kv.x[1] * nrm.rk, kv.x[2] * nrm.rk, kv.x[3] * nrm.rk};
    const float qx[4] = {qv.x[0] * nrm.rq, qv.x[1] * nrm.rq, qv.x[2] * nrm.rq, qv.x[3] * nrm.rq};
    put_b4(xmat, XP, i, 4 * lane, kx);
    put_b4(xmat, XP, Q0 + i, 4 * lane, qx);
    if (lane == 0) sh.rk[i] = nrm.rk;
  }
  cp_async_wait_all();
  __syncthreads();  // x, keys, log-decays, values, gates in shared memory

  // A due row has read the pool's keys for the last time (they are in shared memory): it counts its heads' arrival
  // in its key group; the last block writes the drafts' keys over entries 0 .. m - 1 at the end.
  if (flush && threadIdx.x == 0)
    sh.due_last = last_in_key_group(p, row, hk, atomicAdd(key_group_arrivals(p, row, hk), HPC) + HPC - 1, 1);
  // Each head's decay weights (warp 3 - hh) and the drafts' decays.
  if (warp >= kTcWarps - HPC) {
    const int hh = kTcWarps - 1 - warp;
    BufferSmem<K> bs;  // the fields buffer_weights reads and writes
    bs.g = lg + hh * rows;
    bs.w = lw + hh * rows;
    bs.decay0 = decay0s + hh;
    buffer_weights<K>(n, 0.f, bs);
    if (lane == 0) {
      float gsum = 0.f;
#pragma unroll
      for (int i = 0; i < M; ++i) {
        gsum += sh.g[hh][i];
        sh.D[hh][i] = expf(gsum);
      }
    }
  }
  // The raw keys' products with x, kp[r][c] = k_r . x_c (16-row tiles of the key rows x 8-column tiles; bf16 keys are
  // exact in TF32, so two products, with x's hi and lo, into two accumulators for the even and odd k-steps), and, in
  // the first column tile, 1 / |k_j|. One task is a tile pair; a warp takes tasks warp, warp + 4, ...
  const int key_tasks = lay.key_rows / 16 * NT;
  float kc[2][4], sq0, sq1;
  int kmt, knt, krow, kcol;  // the task's tiles; this lane's word of k-step 0 in keys (row g) and in x
  const uint32_t* const key_words = reinterpret_cast<const uint32_t*>(keys);
  const uint4* const x_words = reinterpret_cast<const uint4*>(xmat);
  const auto key_begin = [&](int task) {
    kmt = task / NT;
    knt = task % NT;
#pragma unroll
    for (int e = 0; e < 4; ++e) kc[0][e] = kc[1][e] = 0.f;
    sq0 = sq1 = 0.f;
    krow = (16 * kmt + g) * KEYP / 2 + t;
    kcol = (8 * knt + g) * XP / 2 + t;
  };
  // k-step s of the task into accumulator `which` (0 where other work hides the products' latency, else s & 1).
  const auto key_step = [&](int s, int which) {
    // rows g, g + 8: elements 8s + 2t (low half), + 1
    const uint32_t w0 = key_words[krow + 4 * s], w1 = key_words[krow + 4 * KEYP + 4 * s];
    const uint32_t a[4] = {w0 << 16, w1 << 16, w0 & 0xffff0000u, w1 & 0xffff0000u};
    const uint4 b = x_words[kcol + 4 * s];
    mma_tf32(kc[which], a, b.x, b.y);
    mma_tf32(kc[which], a, b.z, b.w);
    if (knt == 0) {
      const float f0 = __uint_as_float(a[0]), f1 = __uint_as_float(a[1]), f2 = __uint_as_float(a[2]),
                  f3 = __uint_as_float(a[3]);
      sq0 = fmaf(f0, f0, fmaf(f2, f2, sq0));
      sq1 = fmaf(f1, f1, fmaf(f3, f3, sq1));
    }
  };
  const auto key_end = [&]() {
    float* const r0 = kp + (16 * kmt + g) * KPP + 8 * knt + 2 * t;
    r0[0] = kc[0][0] + kc[1][0];
    r0[1] = kc[0][1] + kc[1][1];
    r0[8 * KPP] = kc[0][2] + kc[1][2];
    r0[8 * KPP + 1] = kc[0][3] + kc[1][3];
    if (knt == 0) {
      sq0 += __shfl_xor_sync(0xffffffffu, sq0, 1);
      sq0 += __shfl_xor_sync(0xffffffffu, sq0, 2);
      sq1 += __shfl_xor_sync(0xffffffffu, sq1, 1);
      sq1 += __shfl_xor_sync(0xffffffffu, sq1, 2);
      const int j = 16 * kmt + g;
      if (t == 0 && j < n) rk[j] = rsqrtf(sq0 + kL2NormEps);
      if (t == 0 && j + 8 < n) rk[j + 8] = rsqrtf(sq1 + kL2NormEps);
    }
  };
  const auto key_task = [&](int task) {
    key_begin(task);
#pragma unroll 4
    for (int s = 0; s < kTcSteps; ++s) key_step(s, s & 1);
    key_end();
  };

  // The products over the stacked [S; u] (below): acc[nt][T] is the 16 x 8 tile T (rows g, g + 8: columns
  // vb + 4 g + 2 T and + 1) x product columns 8 nt .. 8 nt + 7. Row r (even) starts a k-step: rows r + 2t, r + 2t + 1.
  float acc[NT][2][4];
  const auto zero_acc = [&]() {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int T = 0; T < 2; ++T)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][T][e] = 0.f;
  };
  const auto product = [&](const Tf32A& a0, const Tf32A& a1, const uint4* const (&cols)[NT], int r) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint4 b = cols[nt][r / 2];
      mma_3xtf32(acc[nt][0], a0, {b.x, b.z}, {b.y, b.w});
      mma_3xtf32(acc[nt][1], a1, {b.x, b.z}, {b.y, b.w});
    }
  };
  // The same with A exact in TF32 (bf16 checkpoint values).
  const auto product_exact = [&](const uint32_t(&a0)[4], const uint32_t(&a1)[4], const uint4* const(&cols)[NT],
                                 int r) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint4 b = cols[nt][r / 2];
      mma_2xtf32(acc[nt][0], a0, {b.x, b.z}, {b.y, b.w});
      mma_2xtf32(acc[nt][1], a1, {b.x, b.z}, {b.y, b.w});
    }
  };
  const uint4* xcol[NT];  // this lane's word of k-step 0 in each column tile of x
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) xcol[nt] = x_words + (8 * nt + g) * XP / 2 + t;
  // The products over the checkpoint's rows 8 s + 2t and + 1 (this lane's x0, x1 as stored).
  const auto slice_product = [&](const Stored4<S>& x0, const Stored4<S>& x1, int s) {
    if constexpr (kFp32) {
      product(split_a(x0.x, x0.y, x1.x, x1.y), split_a(x0.z, x0.w, x1.z, x1.w), xcol, 8 * s);
    } else {
      uint32_t a0[4], a1[4];
      bf16_a(x0.x, x1.x, a0);
      bf16_a(x0.y, x1.y, a1);
      product_exact(a0, a1, xcol, 8 * s);
    }
  };
  // k-step s of head hh (s known at compile time, hh not: a due row's heads share one copy of the code) from ring
  // slot s % kInFlight, which then requests the k-step kInFlight on, of this head or the next (the first test is
  // settled at compile time, the second only past the head's last kInFlight k-steps).
  const auto next_slice_step = [&](int hh, int s, Stored4<S>& x0, Stored4<S>& x1) {
    const int slot = s % kInFlight, q = hh * kTcSteps + s;
    x0 = ring[slot][0];
    x1 = ring[slot][1];
    if (s + kInFlight < kTcSteps || q + kInFlight < HPC * kTcSteps) {
      ring[slot][0] = load_stored4<M>(slice_rows(q + kInFlight));
      ring[slot][1] = load_stored4<M>(slice_rows(q + kInFlight) + V);
    }
  };
  // After a head's last k-step the next head's k-step j lies in slot (kTcSteps + j) % kInFlight: moved to slot j.
  const auto ring_to_next_head = [&]() {
    constexpr int kShift = kTcSteps % kInFlight;
    if constexpr (kShift != 0) {
      Stored4<S> was[kInFlight][2];
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        was[j][0] = ring[j][0];
        was[j][1] = ring[j][1];
      }
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        ring[j][0] = was[(j + kShift) % kInFlight][0];
        ring[j][1] = was[(j + kShift) % kInFlight][1];
      }
    }
  };
  const auto load_chunk = [&](int hh, int c, float4& x0, float4& x1) {
    x0 = load_delta(hh, 8 * c + 2 * t);
    x1 = load_delta(hh, 8 * c + 2 * t + 1);
  };
  // A row that is not due: S0^T over head hh's checkpoint rows into acc, chunk 0 of its buffered deltas requested
  // kInFlight k-steps before the end (into c0); each_step(s) runs after k-step s.
  float4 c0[2];
  const auto checkpoint_pass = [&](int hh, auto&& each_step) {
    zero_acc();
#pragma unroll
    for (int s = 0; s < kTcSteps; ++s) {
      Stored4<S> x0, x1;
      next_slice_step(hh, s, x0, x1);
      if (s == kTcSteps - kInFlight) load_chunk(hh, 0, c0[0], c0[1]);
      slice_product(x0, x1, s);
      each_step(s);
    }
  };
  if (flush || !tc_interleaves<M>()) {
    for (int task = warp; task < key_tasks; task += kTcWarps) key_task(task);
  } else {
    // The first head's pass needs only x: it runs now, with this warp's first task of key products interleaved,
    // so that the slice streams while they are formed.
    const bool first_task = warp < key_tasks;
    if (first_task) key_begin(warp);
    checkpoint_pass(0, [&](int s) {
      if (first_task) key_step(s, 0);
    });
    if (first_task) key_end();
    for (int task = warp + kTcWarps; task < key_tasks; task += kTcWarps) key_task(task);
  }
  __syncthreads();  // key products, norms, weights in shared memory

  // The drafts' products with each other (per head: their decays differ), then the B rows of the buffer (a row that
  // is not due).
  for (int c = threadIdx.x; c < HPC * M * (M + 1) / 2; c += kTcThreads) {
    const int hh = c / (M * (M + 1) / 2);
    int ip = 0, i = c % (M * (M + 1) / 2);  // earlier draft ip, later draft i
    while (i >= M - ip) i -= M - ip++;
    i += ip;
    float gsum = 0.f;
    for (int l = ip + 1; l <= i; ++l) gsum += sh.g[hh][l];
    const float wr = expf(gsum) * sh.rk[ip];
    const float* const kd = kp + (rows + ip) * KPP;
    sh.kk[hh][ip][i] = ip < i ? wr * kd[i] : 0.f;
    sh.kq[hh][ip][i] = wr * kd[Q0 + i];
  }
  if (!flush) {
    for (int idx = threadIdx.x; idx < HPC * rows * NCOL; idx += kTcThreads) {  // rows fastest: few bank conflicts
      const int j = idx % rows, c = idx / rows % NCOL, hh = idx / (NCOL * rows);
      const int i = c >= Q0 ? c - Q0 : c;
      const float b = j < n && i < M ? lw[hh * rows + j] * rk[j] * kp[j * KPP + c] : 0.f;
      put_b(bbmat, bbp, hh * NCOL + c, j, b);
    }
  }
  __syncthreads();  // B complete, draft coefficients

  float* const tr = reinterpret_cast<float*>(smem + lay.tr) + warp * 32 * TRP;

  // Head hh's products, the drafts' deltas and outputs; kDue: a due row's (the fold inside the pass).
  const auto head = [&](int hh, auto due) {
    constexpr bool kDue = decltype(due)::value;
    const float decay0 = decay0s[hh];
    const float* const wh = lw + hh * rows;
    const int chunks = (n + 7) / 8;
    // A due row's fold weight of entry j, w_j / |k_j| (zero past n).
    const auto due_weight = [&](int j) { return j < n ? wh[j] * rk[j] : 0.f; };
    // Chunk c's deltas (loaded: x0, x1, rows 8c + 2t and + 1) as A fragments; a due row's fold, whose B is the raw
    // key, takes each entry scaled by w_j / |k_j|.
    const auto chunk_a = [&](int c, const float4& x0, const float4& x1, Tf32A& a0, Tf32A& a1) {
      const int j = 8 * c + 2 * t;
      const float w0 = !kDue ? 1.f : due_weight(j);
      const float w1 = !kDue ? 1.f : due_weight(j + 1);
      a0 = split_a(w0 * x0.x, w0 * x0.y, w1 * x1.x, w1 * x1.y);
      a1 = split_a(w0 * x0.z, w0 * x0.w, w1 * x1.z, w1 * x1.w);
    };
    if constexpr (!kDue) {
      // S0 over the checkpoint rows (the first head's pass ran with the key products), e^{G_n} onto the totals,
      // then the buffered deltas.
      if (hh > 0 || !tc_interleaves<M>()) checkpoint_pass(hh, [](int) {});
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int T = 0; T < 2; ++T)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[nt][T][e] *= decay0;
      const uint4* bcol[NT];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        bcol[nt] = reinterpret_cast<const uint4*>(bbmat) + ((hh * NCOL + 8 * nt + g) * bbp) / 2 + t;
      for (int c = 0; c < chunks; ++c) {
        if (c > 0) load_chunk(hh, c, c0[0], c0[1]);
        Tf32A a0, a1;
        chunk_a(c, c0[0], c0[1], a0, a1);
        product(a0, a1, bcol, 8 * c);
      }
    } else {
      // S = e^{G_n} S0 + sum_j (w_j / |k_j| u_j)^T k_j, eight checkpoint rows a k-step, written, then the products'
      // A. The raw keys are exact in TF32 and bf16: two TF32 products a tile and 8 entries (the deltas' hi and lo),
      // or three bf16 ones a tile and 16 entries (tc_fold_bf16).
      zero_acc();
      // The first two chunks, held through the pass: for the bf16 fold (tc_fold_bf16) one A fragment of 16 entries a
      // 16-column tile T in three bf16 parts (m16n8k16: entries 8c + 2t, 8c + 2t + 1 of chunk c in words 2c, 2c + 1
      // of T's columns 2T, 2T + 1), else two split TF32 fragments a chunk.
      [[maybe_unused]] uint32_t heldb[2][3][4];  // [T][hi, mid, lo][word]
      [[maybe_unused]] Tf32A held[kTcHeldChunks][2];
      if constexpr (kFoldBf16) {
#pragma unroll
        for (int c = 0; c < kTcHeldChunks; ++c) {
          float4 x0, x1;
          load_chunk(hh, c, x0, x1);
          const float w0 = due_weight(8 * c + 2 * t), w1 = due_weight(8 * c + 2 * t + 1);
          const float v[2][2][2] = {{{x0.x, x1.x}, {x0.y, x1.y}}, {{x0.z, x1.z}, {x0.w, x1.w}}};  // [T][word][entry]
#pragma unroll
          for (int T = 0; T < 2; ++T)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              const Bf16x3Word a = split_bf16x3(w0 * v[T][r][0], w1 * v[T][r][1]);
              heldb[T][0][2 * c + r] = a.hi;
              heldb[T][1][2 * c + r] = a.mid;
              heldb[T][2][2 * c + r] = a.lo;
            }
        }
      } else {
#pragma unroll
        for (int c = 0; c < kTcHeldChunks; ++c)
          if (c < chunks) {
            float4 x0, x1;
            load_chunk(hh, c, x0, x1);
            chunk_a(c, x0, x1, held[c][0], held[c][1]);
          }
      }
      S* const ck = static_cast<S*>(pool.checkpoint) + slice + hh * (K * V);
      const auto due_step = [&](int s) {
        Stored4<S> stored0, stored1;
        next_slice_step(hh, s, stored0, stored1);
        float4 x0, x1;
        if constexpr (kFp32) {
          x0 = stored0;
          x1 = stored1;
        } else {
          x0 = widen_bf16x4(stored0);
          x1 = widen_bf16x4(stored1);
        }
        float d0[4] = {decay0 * x0.x, decay0 * x1.x, decay0 * x0.y, decay0 * x1.y};
        float d1[4] = {decay0 * x0.z, decay0 * x1.z, decay0 * x0.w, decay0 * x1.w};
        // Entries j of chunk c: into += (w_j / |k_j| u_j)^T k_j over this k-step's rows (A fragments a0, a1).
        const auto fold = [&](float(&into0)[4], float(&into1)[4], const Tf32A& a0, const Tf32A& a1, int c) {
          const unsigned short* const kb = reinterpret_cast<const unsigned short*>(keys + (8 * c + 2 * t) * KEYP);
          const int j = 8 * c + 2 * t;  // rows past n hold no key: zero, not whatever lies there
          const uint32_t b0 = j < n ? uint32_t(kb[8 * s + g]) << 16 : 0u;
          const uint32_t b1 = j + 1 < n ? uint32_t(kb[KEYP + 8 * s + g]) << 16 : 0u;
          mma_tf32(into0, a0.lo, b0, b1);
          mma_tf32(into0, a0.hi, b0, b1);
          mma_tf32(into1, a1.lo, b0, b1);
          mma_tf32(into1, a1.hi, b0, b1);
        };
        // Chunks past the held ones (a longer buffer): loaded and split a k-step.
        const auto fold_rest = [&](float(&into0)[4], float(&into1)[4]) {
          for (int c = kTcHeldChunks; c < chunks; ++c) {
            float4 x0, x1;
            load_chunk(hh, c, x0, x1);
            Tf32A a0, a1;
            chunk_a(c, x0, x1, a0, a1);
            fold(into0, into1, a0, a1, c);
          }
        };
        // The checkpoint's accumulators d and one from zero, e, summed before the store: short chains of dependent
        // products rather than one long one.
        static_assert(kTcHeldChunks == 2, "the held chunks are one 16-entry bf16 fragment, or one TF32 one a chain");
        float e0[4] = {0.f, 0.f, 0.f, 0.f}, e1[4] = {0.f, 0.f, 0.f, 0.f};
        if constexpr (kFoldBf16) {
          // B: the raw keys of entries 2t, 2t + 1 (word 0) and 8 + 2t, 9 + 2t (word 1) at row 8 s + g; zero past n.
          // The small parts first, into e or the checkpoint's chain (tc_fold_one_chain), then hi.
          const unsigned short* const kb = reinterpret_cast<const unsigned short*>(keys + 2 * t * KEYP + 8 * s + g);
          const uint32_t k00 = 2 * t < n ? kb[0] : 0u, k01 = 2 * t + 1 < n ? kb[KEYP] : 0u;
          const uint32_t k10 = 2 * t + 8 < n ? kb[8 * KEYP] : 0u, k11 = 2 * t + 9 < n ? kb[9 * KEYP] : 0u;
          const uint32_t b0 = k00 | k01 << 16, b1 = k10 | k11 << 16;
          float(&small0)[4] = kFoldOneChain ? d0 : e0;
          float(&small1)[4] = kFoldOneChain ? d1 : e1;
          mma_bf16(small0, heldb[0][2], b0, b1);
          mma_bf16(small1, heldb[1][2], b0, b1);
          mma_bf16(small0, heldb[0][1], b0, b1);
          mma_bf16(small1, heldb[1][1], b0, b1);
          mma_bf16(d0, heldb[0][0], b0, b1);
          mma_bf16(d1, heldb[1][0], b0, b1);
          fold_rest(e0, e1);
        } else {
          if (chunks > 0) fold(d0, d1, held[0][0], held[0][1], 0);
          if (chunks > 1) fold(e0, e1, held[1][0], held[1][1], 1);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          d0[e] += e0[e];
          d1[e] += e1[e];
        }
        if constexpr (!kFoldBf16) fold_rest(d0, d1);
        if constexpr (kFp32) {
          __stcs(reinterpret_cast<float4*>(ck + 8 * s * V), make_float4(d0[0], d0[2], d1[0], d1[2]));
          __stcs(reinterpret_cast<float4*>(ck + (8 * s + 1) * V), make_float4(d0[1], d0[3], d1[1], d1[3]));
          product(split_a(d0[0], d0[2], d0[1], d0[3]), split_a(d1[0], d1[2], d1[1], d1[3]), xcol, 8 * s);
        } else {  // rounded where stored; the drafts take the stored values
          const uint2 r0 = make_uint2(pack_bf16x2(d0[0], d0[2]), pack_bf16x2(d1[0], d1[2]));
          const uint2 r1 = make_uint2(pack_bf16x2(d0[1], d0[3]), pack_bf16x2(d1[1], d1[3]));
          __stcs(reinterpret_cast<uint2*>(ck + 8 * s * V), r0);
          __stcs(reinterpret_cast<uint2*>(ck + (8 * s + 1) * V), r1);
          slice_product(r0, r1, s);
        }
      };
#pragma unroll
      for (int s = 0; s < kTcSteps; ++s) due_step(s);
    }

    // Each lane takes one value column, vb + lane, with every product column (through the warp's own rows of tr).
    __syncwarp();  // the previous head's reads of tr are done
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int T = 0; T < 2; ++T) {
        float* const r0 = tr + (4 * g + 2 * T) * TRP + 8 * nt + 2 * t;
        *reinterpret_cast<float2*>(r0) = make_float2(acc[nt][T][0], acc[nt][T][1]);
        *reinterpret_cast<float2*>(r0 + TRP) = make_float2(acc[nt][T][2], acc[nt][T][3]);
      }
    __syncwarp();
    const float* const x = tr + lane * TRP;
    const int v = vb + lane, h = h0 + hh;
    float u[M];
    draft_deltas<M>(
        sh.kk[hh], sh.beta[hh], [&](int i) { return sh.D[hh][i] * x[i]; },
        [&](int i) { return __bfloat162float(vals[hh][i][v]); }, u);
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float o = sh.D[hh][i] * x[Q0 + i];
#pragma unroll
      for (int ip = 0; ip <= i; ++ip) o = fmaf(sh.kq[hh][ip][i], u[ip], o);
      store_output1(p.o, p.o_dtype, ((int64_t(row) * M + i) * HV + h) * V + v, o);
    }
    // The drafts' deltas: past the entries (nothing reads there), or over a due row's entries 0 .. m - 1, which every
    // lane of this warp has read (the fold), and only this warp reads (its columns of this head).
    __syncwarp();
    float* const draft_deltas_out = pool.fp32_deltas() + (draft_entry * HV + h) * V + v;
#pragma unroll
    for (int i = 0; i < M; ++i) draft_deltas_out[i * delta_stride] = u[i];
    if (hh + 1 < HPC) ring_to_next_head();
  };
  if (!flush) {
#pragma unroll
    for (int hh = 0; hh < HPC; ++hh) head(hh, std::false_type{});
  } else {
    // A due row's heads share one copy of its code (fold, stores and products a k-step): unrolled, its two copies
    // beside those of the rows that are not due overflow the instruction cache.
#pragma unroll 1
    for (int hh = 0; hh < HPC; ++hh) head(hh, std::true_type{});
  }
  if (flush && sh.due_last && warp == kTcWarps - 1) {  // every block of the key group has read its entries
    __threadfence();
    write_draft_entries(p, row, draft_entry, M, hk, lane, 32);
  }
}

template <int M, int HPC, typename S>
cudaError_t launch_tc(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  const auto kernel = kvbuffer_verify_tc_kernel<M, HPC, S>;
  const size_t smem = TcLayout<M, HPC>(p.pool.capacity).bytes;
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  if (describe) {
    describe->kernel = VerifyKernel::tensor_cores;
    describe->smem_bytes = smem + sizeof(TcShared<M, HPC>);
    describe->predicted_blocks_per_sm = std::min(kTcMinBlocks, smem_blocks_per_sm(describe->smem_bytes));
    describe->blocks_per_row = p.shape.heads_v / HPC;
    return resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), kTcThreads, smem,
                                  describe->resident_blocks_per_sm);
  }
  return launch_kernel(kernel, dim3(p.shape.heads_v / HPC, p.batch), dim3(kTcThreads), smem, stream, p.pdl, p);
}

/// Two value heads a block where the key group's heads pair up, one otherwise; the checkpoint's element type.
template <int M>
cudaError_t launch_tc_drafts(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  const bool pairs = p.shape.group() % 2 == 0;
  if (p.pool.state_dtype == StateDtype::bf16)
    return pairs ? launch_tc<M, 2, bf16>(p, stream, describe) : launch_tc<M, 1, bf16>(p, stream, describe);
  return pairs ? launch_tc<M, 2, float>(p, stream, describe) : launch_tc<M, 1, float>(p, stream, describe);
}

}  // namespace

std::string validate_tensor_core_verify(const KVBufferVerifyParams& p) {
  if (p.shape.head_dim_k != kTcK || p.shape.head_dim_v != kTcV)
    return "kernel = tensor_cores takes head_dim_k = head_dim_v = " + std::to_string(kTcK) + " (got " +
           std::to_string(p.shape.head_dim_k) + " x " +
           std::to_string(p.shape.head_dim_v) + "; allowed elsewhere: kernel = cuda_cores)";
  if (!p.tile.is_auto())
    return "tile = " + to_string(p.tile) + ": kernel = tensor_cores has one block shape (allowed: tile = auto)";
  return "";
}

cudaError_t launch_tensor_core_verify(const KVBufferVerifyParams& p, cudaStream_t stream,
                                      KVBufferVerifyLaunch* describe) {
  return with_draft_tokens(p.in.tokens,
                           [&](auto m) { return launch_tc_drafts<decltype(m)::value>(p, stream, describe); });
}

}  // namespace kvb
