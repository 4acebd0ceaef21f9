// KVBuffer speculative verification and accept (DESIGN.md section 3), delta form, with the flush folded into verify.
// Verify: the m drafts of a row, at positions n + 1 .. n + m after the checkpoint, with w_ij = e^{G_i - G_j}:
//   a_i = e^{G_i} S0^T k^_i + sum_{j<=n} w_ij (k^_j . k^_i) u_j          (one pass over S0 and the buffer for all i)
//   u_i = beta_i (v_i - a_i - sum_{i'<i} w_ii' (k^_i' . k^_i) u_i')       (the small triangular dependency)
//   o_i = e^{G_i} S0^T q^_i + sum_{j<=n} w_ij (k^_j . q^_i) u_j + sum_{i'<=i} w_ii' (k^_i' . q^_i) u_i'
// u_i, exact for any accepted prefix, goes straight to the slot's buffer at position base + i (base = n, or 0 when the
// row is due: n >= B, when verify also folds its n entries into the checkpoint from the slice it has read anyway).
// The drafts' keys and log-decays join them (for a due row, written by the last block of each key group to finish
// reading), so accept is only the buffer position moving (launch_kvbuffer_commit_accepted); rejection costs nothing.
// Grid: (V slices, HV, N).
#include <cstddef>
#include <string>

#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"
#include "kernels/kvbuffer_verify_device.cuh"
#include "kernels/launch_util.h"
#include "kernels/pdl.cuh"
#include "kernels/verify_launch.h"

namespace kvb {
namespace {

using namespace dev;

/// The drafts of one (row, value head) in shared memory: normalised keys and queries (q^ includes the scale) stored
/// by row subgroup, khat[i][slot(r % 8)][r / 8] = k^_i[r]: a lane of the pass reads the coefficients of its rows
/// r = sub, sub + 8, ... four at a time, and the two subgroups a quarter warp reads hit distinct banks. Two layouts:
/// - padded (the default): rows in order, padded by 4 floats;
/// - packed (kPacked, K <= 128): rows unpadded, 1 KB less at 4 drafts, so that the keys of a buffer of 16 fit beside
///   a 4-draft block of 128 columns at three blocks per SM. Subgroups 4 and 5, 6 and 7 swap places (slot): at
///   K = 128 that puts in opposite bank halves both the two subgroups a quarter warp of the pass reads and the
///   subgroups s and s + 4 that a warp-vector read of a draft (lane l at rows 4 l .. 4 l + 3) meets, and at K = 64
///   it spreads the four subgroups of such a read over distinct banks too. Packed rows cost more registers than
///   padded ones, so the launcher packs only where that keeps the keys in shared memory (launch_verify_tile).
/// Then gates, D[i] = e^{g_0 + ... + g_i}, and the draft-draft coefficients kk[i'][i] = w_ii' (k^_i' . k^_i) (i' < i)
/// and kq[i'][i] = w_ii' (k^_i' . q^_i) (i' <= i); and the drafts' value slices v[i][c] (bf16, the block's VB
/// columns). Once the coefficients are formed, khat and qhat are scaled in place by the checkpoint's decay
/// e^{G_n} D[i] for the pass, and after it they hold the drafts' parked deltas. With the two ints of
/// kVerifyStaticScalars, the kernel's whole static shared memory, so its size is known to the launcher without
/// asking the driver.
template <int K, int VB, int M, bool kPacked = false>
struct DraftSmem {
  /// Row subgroups, and floats from one subgroup's row to the next.
  static constexpr int kSubs = 8, kPitch = K / kSubs + (kPacked ? 0 : 4);
  static_assert(K % 32 == 0, "DraftSmem: K must be a multiple of 32");
  static_assert(!kPacked || K <= 128, "DraftSmem: packed rows up to K = 128 (a row of 256 / 8 spans every bank)");
  __align__(16) float khat[M][kSubs][kPitch];
  __align__(16) float qhat[M][kSubs][kPitch];
  __align__(16) bf16 v[M][VB];
  float g[M], beta[M], D[M];
  float kk[M][M], kq[M][M];
  /// Where subgroup sub's row lies: packed, subgroups 4 and 5, 6 and 7 swapped.
  __device__ __forceinline__ static int slot(int sub) { return kPacked ? sub ^ ((sub >> 2) & 1) : sub; }
  __device__ __forceinline__ float& k_at(int i, int r) { return khat[i][slot(r % kSubs)][r / kSubs]; }
  /// Draft i's deltas for float4 column c of the block, parked over khat and qhat once every warp is done with them.
  __device__ __forceinline__ float4& parked(int i, int c) {
    return reinterpret_cast<float4*>(&khat[0][0][0])[i * (VB / 4) + c];
  }
  static_assert(2 * sizeof(float) * kSubs * kPitch >= sizeof(float) * VB, "DraftSmem: no room to park the deltas");
  __device__ __forceinline__ float& q_at(int i, int r) { return qhat[i][slot(r % kSubs)][r / kSubs]; }
};
/// The verify kernel's static shared memory besides DraftSmem: due_last (kvbuffer_verify_kernel) and last
/// (write_due_draft_entries), one int each, which take 16 bytes beside DraftSmem's 16-byte alignment (`ptxas -v`
/// reports sizeof(DraftSmem) + 16 bytes for every verify kernel).
constexpr size_t kVerifyStaticScalars = 16;

/// Verify pass layout: the block covers VB columns of one (row, value head) with VB / 16 warps; warp w owns the 16
/// columns [v0 + 16 w, v0 + 16 w + 16) over every state row, lane = 4 sub + cg holds 4 of them (cg) and the rows
/// sub, sub + 8, sub + 16, ... Partial sums therefore meet inside one warp (reduce_scatter: three exchange rounds, no
/// block barrier), and a step reads four consecutive coefficients per row subgroup (one float4 per draft).
/// Every thread of the block is one of these lanes: the block has exactly THREADS threads.
template <int VB>
struct VerifyLanes {
  static constexpr int THREADS = VB / 16 * 32;
  static constexpr int SUBS = 8;  ///< row subgroups per warp
  int c4;       ///< float4 column of this lane inside the tile
  int sub;      ///< row subgroup
  int col;      ///< first column of this lane in the whole V
  bool active;  ///< col < V
  __device__ __forceinline__ VerifyLanes(int v0, int V) {
    const int lane = threadIdx.x % 32;
    c4 = (threadIdx.x / 32) * 4 + lane % 4;
    sub = lane / 4;
    col = v0 + 4 * c4;
    active = col < V;
  }
  /// Which of the totals reduce_scatter leaves a lane: kind 0 (a, from ak) or 1 (o, from aq) of column c (0 to 3)
  /// among its four, for every draft. Lane bit 4 picks the kind, bits 3 and 2 the column: 2 bit 3 + bit 2 (that is,
  /// sub >> 2 and sub & 3, read straight from the lane as reduce_scatter's exchanges are).
  __device__ __forceinline__ static int kind() { return (threadIdx.x >> 4) & 1; }
  __device__ __forceinline__ static int column() { return (threadIdx.x >> 2) & 3; }
  /// Sums ak and aq ([M][4]: drafts x this lane's columns) over the warp's 8 row subgroups, splitting the totals: each
  /// lane of a column group keeps the M totals of its kind() and column() (x[i]). Three exchange rounds of halves,
  /// 4 M + 2 M + M shuffles in all instead of 24 M for every lane to get every total.
  template <int M>
  __device__ __forceinline__ static void reduce_scatter(const float (&ak)[M][4], const float (&aq)[M][4],
                                                        float (&x)[M]) {
    const bool b4 = threadIdx.x & 16, b3 = threadIdx.x & 8, b2 = threadIdx.x & 4;
    float r1[4][M];  // the kind this lane keeps, all four columns
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int i = 0; i < M; ++i) {
        const float keep = b4 ? aq[i][c] : ak[i][c], send = b4 ? ak[i][c] : aq[i][c];
        r1[c][i] = keep + __shfl_xor_sync(0xffffffffu, send, 16);
      }
    float r2[2][M];  // columns 2 b3 + {0, 1}
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int i = 0; i < M; ++i) {
        const float keep = b3 ? r1[2 + c][i] : r1[c][i], send = b3 ? r1[c][i] : r1[2 + c][i];
        r2[c][i] = keep + __shfl_xor_sync(0xffffffffu, send, 8);
      }
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const float keep = b2 ? r2[1][i] : r2[0][i], send = b2 ? r2[0][i] : r2[1][i];
      x[i] = keep + __shfl_xor_sync(0xffffffffu, send, 4);
    }
  }
};

