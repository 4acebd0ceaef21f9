// Device building blocks of the KVBuffer kernels (delta form, DESIGN.md section 3): the buffer's entries streamed into
// shared memory, per-entry key products, the buffer's share of S^T k^ and S^T q^, and the fold of the buffer into a
// checkpoint tile.
//
// Decay weights w_j = e^{G_t - G_j} = exp(g_t + sum_{i=j+1}^{n-1} g_i) are formed from the stored per-entry g by a
// running sum from the newest entry down (never as a difference of large cumulative sums, which loses fp32 precision
// as |G| grows); the checkpoint's decay is e^{G_t} = exp(g_t + sum_i g_i).
#pragma once

#include "kernels/gdn_device.cuh"

namespace kvb::dev {

constexpr int kMaxBuffer = ::kvb::kMaxBuffer;  ///< largest buffer capacity the kernels accept (gdn_params.h)

/// One (slot, value head)'s buffer in shared memory, for entries j < n: the raw keys of its key head [capacity][K]
/// (bf16; key j at keys + j * key_stride), and per entry g[j] (log-decay), w[j] = e^{G_t - G_j},
/// rk[j] = 1 / sqrt(|k_j|^2 + eps), ck[j] = k^_j . k^_t and cq[j] = k^_j . q^_t (no decay applied);
/// decay0[0] = e^{G_t}, the checkpoint's decay. The deltas u_j live in the state tile's extra rows (decode, flush,
/// accept); verify reads them where they lie.
template <int K>
struct BufferSmem {
  bf16* keys;
  int key_stride;  ///< elements from one entry's key to the next: K in shared memory, H * K read from the pool
  float* g;
  float* w;
  float* rk;
  float* ck;
  float* cq;
  float* decay0;
  /// Carves the arrays for `capacity` entries, keys included, out of shared memory at `base` (16-byte aligned).
  __device__ __forceinline__ void setup(void* base, int capacity) {
    keys = static_cast<bf16*>(base);
    key_stride = K;
    setup_values(static_cast<char*>(base) + size_t(capacity) * K * sizeof(bf16), capacity);
  }
  /// Carves only the per-entry values out of shared memory at `base`; the keys are read where they lie in the pool
  /// (slot's entry 0 of key head hk, H key heads per entry), by the warp that uses each (no reuse across warps).
  __device__ __forceinline__ void setup_pool_keys(void* base, int capacity, const KVBufferPool& pool, int H,
                                                  int slot, int hk) {
    keys = pool.keys + (int64_t(slot) * pool.capacity * H + hk) * K;
    key_stride = H * K;
    setup_values(base, capacity);
  }
  __device__ __forceinline__ void setup_values(void* base, int capacity) {
    g = static_cast<float*>(base);
    w = g + capacity;
    rk = w + capacity;
    ck = rk + capacity;
    cq = ck + capacity;
    decay0 = cq + capacity;
  }
  __device__ __forceinline__ const bf16* key(int j) const { return keys + int64_t(j) * key_stride; }
  static constexpr size_t values_bytes(int capacity) { return size_t(capacity) * 5 * sizeof(float) + sizeof(float); }
  static constexpr size_t bytes(int capacity) { return size_t(capacity) * K * sizeof(bf16) + values_bytes(capacity); }

