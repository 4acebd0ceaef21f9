// Device building blocks of the KVBuffer kernels (delta form, DESIGN.md section 3): per-entry key products, the
// buffer's share of S^T k^ and S^T q^, and the fold of the buffer into a checkpoint tile.
//
// Decay weights w_j = e^{G_t - G_j} = exp(g_t + sum_{i=j+1}^{n-1} g_i) are formed from the stored per-entry g by a
// running sum from the newest entry down (never as a difference of large cumulative sums, which loses fp32 precision
// as |G| grows); the checkpoint's decay is e^{G_t} = exp(g_t + sum_i g_i).
#pragma once

#include "kernels/gdn_device.cuh"

namespace kvb::dev {

constexpr int kMaxBuffer = 256;  ///< largest buffer capacity the kernels accept (entries per slot)
constexpr int kEntriesPerWarp = 4;  ///< buffered keys a warp loads at once

/// Per-entry values of one (slot, value head) in shared memory, for entries j < n:
/// g[j] (log-decay), rk[j] = 1 / sqrt(|k_j|^2 + eps), ck[j] = k^_j . k^_t, cq[j] = k^_j . q^_t (no decay applied).
struct BufferCoefs {
  float* g;
  float* rk;
  float* ck;
  float* cq;
  /// Carves the four arrays of `capacity` floats out of shared memory at `base`.
  __device__ __forceinline__ void setup(float* base, int capacity) {
    g = base;
    rk = base + capacity;
    ck = base + 2 * capacity;
    cq = base + 3 * capacity;
  }
  static constexpr size_t bytes(int capacity) { return size_t(4) * capacity * sizeof(float); }
};

/// Fills `bc` for the n buffered entries of (slot, value head h, key head hk): warp w handles entries w, w + 4, ...,
/// kEntriesPerWarp at a time, its lanes holding K/32 elements of each key. kt/qt: the current token's raw key and
/// query as warp vectors, with its norms (nullptr for a flush with no current token: ck/cq are left unset).
/// Writes shared memory only: the caller synchronises before reading.
template <int K>
__device__ __forceinline__ void buffer_key_products(const KVBufferPool& pool, int H, int HV, int slot, int h, int hk,
                                                    int n, const WarpVec<K>* kt, const WarpVec<K>* qt,
                                                    const QKNorm& nrm, BufferCoefs& bc) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t e0 = int64_t(slot) * pool.capacity;
  for (int j0 = warp; j0 < n; j0 += kWarps * kEntriesPerWarp) {
    WarpVecBf16<K> kj[kEntriesPerWarp];
    float gj[kEntriesPerWarp];
#pragma unroll
    for (int e = 0; e < kEntriesPerWarp; ++e) {
      const int j = j0 + e * kWarps;
      if (j < n) {
        kj[e].load(pool.keys + ((e0 + j) * H + hk) * K, lane);
        gj[e] = lane == 0 ? pool.log_decay[(e0 + j) * HV + h] : 0.f;
      }
    }
#pragma unroll
    for (int e = 0; e < kEntriesPerWarp; ++e) {
      const int j = j0 + e * kWarps;
      if (j >= n) break;
      const float rkj = rsqrtf(warp_sum(kj[e].norm2()) + kL2NormEps);
      float kd = 0.f, qd = 0.f;
      if (kt) {
        kd = warp_sum(kj[e].dot(*kt));
        qd = warp_sum(kj[e].dot(*qt));
      }
      if (lane == 0) {
        bc.g[j] = gj[e];
        bc.rk[j] = rkj;
        bc.ck[j] = kd * rkj * nrm.rk;
        bc.cq[j] = qd * rkj * nrm.rq;
      }
    }
  }
}

/// e^{G_t} = exp(g_t + sum_{j<n} g_j), the checkpoint's decay (every thread reads the n values of g).
__device__ __forceinline__ float checkpoint_decay(const BufferCoefs& bc, int n, float gt) {
  float total = 0.f;
  for (int j = n - 1; j >= 0; --j) total += bc.g[j];
  return expf(gt + total);
}

/// Adds the buffer's share to this thread's partial S^T k^ and S^T q^ columns, from the extra rows of the tile
/// (u_j at row K + j): for j = rg, rg + RG, ... < n: acc_k += w_j ck[j] u_j, acc_q += w_j cq[j] u_j.
template <class Tile, int K>
__device__ __forceinline__ void accumulate_buffer(const Tile& tile, const BufferCoefs& bc, int n, float gt,
                                                  float (&acc_k)[4], float (&acc_q)[4]) {
  float above = 0.f;  // sum of g over entries after j
  for (int j = n - 1; j >= 0; --j) {
    if (j % Tile::RG == tile.rg) {
      const float w = expf(gt + above);
      const float a = w * bc.ck[j], b = w * bc.cq[j];
      const float4 u = tile.at(K + j);
      acc_k[0] = fmaf(a, u.x, acc_k[0]);
      acc_k[1] = fmaf(a, u.y, acc_k[1]);
      acc_k[2] = fmaf(a, u.z, acc_k[2]);
      acc_k[3] = fmaf(a, u.w, acc_k[3]);
      acc_q[0] = fmaf(b, u.x, acc_q[0]);
      acc_q[1] = fmaf(b, u.y, acc_q[1]);
      acc_q[2] = fmaf(b, u.z, acc_q[2]);
      acc_q[3] = fmaf(b, u.w, acc_q[3]);
    }
    above += bc.g[j];
  }
}

/// Folds the n buffered entries into the tile's state rows: S += sum_j w_j k^_j[rows] u_j[cols], with u_j from the
/// tile's extra rows and the raw keys [slot][capacity][H][K] from memory (the tile must already hold e^{G_t} S0 and
/// the current token's entry, if any).
template <int K, class Tile>
__device__ __forceinline__ void fold_buffer(const KVBufferPool& pool, int H, int slot, int hk, int n, float gt,
                                            const BufferCoefs& bc, const Tile& tile) {
  const int64_t e0 = int64_t(slot) * pool.capacity;
  float above = 0.f;
#pragma unroll 2
  for (int j = n - 1; j >= 0; --j) {
    float kr[Tile::ROWS];
    load_bf16<Tile::ROWS>(pool.keys + ((e0 + j) * H + hk) * K + tile.row(0), kr);
    const float w = expf(gt + above) * bc.rk[j];
#pragma unroll
    for (int i = 0; i < Tile::ROWS; ++i) kr[i] *= w;
    tile.rank1(kr, tile.at(K + j));
    above += bc.g[j];
  }
}

}  // namespace kvb::dev