/// Shared-memory tile of the checkpoint slice (rows [0, K)), VB columns as VB / 4 float4 per row. Row r keeps its
/// float4 columns XOR-swizzled by (r & 1) * 4, so that the two row subgroups of a quarter warp (one even, one odd
/// row) read 8 distinct bank groups. Only the checkpoint is staged here: each buffered delta is read by the one lane
/// that uses it, and the keys are staged only where that costs no block per SM, so that a block of 128 columns and
/// up to 4 drafts stays under 76 KB (three blocks per SM) at every buffer size up to 64.
/// The slice is copied in CHUNKS chunks of 32 rows, one cp.async group each, so that the pass over a chunk starts as
/// soon as it has landed while the later ones still stream.
template <int K, int VB>
struct VerifyTile {
  static constexpr int CG = VB / 4;
  static constexpr int CHUNK_ROWS = 32, CHUNKS = K / CHUNK_ROWS;  ///< rows of one copy group; copy groups
  static constexpr int STEP = VerifyLanes<VB>::THREADS / CG;      ///< rows one copy instruction covers block-wide
  static_assert(CG % 8 == 0, "VerifyTile: VB must be a multiple of 32");
  static_assert(K % CHUNK_ROWS == 0 && CHUNK_ROWS % STEP == 0 && STEP % 2 == 0, "VerifyTile: unsupported K x VB");
  static constexpr size_t kBytes = size_t(K) * VB * sizeof(float);
  float4* sm;
  __device__ __forceinline__ float4& at(int r, int c) const { return sm[r * CG + (c ^ ((r & 1) << 2))]; }
  /// Starts copying the checkpoint slice: columns [v0, v0 + VB) of matrix m ([K][V]), masked at V (zero-filled), and
  /// commits one cp.async group per chunk of CHUNK_ROWS rows. Thread t copies float4 column t % CG of rows
  /// t / CG + STEP i: one row parity (the same swizzle) and constant strides, so each copy is one instruction and an
  /// address add. Every thread of the block calls it.
  __device__ __forceinline__ void load_chunks_async(const float* __restrict__ m, int v0, int V) const {
    const int c = threadIdx.x % CG, r0 = threadIdx.x / CG, col = v0 + 4 * c;
    const bool ok = col < V;
    const float* src = m + int64_t(r0) * V + (ok ? col : 0);
    float4* dst = &at(r0, c);
#pragma unroll
    for (int chunk = 0; chunk < CHUNKS; ++chunk) {
#pragma unroll
      for (int i = 0; i < CHUNK_ROWS / STEP; ++i) {
        const int r = chunk * CHUNK_ROWS + i * STEP;  // this thread's row r0 + r
        cp_async16(dst + r * CG, src + int64_t(r) * V, ok);
      }
      cp_async_commit();
    }
  }
};