  /// Starts copying the n entries' raw keys (key head hk) and log-decays (value head h) of `slot` into shared memory.
  __device__ __forceinline__ void load_async(const KVBufferPool& pool, int H, int HV, int slot, int h, int hk,
                                             int n) const {
    const int64_t e0 = int64_t(slot) * pool.capacity;
    constexpr int kChunks = K / 8;  // 16-byte chunks per key
    for (int c = threadIdx.x; c < n * kChunks; c += blockDim.x) {
      const int j = c / kChunks, part = c % kChunks;
      cp_async16(keys + j * K + part * 8, pool.keys + ((e0 + j) * H + hk) * K + part * 8, true);
    }
    load_log_decay_async(pool, HV, slot, h, n);
  }
  /// Starts copying the n entries' log-decays (value head h) of `slot` into shared memory.
  __device__ __forceinline__ void load_log_decay_async(const KVBufferPool& pool, int HV, int slot, int h,
                                                       int n) const {
    const int64_t e0 = int64_t(slot) * pool.capacity;
    for (int j = threadIdx.x; j < n; j += blockDim.x) cp_async4(g + j, pool.log_decay + (e0 + j) * HV + h);
  }
};

/// The decay weights of the buffer in shared memory (its log-decays g copied and synchronised), formed by one warp
/// (the caller's): w[j] = e^{gt + g_{j+1} + ... + g_{n-1}} and decay0[0] = e^{gt + g_0 + ... + g_{n-1}}, by a suffix
/// sum of g, 32 entries per round from the newest down. gt: the current token's log-decay (0 with none).
/// Writes shared memory only: the caller synchronises before reading.
template <int K>
__device__ __forceinline__ void buffer_weights(int n, float gt, const BufferSmem<K>& bs) {
  const int lane = threadIdx.x % 32;
  float carry = 0.f;  // sum of g over the entries above the current round
  for (int c = (n + 31) / 32 - 1; c >= 0; --c) {
    const int j = c * 32 + lane;
    const float gj = j < n ? bs.g[j] : 0.f;
    float incl = gj;  // sum of g over entries j .. end of round
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const float y = __shfl_down_sync(0xffffffffu, incl, off);
      if (lane + off < 32) incl += y;
    }
    const float above = __shfl_down_sync(0xffffffffu, incl, 1);
    if (j < n) bs.w[j] = expf(gt + (lane < 31 ? above : 0.f) + carry);
    carry += __shfl_sync(0xffffffffu, incl, 0);
  }
  if (lane == 0) bs.decay0[0] = expf(gt + carry);
}

/// Fills the per-entry values from the buffer in shared memory (cp.async complete and synchronised): warp 0 forms
/// the decay weights w[j] and decay0 (buffer_weights); warp v forms rk, ck, cq for entries v, v + W, ... (W warps).
/// kt/qt: the current token's raw key and query as warp vectors, with its norms and log-decay gt (nullptr and gt = 0
/// for a flush with no current token: ck/cq are then unset).
/// Writes shared memory only: the caller synchronises before reading.
template <int K>
__device__ __forceinline__ void buffer_coefficients(int n, float gt, const WarpVec<K>* kt, const WarpVec<K>* qt,
                                                    const QKNorm& nrm, const BufferSmem<K>& bs) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0) buffer_weights<K>(n, gt, bs);
  for (int j = warp; j < n; j += int(blockDim.x / 32)) {
    WarpVecBf16<K> kj;
    kj.load(bs.key(j), lane);
    const float rkj = kj.inverse_norm();
    float kd = 0.f, qd = 0.f;
    if (kt) {
      kd = warp_sum(kj.dot(*kt));
      qd = warp_sum(kj.dot(*qt));
    }
    if (lane == 0) {
      bs.rk[j] = rkj;
      bs.ck[j] = kd * rkj * nrm.rk;
      bs.cq[j] = qd * rkj * nrm.rq;
    }
  }
}

/// Adds the buffer's share to this thread's partial S^T k^ and S^T q^ columns, from the extra rows of the tile
/// (u_j at row K + j): for j = rg, rg + RG, ... < n: acc_k += w_j ck[j] u_j, acc_q += w_j cq[j] u_j.
template <class Tile, int K>
__device__ __forceinline__ void accumulate_buffer(const Tile& tile, const BufferSmem<K>& bs, int n,
                                                  float (&acc_k)[4], float (&acc_q)[4]) {
  for (int j = tile.rg; j < n; j += Tile::RG) {
    const float a = bs.w[j] * bs.ck[j], b = bs.w[j] * bs.cq[j];
    const float4 u = tile.extra(j);
    acc_k[0] = fmaf(a, u.x, acc_k[0]);
    acc_k[1] = fmaf(a, u.y, acc_k[1]);
    acc_k[2] = fmaf(a, u.z, acc_k[2]);
    acc_k[3] = fmaf(a, u.w, acc_k[3]);
    acc_q[0] = fmaf(b, u.x, acc_q[0]);
    acc_q[1] = fmaf(b, u.y, acc_q[1]);
    acc_q[2] = fmaf(b, u.z, acc_q[2]);
    acc_q[3] = fmaf(b, u.w, acc_q[3]);
  }
}