/// The flush of a due row inside verify, from the checkpoint slice already in the tile: columns [v0, v0 + VB) of
/// m ([K][V]) <- decay S + sum_{j<n} w_j k^_j u_j^T. Thread t owns float4 column t % (VB / 4) of 8-row bands
/// t / (VB / 4), t / (VB / 4) + THREADS / (VB / 4), ..., a round of THREADS / (VB / 4) bands at a time. Once the
/// first round's rows are in registers, their tile rows are free: the n deltas u_j (deltas: entry 0 of this slot
/// and value head, entries delta_stride apart) are copied there in one go, one entry per freed row. Every entry is
/// thus fetched once, all in flight together, instead of one round trip after another per entry and band. After
/// them, when they fit, go the keys scaled by their weights, w_j k_j / |k_j| in fp32 (formed once per block, so that
/// a band's entry costs three float4 reads, two of key and one of delta, and its FMAs); else, the raw keys when bs
/// reads them from the pool (told apart by
/// their pool stride H x K, so not with one key head) and they fit. With more entries than freed rows (64 at
/// K >= 64, 32 at K = 32) the fold reads the deltas from the pool.
/// Masked columns are zero-filled and not written; the checkpoint is written once, streaming. Every thread of the
/// block must call it (it holds barriers).
template <int K, int VB>
__device__ __forceinline__ void fold_verify_tile(const VerifyTile<K, VB>& tile, const BufferSmem<K>& bs, int n,
                                                 float decay, const float* __restrict__ deltas, int64_t delta_stride,
                                                 float* __restrict__ m, int v0, int V) {
  constexpr int CG = VB / 4, ROWS = 8, BANDS = K / ROWS, THREADS = VerifyLanes<VB>::THREADS;
  constexpr int PER_ROUND = THREADS / CG, ROUNDS = (BANDS + PER_ROUND - 1) / PER_ROUND;
  constexpr int FREED = (PER_ROUND < BANDS ? PER_ROUND : BANDS) * ROWS;  // tile rows free after round 0's loads
  static_assert(K % ROWS == 0 && THREADS % CG == 0, "fold_verify_tile: unsupported K x VB");
  const int cg = threadIdx.x % CG, col = v0 + 4 * cg;
  const bool active = col < V;
  float4* const freed = tile.sm;     // rows [0, FREED), unswizzled: entry j's deltas at freed[j * CG + c]
  constexpr int KEY_CHUNKS = K / 8;  // 16-byte pieces of one raw key
  // Entries whose deltas are staged: all of them, or none past FREED; after them the scaled keys ks ([n][K] fp32)
  // when they fit, else raw keys read from the pool when those fit.
  const int staged = n <= FREED ? n : 0;
  const bool scale_keys = n * (CG + K / 4) <= FREED * CG;
  const bool stage_keys = !scale_keys && bs.key_stride != K && n * (CG + KEY_CHUNKS) <= FREED * CG;
  float4* const after_deltas = freed + n * CG;  // the scaled or raw keys, when staged
  float* const ks = reinterpret_cast<float*>(after_deltas);
  BufferSmem<K> fs = bs;  // bs, with the keys where the fold reads them
  if (stage_keys) {
    fs.keys = reinterpret_cast<bf16*>(after_deltas);
    fs.key_stride = K;
  }
#pragma unroll 1
  for (int round = 0; round < ROUNDS; ++round) {
    const int band = round * PER_ROUND + int(threadIdx.x) / CG, r0 = band * ROWS;
    const bool has_band = band < BANDS;
    float4 s[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const float4 x = has_band ? tile.at(r0 + i, cg) : make_float4(0.f, 0.f, 0.f, 0.f);
      s[i] = make_float4(decay * x.x, decay * x.y, decay * x.z, decay * x.w);
    }
    if (round == 0) {
      __syncthreads();  // round 0's rows are in registers: tile rows [0, FREED) are free
      for (int idx = threadIdx.x; idx < staged * CG; idx += THREADS) {
        const int j = idx / CG, c = idx % CG, cc = v0 + 4 * c;
        cp_async16(freed + idx, deltas + j * delta_stride + (cc < V ? cc : 0), cc < V);
      }
      if (stage_keys)
        for (int idx = threadIdx.x; idx < n * KEY_CHUNKS; idx += THREADS) {
          const int j = idx / KEY_CHUNKS, part = idx % KEY_CHUNKS;
          cp_async16(fs.keys + j * K + part * 8, bs.key(j) + part * 8, true);
        }
      cp_async_commit();
      if (scale_keys)
        for (int idx = threadIdx.x; idx < n * KEY_CHUNKS; idx += THREADS) {
          const int j = idx / KEY_CHUNKS, part = idx % KEY_CHUNKS;
          float kr[8];
          load_bf16<8>(bs.key(j) + part * 8, kr);
          const float wj = bs.w[j] * bs.rk[j];
          float4* dst = reinterpret_cast<float4*>(ks + j * K + part * 8);
          dst[0] = make_float4(kr[0] * wj, kr[1] * wj, kr[2] * wj, kr[3] * wj);
          dst[1] = make_float4(kr[4] * wj, kr[5] * wj, kr[6] * wj, kr[7] * wj);
        }
      cp_async_wait_all();
      __syncthreads();  // staged deltas and keys visible to the block
    }
    if (!has_band) continue;
    if (scale_keys) {
#pragma unroll 2
      for (int j = 0; j < n; ++j) {
        const float4 k0 = *reinterpret_cast<const float4*>(ks + j * K + r0);
        const float4 k1 = *reinterpret_cast<const float4*>(ks + j * K + r0 + 4);
        const float kr[ROWS] = {k0.x, k0.y, k0.z, k0.w, k1.x, k1.y, k1.z, k1.w};
        fma_rows<ROWS>(s, kr, freed[j * CG + cg]);
      }
    } else if (staged == n) {
      fold_entries<ROWS>(s, r0, n, fs, [&](int j) { return freed[j * CG + cg]; });
    } else {
      const float* u = deltas + (active ? col : 0);
      fold_entries<ROWS>(s, r0, n, bs,
                         [&](int j) { return __ldg(reinterpret_cast<const float4*>(u + j * delta_stride)); });
    }
    if (active)
#pragma unroll
      for (int i = 0; i < ROWS; ++i) __stcs(reinterpret_cast<float4*>(m + int64_t(r0 + i) * V + col), s[i]);
  }
}

/// Shared-memory bytes of the verify kernel's BufferSmem for `capacity` entries, with or without the staged keys.
template <int K>
constexpr size_t verify_buffer_bytes(int capacity, bool smem_keys) {
  return smem_keys ? BufferSmem<K>::bytes(capacity) : BufferSmem<K>::values_bytes(capacity);
}

/// Blocks per SM the verify kernel's registers must allow at 128 columns: three for up to 4 drafts (what its shared
/// memory allows, VerifyTile), two above; no bound at narrower slices.
template <int VB, int M>
constexpr int verify_min_blocks() { return VB == 128 ? (M <= 4 ? 3 : 2) : 1; }

/// A due row's drafts' raw keys and log-decays into entries e0 .. e0 + m - 1, which replace entries other blocks of
/// the key group may still be reading from the pool: the last block of the group to get here writes them. Call after
/// a barrier that follows this block's last read of the buffer. (A row that is not due writes its drafts' keys and
/// log-decays as soon as it has them: they land past its entries, where no block reads. With the keys in shared
/// memory the kernel counts its arrival earlier, once its copies of the entries have landed.)
__device__ __forceinline__ void write_due_draft_entries(const KVBufferVerifyParams& p, int row, int64_t e0, int m) {
  __shared__ int last;
  const int hk = blockIdx.y / p.shape.group();
  if (threadIdx.x == 0) {
    __threadfence();
    last = last_in_key_group(p, row, hk, atomicAdd(key_group_arrivals(p, row, hk), 1), int(gridDim.x));
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  write_draft_entries(p, row, e0, m, hk, threadIdx.x, blockDim.x);
}

/// kSmemKeys: the buffer's keys are staged in shared memory (BufferSmem::setup) rather than read from the pool by
/// the warp that uses each (setup_pool_keys); the launcher stages them when that costs no block per SM, packing the
/// drafts' rows (kPacked, DraftSmem) where only that keeps them there.
template <int K, int VB, int M, bool kSmemKeys, bool kPacked>
__global__ void __launch_bounds__(VerifyLanes<VB>::THREADS, verify_min_blocks<VB, M>())
    kvbuffer_verify_kernel(const KVBufferVerifyParams p, int early_blocks) {
  constexpr int THREADS = VerifyLanes<VB>::THREADS, WARPS = THREADS / 32, SUBS = VerifyLanes<VB>::SUBS;
  using Tile = VerifyTile<K, VB>;
  using Drafts = DraftSmem<K, VB, M, kPacked>;
  extern __shared__ __align__(16) char dyn_smem[];  // tile (K rows) | BufferSmem (cap) | dk, dq [M][cap]
  __shared__ Drafts ds;
  // The row: from row_order (written by the kernel before this one, so read after the PDL wait) or in batch order.
  if (p.row_order) pdl_wait();
  const OrderedRow ordered = p.row_order ? p.row_order[blockIdx.z] : OrderedRow{int(blockIdx.z), p.slot[blockIdx.z]};
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = ordered.row;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const KVBufferPool& pool = p.pool;
  const int cap = pool.capacity;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slot = ordered.slot;
  if (slot < 0 || slot >= pool.num_slots) {  // padding: nothing read, outputs zeroed after the PDL wait
    pdl_wait();
    pdl_launch_dependents();
    for (int i = 0; i < M; ++i) zero_output_slice(p.o, p.o_dtype, ((int64_t(row) * M + i) * HV + h) * V, v0, VB, V);
    return;
  }
  Tile tile{reinterpret_cast<float4*>(dyn_smem)};
  const float* s0 = static_cast<const float*>(pool.checkpoint) + (int64_t(slot) * HV + h) * K * V;
  // PDL (kernels/pdl.cuh): a block of the first wave (linear index < early_blocks, the blocks the GPU holds at once)
  // may start while the previous kernel finishes and streams its checkpoint slice before the wait; everything else
  // (buffer positions, entries, drafts) is read after it. Later blocks keep the order below.
  const bool early = pdl_first_wave(early_blocks);
  if (early) tile.load_chunks_async(s0, v0, V);
  pdl_wait();
  pdl_launch_dependents();
  // This warp's first draft's inputs are requested with the buffer position (neither waits for the other).
  DraftInputs<K> first_inputs;
  if (warp < M) first_inputs = load_draft_inputs<K>(p.in, int64_t(row) * M + warp, H, HV, h, hk);
  // Committed entries; n >= B: due, folded into the checkpoint here (KVBufferVerifyParams).
  const int n = min(max(p.row_order ? ordered.fill : pool.fill[slot], 0), cap);
  const bool flush = n >= pool.buffer_size;
  const int64_t draft_entry = int64_t(slot) * cap + (flush ? 0 : n);  // the drafts' first buffer entry

  BufferSmem<K> bs;
  if constexpr (kSmemKeys) bs.setup(dyn_smem + Tile::kBytes, cap);
  else bs.setup_pool_keys(dyn_smem + Tile::kBytes, cap, pool, H, slot, hk);
  float* dk = reinterpret_cast<float*>(dyn_smem + Tile::kBytes + verify_buffer_bytes<K>(cap, kSmemKeys));  // [M][cap]
  float* dq = dk + M * cap;
  // Copy groups: the log-decays (and staged keys) of the n entries and the drafts' values, then the checkpoint
  // slice's chunks (a first-wave PDL block copied them before the wait), which keep streaming while the drafts are
  // normalised, the coefficients formed and the buffer's share summed. Only the n entries held are copied, which
  // needs the position first, so that no byte past them is moved.
  if constexpr (kSmemKeys) bs.load_async(pool, H, HV, slot, h, hk, n);
  else bs.load_log_decay_async(pool, HV, slot, h, n);
  load_draft_values_async<VB>(p.in.v, row, M, HV, h, V, v0, ds.v);
  cp_async_commit();
  if (!early) tile.load_chunks_async(s0, v0, V);
  // This lane's buffered deltas u_j, j = sub, sub + 8, ... (each read by this lane alone, in the buffer's share), and
  // the raw keys where the coefficients read them from the pool: requested now (into L2, or the first delta into
  // registers, below), so that those reads, after the first barrier, wait on L2 rather than DRAM.
  const VerifyLanes<VB> ln(v0, V);
  float* deltas = pool.fp32_deltas() + (int64_t(slot) * cap * HV + h) * V + (ln.active ? ln.col : 0);
  const int64_t delta_stride = int64_t(HV) * V;
  // With the keys in shared memory, this lane's first entry's delta goes straight into registers (used after the
  // coefficients' barrier); the rest, and every delta otherwise, into L2 (keys read from the pool leave no registers
  // for an early delta).
  constexpr bool kEarlyDelta = kSmemKeys;
  float4 u_first = make_float4(0.f, 0.f, 0.f, 0.f);
  if constexpr (kEarlyDelta)
    if (ln.active && ln.sub < n) u_first = __ldg(reinterpret_cast<const float4*>(deltas + ln.sub * delta_stride));
  if (ln.active)
    for (int j = ln.sub + (kEarlyDelta ? SUBS : 0); j < n; j += SUBS) prefetch_l2(deltas + j * delta_stride);
  if constexpr (!kSmemKeys) {
    constexpr int KEY_LINES = K >= 64 ? K / 64 : 1;  // 128-byte lines of one bf16 key
    for (int idx = threadIdx.x; idx < n * KEY_LINES; idx += THREADS)
      prefetch_l2(bs.key(idx / KEY_LINES) + idx % KEY_LINES * 64);
  }

  // The drafts' normalised keys and queries and their gates, while the copies are in flight.
  // A row that is not due takes its drafts' keys and log-decays past its entries as soon as it has them (no block
  // reads there): the raw keys straight from the registers that load them (slice 0 of the key head's first value
  // head), the log-decays of this value head from the gates (slice 0).
  const bool write_keys = !flush && blockIdx.x == 0 && h % p.shape.group() == 0;
  normalise_drafts<K>(
      p.in, row, M, warp, WARPS, H, HV, h, hk,
      [&](int i, const WarpVec<K>& kv) {
        if (!write_keys) return;
        bf16* dst = pool.keys + ((draft_entry + i) * H + hk) * K + lane * WarpVec<K>::N;
#pragma unroll
        for (int e = 0; e < WarpVec<K>::N; ++e) dst[e] = __float2bfloat16_rn(kv.x[e]);  // exact: loaded from bf16
      },
      [&](int i, int r, float k, float q) {
        ds.k_at(i, r) = k;
        ds.q_at(i, r) = q;
      },
      [&](int i, const Gate& gate, float) {
        ds.g[i] = gate.g;
        ds.beta[i] = gate.beta;
        if (!flush && blockIdx.x == 0) pool.log_decay[(draft_entry + i) * HV + h] = gate.g;
      },
      &first_inputs);
  if (early) cp_async_wait_all();  // its slice's groups, committed first, are complete too
  else cp_async_wait_group<Tile::CHUNKS>();
  __syncthreads();  // drafts, log-decays and draft values in shared memory; a later block's slice still streaming

  // A due row with the keys in shared memory has read the pool's entries for the last time: one lane of the last warp
  // counts the block's arrival in its key group now, and learns whether it is the last only before the coefficients'
  // barrier (the atomic's round trip hidden behind its warp's coefficients; due_last, read at the end).
  __shared__ int due_last;
  const bool arrives_early = kSmemKeys && flush && threadIdx.x == THREADS - 32;
  int arrival = 0;
  if (arrives_early) arrival = atomicAdd(key_group_arrivals(p, row, hk), 1);

  // Buffer weights w_j = e^{sum of g after j} and the drafts' decays D_i (the last warp, which has the fewest
  // draft-draft pairs and buffer entries), 1/|k_j| and the raw buffer-draft products (every warp).
  if (warp == WARPS - 1) {
    buffer_weights<K>(n, 0.f, bs);
    if (lane == 0) {
      float gsum = 0.f;
#pragma unroll
      for (int i = 0; i < M; ++i) {
        gsum += ds.g[i];
        ds.D[i] = expf(gsum);
      }
    }
  }
  buffer_draft_products<K, M, WARPS, kSmemKeys>(n, ds, bs, dk, dq, cap);
  draft_pair_coefficients<K, M, WARPS>(ds);
  if (arrives_early) due_last = last_in_key_group(p, row, hk, arrival, int(gridDim.x));
  __syncthreads();  // coefficients in shared memory

  // The buffer's share first, while the slice streams: a_i, o_i = sum_{j<n} w_j D_i (k^_j . k^_i, k^_j . q^_i) u_j,
  // this lane's entries j = sub (its delta already requested, kEarlyDelta), then sub + 8, ... four at a time (their
  // deltas read by this lane alone, in flight together).
  float ak[M][4], aq[M][4];
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c) ak[i][c] = aq[i][c] = 0.f;
  const auto add_entry = [&](int j, const float4& u) {
    const float wj = bs.w[j] * bs.rk[j];
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const float wd = wj * ds.D[i];
      fma4(wd * dk[i * cap + j], u, ak[i]);
      fma4(wd * dq[i * cap + j], u, aq[i]);
    }
  };
  if constexpr (kEarlyDelta)
    if (ln.sub < n) add_entry(ln.sub, u_first);
  for (int j0 = ln.sub + (kEarlyDelta ? SUBS : 0); j0 < n; j0 += 4 * SUBS) {
    float4 u[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int j = j0 + t * SUBS;
      u[t] = ln.active && j < n ? __ldg(reinterpret_cast<const float4*>(deltas + j * delta_stride))
                                : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int j = j0 + t * SUBS;
      if (j >= n) break;
      add_entry(j, u[t]);
    }
  }
  // The checkpoint's decay e^{G_n} D_i folded into the drafts' keys and queries (their products above are formed), so
  // that the pass adds e^{G_n} D_i S0^T k^_i and e^{G_n} D_i S0^T q^_i straight onto the buffer's share.
  // Packed, in storage order (conflict-free; any padding scaled too): khat and qhat are [M][DRAFT_FLOATS] each.
  const float decay0 = bs.decay0[0];
  constexpr int DRAFT_FLOATS = Drafts::kSubs * Drafts::kPitch;
  if constexpr (kPacked) {
    for (int idx = threadIdx.x; idx < M * DRAFT_FLOATS; idx += THREADS) {
      const float d = decay0 * ds.D[idx / DRAFT_FLOATS];
      (&ds.khat[0][0][0])[idx] *= d;
      (&ds.qhat[0][0][0])[idx] *= d;
    }
  } else {
    for (int idx = threadIdx.x; idx < M * K; idx += THREADS) {
      const int i = idx / K, r = idx % K;
      const float d = decay0 * ds.D[i];
      ds.k_at(i, r) *= d;
      ds.q_at(i, r) *= d;
    }
  }

  // One pass over the checkpoint rows for every draft, a chunk of 32 rows as soon as it has landed. Four of this
  // lane's rows per step: r = sub + 8 (4 q + tt) (chunk q), their coefficients one float4 per draft.
  static_assert(4 * SUBS == Tile::CHUNK_ROWS, "kvbuffer_verify_kernel: one pass step per copy chunk");
  // This lane's coefficient row of draft 0 in khat (qhat lies one khat further on); draft i's is DRAFT_FLOATS on.
  const float* const coef_row = &ds.khat[0][Drafts::slot(ln.sub)][0];
  static_assert(offsetof(Drafts, qhat) == offsetof(Drafts, khat) + sizeof(ds.khat), "DraftSmem: qhat must follow khat");