/// The buffer's share of a fold for CH consecutive state rows r0 .. r0 + CH - 1 of the caller's four columns, held in
/// registers: s[i] += sum_{j<n} (w_j / |k_j|) k_j[r0 + i] u_j (DESIGN.md section 3, flush), with u_j = delta(j), a
/// float4 of the caller's columns from shared memory (decode and flush: the tile's extra rows; verify: the freed tile
/// rows it stages them in); raw keys, weights w_j and 1 / |k_j| come from `bs`.
template <int CH, int K, class Delta>
__device__ __forceinline__ void fold_entries(float4 (&s)[CH], int r0, int n, const BufferSmem<K>& bs, Delta delta) {
#pragma unroll 2
  for (int j = 0; j < n; ++j) {
    float kr[CH];
    load_bf16<CH>(bs.key(j) + r0, kr);
    const float wj = bs.w[j] * bs.rk[j];
    const float4 uj = delta(j);
#pragma unroll
    for (int i = 0; i < CH; ++i) {
      const float a = kr[i] * wj;
      s[i].x = fmaf(a, uj.x, s[i].x);
      s[i].y = fmaf(a, uj.y, s[i].y);
      s[i].z = fmaf(a, uj.z, s[i].z);
      s[i].w = fmaf(a, uj.w, s[i].w);
    }
  }
}

/// The flush, written straight to the checkpoint m ([K][V], this thread's rows and columns):
///   m <- decay S + kcol u^T + sum_{j<n} w_j k^_j[rows] u_j[cols]
/// with kcol(i) the current token's k^ at this thread's row i (i < Tile::ROWS, a compile-time index once unrolled),
/// S the tile's state rows and m stored as the tile's state type (from_zero: S = 0, a stateless request's first
/// state, the tile's rows not read).
/// Rows are taken kFoldRows at a time into registers and every entry folded there, so the tile is read once and the
/// state written once (streaming); keys, weights and deltas u_j (the tile's extra rows) come from shared memory, once
/// per pass of kFoldRows rows. 8 rows fit kernels held to 80 registers (decode's six 64-column blocks per SM); 16
/// halve the passes over the entries where registers allow (the stateless flush of a long buffer gains most;
/// docs/FINDINGS.md). No token: kcol and u zero.
template <int K, int kFoldRows = 8, class Tile, typename S, class KCol>
__device__ __forceinline__ void fold_and_store(S* __restrict__ m, int V, float decay, const KCol& kcol,
                                               const float (&u)[4], bool from_zero, int n, const BufferSmem<K>& bs,
                                               const Tile& tile) {
  constexpr int CH = Tile::ROWS < kFoldRows ? Tile::ROWS : kFoldRows;
  static_assert(Tile::ROWS % CH == 0, "fold_and_store: rows per thread must be a multiple of the chunk");
  static_assert(std::is_same<S, typename Tile::State>::value, "fold_and_store: m is stored as the tile's state");
#pragma unroll
  for (int c0 = 0; c0 < Tile::ROWS; c0 += CH) {
    float4 s[CH];
#pragma unroll
    for (int i = 0; i < CH; ++i) {
      const float4 x = from_zero ? make_float4(0.f, 0.f, 0.f, 0.f) : tile.state(tile.row(c0 + i));
      const float k = kcol(c0 + i);
      s[i] = make_float4(fmaf(k, u[0], decay * x.x), fmaf(k, u[1], decay * x.y), fmaf(k, u[2], decay * x.z),
                         fmaf(k, u[3], decay * x.w));
    }
    fold_entries<CH>(s, tile.row(c0), n, bs, [&](int j) { return tile.extra(j); });
    if (tile.active)
#pragma unroll
      for (int i = 0; i < CH; ++i)
        store_state4(m + int64_t(tile.row(c0 + i)) * V + tile.col, s[i]);
  }
}

}  // namespace kvb::dev