#pragma unroll
  for (int q = 0; q < Tile::CHUNKS; ++q) {
    // Chunk q visible to the block (and, at q = 0, the scaled keys and queries). An early block's chunks have all been
    // visible since its first barrier: it keeps only the q = 0 barrier, for the scaled keys and queries.
    if (!early) cp_async_wait_pending(Tile::CHUNKS - 1 - q);
    if (q == 0 || !early) __syncthreads();
    float4 s[4];
#pragma unroll
    for (int tt = 0; tt < 4; ++tt) s[tt] = tile.at(ln.sub + SUBS * (4 * q + tt), ln.c4);
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const float4 kw = *reinterpret_cast<const float4*>(coef_row + i * DRAFT_FLOATS + 4 * q);
      const float4 qw = *reinterpret_cast<const float4*>(coef_row + (M + i) * DRAFT_FLOATS + 4 * q);
      fma4(kw.x, s[0], ak[i]);
      fma4(kw.y, s[1], ak[i]);
      fma4(kw.z, s[2], ak[i]);
      fma4(kw.w, s[3], ak[i]);
      fma4(qw.x, s[0], aq[i]);
      fma4(qw.y, s[1], aq[i]);
      fma4(qw.z, s[2], aq[i]);
      fma4(qw.w, s[3], aq[i]);
    }
  }
  // Column totals (checkpoint and buffer shares), split over the row subgroups: this lane keeps a_i (kind 0) or the
  // drafts' query products (kind 1, o_i before the drafts' own terms) of one column c, for every draft.
  float x[M];
  VerifyLanes<VB>::reduce_scatter<M>(ak, aq, x);
  const int c = VerifyLanes<VB>::column();
  const bool kind_a = VerifyLanes<VB>::kind() == 0;

  // The triangular dependency among the drafts in column c: a kind-0 lane turns its a_i into u_i, which its kind-1
  // partner (lane + 16) takes to finish o_i.
  float u[M];
  draft_deltas<M>(
      ds.kk, ds.beta, [&](int i) { return x[i]; },
      [&](int i) { return __bfloat162float(ds.v[i][4 * ln.c4 + c]); }, u);  // v zero past V
#pragma unroll
  for (int i = 0; i < M; ++i) {
    const float partner = __shfl_xor_sync(0xffffffffu, u[i], 16);
    if (!kind_a) u[i] = partner;
  }
  if (!kind_a && ln.active)
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float o = x[i];
#pragma unroll
      for (int ip = 0; ip <= i; ++ip) o = fmaf(ds.kq[ip][i], u[ip], o);
      store_output1(p.o, p.o_dtype, ((int64_t(row) * M + i) * HV + h) * V + ln.col + c, o);
    }

  // A due row: S0 <- e^{G_n} S0 + sum_{j<n} w_j k^_j u_j^T from the slice in shared memory, written once; its
  // entries are then free and the drafts take positions 0 .. m - 1.
  // Every read of its entries by this block (buffer's share, coefficients, fold) is complete past the barrier; only
  // then may the drafts' deltas (this block's columns) replace them. A row that is not due writes past its entries.
  if (flush) {
    // The drafts' deltas wait in shared memory (the drafts' keys and queries, read by every warp before this
    // barrier), so that their registers serve the fold.
    __syncthreads();
    if (kind_a)
#pragma unroll
      for (int i = 0; i < M; ++i) reinterpret_cast<float*>(&ds.parked(i, ln.c4))[c] = u[i];
    fold_verify_tile<K, VB>(tile, bs, n, decay0, pool.fp32_deltas() + (int64_t(slot) * cap * HV + h) * V, delta_stride,
                            static_cast<float*>(pool.checkpoint) + (int64_t(slot) * HV + h) * K * V, v0, V);
    __syncthreads();
    if (ln.sub == 0 && ln.active)
#pragma unroll
      for (int i = 0; i < M; ++i) *reinterpret_cast<float4*>(deltas + i * delta_stride) = ds.parked(i, ln.c4);
  } else if (kind_a && ln.active) {
#pragma unroll
    for (int i = 0; i < M; ++i) deltas[(n + i) * delta_stride + c] = u[i];
  }
  if (!flush) return;
  if constexpr (kSmemKeys) {
    if (due_last && warp == WARPS - 1) {  // every block of the key group has read its entries
      __threadfence();
      write_draft_entries(p, row, draft_entry, M, hk, lane, 32);
    }
  } else {
    write_due_draft_entries(p, row, draft_entry, M);
  }
}

__global__ void kvbuffer_advance_accepted_kernel(int32_t* fill, const int32_t* slot, const int32_t* accepted,
                                                 int batch, int buffer_size) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch) return;
  const int s = slot[i];
  if (s < 0) return;
  const int n = fill[s] + max(accepted[i], 0);
  fill[s] = n >= buffer_size ? 0 : n;
}

__global__ void kvbuffer_commit_accepted_kernel(int32_t* fill, const int32_t* slot, const int32_t* accepted,
                                                int batch, int buffer_size, int draft_tokens) {
  pdl_wait();  // kernels/pdl.cuh: every verify that reads fill has completed
  pdl_launch_dependents();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch) return;
  const int s = slot[i];
  if (s < 0) return;
  const int n = fill[s];
  fill[s] = (n >= buffer_size ? 0 : max(n, 0)) + min(max(accepted[i], 0), draft_tokens);
}

/// Launches the verify kernel for p, or, with `describe`, fills it instead (KVBufferVerifyLaunch) and launches nothing.
template <int K, int VB, int M>
cudaError_t launch_verify_tile(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  // Packed draft rows only where registers hold the kernel to exactly the blocks its shared memory is chosen for:
  // 128 columns and up to 4 drafts, three blocks per SM (verify_min_blocks) at 80 registers.
  constexpr bool kMayPack = VB == 128 && M <= 4;
  constexpr int kRegisterBlocks = 3;
  const int cap = p.pool.capacity;
  const auto with_keys = kvbuffer_verify_kernel<K, VB, M, true, false>;
  const auto with_keys_packed = kvbuffer_verify_kernel<K, VB, M, true, kMayPack>;  // with_keys where it cannot pack
  const auto without_keys = kvbuffer_verify_kernel<K, VB, M, false, false>;
  constexpr int threads = VerifyLanes<VB>::THREADS;
  const auto smem_for = [&](bool smem_keys) {
    return VerifyTile<K, VB>::kBytes + verify_buffer_bytes<K>(cap, smem_keys) + 2 * size_t(M) * cap * sizeof(float);
  };
  // Stage the keys in shared memory unless that costs a block per SM (with the drafts' rows packed if only that
  // keeps it), decided from the sizes alone so that only the kernel launched is ever loaded.
  constexpr size_t padded_static = sizeof(DraftSmem<K, VB, M, false>) + kVerifyStaticScalars;
  constexpr size_t packed_static = sizeof(DraftSmem<K, VB, M, kMayPack>) + kVerifyStaticScalars;
  const auto blocks = [&](size_t bytes) {
    const int b = smem_blocks_per_sm(bytes);
    return kMayPack && b > kRegisterBlocks ? kRegisterBlocks : b;
  };
  const int pool_keys_blocks = blocks(smem_for(false) + padded_static);
  const int smem_keys_blocks = blocks(smem_for(true) + padded_static);
  const int packed_blocks = blocks(smem_for(true) + packed_static);
  const bool smem_keys = smem_keys_blocks >= pool_keys_blocks;
  const bool packed = kMayPack && !smem_keys && packed_blocks >= pool_keys_blocks;
  const auto kernel = smem_keys ? with_keys : packed ? with_keys_packed : without_keys;
  const size_t smem = smem_for(smem_keys || packed);
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  if (describe) {
    describe->smem_keys = smem_keys;
    describe->packed = packed;
    describe->smem_bytes = smem + (packed ? packed_static : padded_static);
    describe->predicted_blocks_per_sm = smem_keys ? smem_keys_blocks : packed ? packed_blocks : pool_keys_blocks;
    describe->blocks_per_row = num_slices(p.shape.head_dim_v, VB) * p.shape.heads_v;
    return resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), threads, smem,
                                  describe->resident_blocks_per_sm);
  }
  const dim3 grid(num_slices(p.shape.head_dim_v, VB), p.shape.heads_v, p.batch);
  int early_blocks = 0;
  if (const cudaError_t e = pdl_first_wave_blocks(kernel, threads, smem, p.pdl, early_blocks); e != cudaSuccess)
    return e;
  return launch_kernel(kernel, grid, threads, smem, stream, p.pdl, p, early_blocks);
}

/// The draft count as a compile-time constant (every loop over drafts fully unrolled).
template <int K, int VB>
cudaError_t launch_verify_drafts(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  return with_draft_tokens(p.in.tokens, [&](auto m) {
    return launch_verify_tile<K, VB, decltype(m)::value>(p, stream, describe);
  });
}

}  // namespace

std::string validate(const KVBufferVerifyParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (auto e = validate_draft_tokens(p.in.tokens); !e.empty()) return e;
  if (auto e = validate_pool(p.pool); !e.empty()) return e;
  if (auto e = validate_verify_capacity(p.pool, p.in.tokens); !e.empty()) return e;
  if (p.pool.checkpoint_rows() != p.pool.num_slots)
    return "pool.num_checkpoints = " + std::to_string(p.pool.num_checkpoints) +
           ": verify indexes checkpoints by slot (allowed: 0 or num_slots = " + std::to_string(p.pool.num_slots) + ")";
  if (!p.slot || !p.o || !p.group_arrivals) return "slot, o and group_arrivals must be set";
  if (auto e = validate_tile(p.tile, kvbuffer_verify_tiles(), p.shape, "kvbuffer verify"); !e.empty()) return e;
  if (p.kernel != VerifyKernel::automatic && p.kernel != VerifyKernel::cuda_cores &&
      p.kernel != VerifyKernel::tensor_cores && p.kernel != VerifyKernel::staged)
    return "kernel = " + std::to_string(int(p.kernel)) + " (allowed: automatic, cuda_cores, tensor_cores, staged)";
  if (p.kernel == VerifyKernel::staged) return validate_staged_verify(p);
  if (p.pool.delta_dtype != StateDtype::fp32) {  // bf16 deltas: the staged kernel only
    if (p.kernel != VerifyKernel::automatic)
      return std::string("delta_dtype = ") + to_string(p.pool.delta_dtype) + ": kernel = " + to_string(p.kernel) +
             " takes fp32 deltas (allowed with bf16 deltas: kernel = automatic or staged)";
    if (auto e = validate_staged_verify(p); !e.empty())
      return std::string("delta_dtype = ") + to_string(p.pool.delta_dtype) + " takes the staged kernel: " + e;
    return "";
  }
  if (p.pool.state_dtype != StateDtype::fp32) {  // bf16 checkpoints: the staged and the tensor-core kernels
    if (p.kernel == VerifyKernel::cuda_cores)
      return std::string("state_dtype = ") + to_string(p.pool.state_dtype) +
             ": kernel = cuda_cores takes fp32 checkpoints (allowed with bf16: kernel = automatic, tensor_cores or "
             "staged)";
    if (auto e = validate_tensor_core_verify(p); !e.empty())
      return std::string("state_dtype = ") + to_string(p.pool.state_dtype) + " takes the tensor-core kernel: " + e;
  }
  if (p.kernel == VerifyKernel::tensor_cores) return validate_tensor_core_verify(p);
  return "";
}

namespace {
/// The head-dimension and slice-width dispatch of launch_kvbuffer_verify and describe_kvbuffer_verify_launch.
cudaError_t dispatch_verify(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  // automatic: the tensor-core kernel where it takes p and was measured the faster (docs/FINDINGS.md): from 15
  // (row, value head) items an SM (batch 64 of Qwen3-Next on an H200); the CUDA-core kernel below, where the
  // tensor-core kernel's blocks, two heads each, are too few to fill the GPU.
  const int64_t items = int64_t(p.batch) * p.shape.heads_v;
  const bool tc_measured_faster = items >= 15 * int64_t(sm_count());
  // bf16 checkpoints: the staged kernel where it takes them and was measured the faster (docs/FINDINGS.md): from 6
  // drafts, and at every draft count from 15 (row, value head) items an SM (batch 64 of Qwen3-Next on an H200);
  // else the tensor-core kernel (validate).
  const bool staged_measured_faster = p.in.tokens >= 6 || items >= 15 * int64_t(sm_count());
  // bf16 deltas: the staged kernel, the one that takes them (validate).
  if (p.kernel == VerifyKernel::staged || p.pool.delta_dtype != StateDtype::fp32 ||
      (p.kernel == VerifyKernel::automatic && p.pool.state_dtype == StateDtype::bf16 && staged_measured_faster &&
       validate_staged_verify(p).empty()))
    return launch_staged_verify(p, stream, describe);
  if (p.kernel == VerifyKernel::tensor_cores || p.pool.state_dtype != StateDtype::fp32 ||
      (p.kernel == VerifyKernel::automatic && tc_measured_faster && validate_tensor_core_verify(p).empty()))
    return launch_tensor_core_verify(p, stream, describe);
  if (describe) describe->kernel = VerifyKernel::cuda_cores;
  switch (p.shape.head_dim_k) {
    case 32: return launch_verify_drafts<32, 64>(p, stream, describe);
    case 64: return launch_verify_drafts<64, 64>(p, stream, describe);
    case 128:
      // auto: one block per value head at batch * HV >= 4 blocks per SM; half heads below.
      if (p.tile == TileShape{64, 128}) return launch_verify_drafts<128, 64>(p, stream, describe);
      if (p.tile == TileShape{128, 256}) return launch_verify_drafts<128, 128>(p, stream, describe);
      if (int64_t(p.batch) * p.shape.heads_v < 4 * sm_count())
        return launch_verify_drafts<128, 64>(p, stream, describe);
      return launch_verify_drafts<128, 128>(p, stream, describe);
    case 256: return launch_verify_drafts<256, 64>(p, stream, describe);
  }
  return cudaErrorInvalidValue;
}
}  // namespace

int kvbuffer_verify_wave_rows(const KVBufferVerifyParams& p) {
  KVBufferVerifyLaunch l;
  if (describe_kvbuffer_verify_launch(p, l) != cudaSuccess) return 0;
  return wave_rows(l.resident_blocks_per_sm, l.blocks_per_row);
}

cudaError_t launch_kvbuffer_verify(const KVBufferVerifyParams& p, cudaStream_t stream) {
  return dispatch_verify(p, stream, nullptr);
}

cudaError_t describe_kvbuffer_verify_launch(const KVBufferVerifyParams& p, KVBufferVerifyLaunch& out) {
  out = KVBufferVerifyLaunch{};
  return dispatch_verify(p, nullptr, &out);
}

cudaError_t launch_kvbuffer_advance_accepted(int32_t* fill, const int32_t* slot, const int32_t* accepted, int batch,
                                             int buffer_size, cudaStream_t stream) {
  if (!fill || !slot || !accepted || batch < 1 || buffer_size < 1) return cudaErrorInvalidValue;
  kvbuffer_advance_accepted_kernel<<<(batch + 255) / 256, 256, 0, stream>>>(fill, slot, accepted, batch, buffer_size);
  return cudaGetLastError();
}

cudaError_t launch_kvbuffer_commit_accepted(int32_t* fill, const int32_t* slot, const int32_t* accepted, int batch,
                                            int buffer_size, int draft_tokens, cudaStream_t stream, bool pdl) {
  if (!fill || !slot || !accepted || batch < 1 || buffer_size < 1 || !validate_draft_tokens(draft_tokens).empty())
    return cudaErrorInvalidValue;
  return launch_kernel(kvbuffer_commit_accepted_kernel, dim3((batch + 255) / 256), dim3(256), 0, stream, pdl, fill,
                       slot, accepted, batch, buffer_size, draft_tokens);
}

std::string validate_verify_capacity(const KVBufferPool& pool, int draft_tokens) {
  const int need = pool.buffer_size - 1 + draft_tokens;
  if (need > dev::kMaxBuffer)
    return "buffer_size - 1 + draft_tokens = " + std::to_string(need) + " must be <= " +
           std::to_string(dev::kMaxBuffer);
  if (pool.capacity < need)
    return "pool.capacity = " + std::to_string(pool.capacity) + " must be >= buffer_size - 1 + draft_tokens = " +
           std::to_string(need) + " (verify writes the drafts' deltas into the buffer)";
  return "";
}

}  // namespace kvb
