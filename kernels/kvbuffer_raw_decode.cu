// KVBuffer decode, raw form (DESIGN.md section 3, "Raw form"; algebra in kernels/kvbuffer_raw_params.h). Per row with
// n = fill[slot] raw entries and the new token as entry t = n: the output from one pass over S0 with an effective
// query, then either the raw entry appended at position n, or (n + 1 = B) the fold of all B entries into S0.
// Grid: (V / VB slices, HV, N); block: kThreads threads owning a K x VB slice of S0 (SmemTile).
//
// The effective query comes from the transposed delta rule, newest entry first:
//   z <- q^;  for j = t .. 0:  s_j = k_j . z,  vw_j = beta_j e^{G_t - G_j} rk_j s_j,  z <- z - beta_j rk_j^2 s_j k_j;
//   qeff = e^{G_t} z,   o = S0^T qeff + sum_j vw_j v_j
// (rk_j = 1 / |k_j|, raw bf16 keys k_j). This equals qeff = e^{G_t} q^ - sum_j d_j beta_j e^{G_j} k^_j with
// d = (I + A)^-T c, but takes O(T K) work instead of a T x T Gram matrix: one warp walks the entries two at a time
// (one butterfly for k_j . z, k_i . z, k_i . k_j and both norms). The raw keys and value slices arrive first in their
// own cp.async group; the chain runs while the checkpoint slice is still streaming in (the second group).
// A flush folds the T = B entries in chunks of kFoldChunk on CUDA cores (fp32 FMA, round to nearest): per chunk,
//   P = S^T k_j (S: the slice after the earlier chunks),  U = (I + A_c)^-1 (beta v - beta e^{Gc_j} rk_j P_j),
//   S <- e^{Gc_end} S + sum_j e^{Gc_end - Gc_j} rk_j k_j u_j^T
// with Gc the log-decay summed from the chunk's first entry and A_c the chunk's strictly lower
// beta_i e^{Gc_i - Gc_j} rk_i rk_j (k_i . k_j). The chunk's Gram matrix and coefficients are formed by warps 1 .. 3
// while warp 0 runs the chain. Shared memory: the slice, 8 x VB floats of scratch, B + 1 key rows and B value slices
// and per-entry scalars (ChainSmem) -- no tensor-core staging, so as many blocks per SM as the delta form.
#include <string>
#include <type_traits>

#include "kernels/kvbuffer_raw_device.cuh"
#include "kernels/kvbuffer_raw_launch.h"
#include "kernels/launch_util.h"

namespace kvb {
static_assert(kThreadsRaw == dev::kThreads, "raw_tiles() names the threads the raw kernels run with");
namespace {

using namespace dev;

/// Entries per chunk of the chain kernel's flush: P, U and W of one chunk fit the 8 x VB scratch.
constexpr int kFoldChunk = 8;

/// Barrier of warps 1 .. WARPS-1 only (named barrier 1; __syncthreads uses barrier 0).
__device__ __forceinline__ void sync_helper_warps() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads - 32) : "memory");
}

/// Shared memory of one chain-kernel block for buffer size B (16-byte aligned arrays):
///   tile   [K][VB] f32   checkpoint slice (SmemTile layout: row-major, V contiguous)
///   scratch[8][VB] f32   reduce_rows partials [2][WARPS][VB], then one flush chunk's P, then W = w * U
///   keys   [B+1][KS] bf16 raw keys of entries 0 .. T-1, row B the raw query; KS = K + 8 (rows 4 banks apart)
///   vals   [B][VB] bf16  raw value slices
///   qeff   [K] f32       effective query
///   g, beta, vw [B] f32  log-decay, beta, value weight vw_j
///   gram   [B][kFoldChunk] f32  flush: k_i . k_j for j in i's chunk, j <= i; then A_ij in place (j < i)
///   coef   [B][4] f32    flush: beta_i e^{Gc_i} rk_i, e^{Gc_end - Gc_i} rk_i, e^{Gc_end} of i's chunk, unused
template <int K, int VB>
struct ChainSmem {
  static constexpr int KS = K + 8;
  static constexpr int SCRATCH_ROWS = 2 * kWarps > kFoldChunk ? 2 * kWarps : kFoldChunk;
  float* tile;
  float* scratch;
  bf16* keys;
  bf16* vals;
  float* qeff;
  float* g;
  float* beta;
  float* vw;
  float* gram;
  float4* coef;

  __host__ __device__ static constexpr size_t al16(size_t x) { return (x + 15) / 16 * 16; }
  __host__ __device__ static constexpr size_t bytes(int B) {
    return al16(size_t(K) * VB * 4) + al16(size_t(SCRATCH_ROWS) * VB * 4) + al16(size_t(B + 1) * KS * 2) +
           al16(size_t(B) * VB * 2) + al16(size_t(K) * 4) + 3 * al16(size_t(B) * 4) +
           al16(size_t(B) * kFoldChunk * 4) + size_t(B) * 16;
  }
  __device__ __forceinline__ void setup(char* base, int B) {
    auto take = [&base](size_t n) {
      char* p = base;
      base += al16(n);
      return p;
    };
    tile = reinterpret_cast<float*>(take(size_t(K) * VB * 4));
    scratch = reinterpret_cast<float*>(take(size_t(SCRATCH_ROWS) * VB * 4));
    keys = reinterpret_cast<bf16*>(take(size_t(B + 1) * KS * 2));
    vals = reinterpret_cast<bf16*>(take(size_t(B) * VB * 2));
    qeff = reinterpret_cast<float*>(take(size_t(K) * 4));
    g = reinterpret_cast<float*>(take(size_t(B) * 4));
    beta = reinterpret_cast<float*>(take(size_t(B) * 4));
    vw = reinterpret_cast<float*>(take(size_t(B) * 4));
    gram = reinterpret_cast<float*>(take(size_t(B) * kFoldChunk * 4));
    coef = reinterpret_cast<float4*>(take(size_t(B) * 16));
  }
};

/// Sum over this lane's K/32 elements of x[i] * y[i].
template <int N>
__device__ __forceinline__ float lane_dot(const float (&x)[N], const float (&y)[N]) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) s = fmaf(x[i], y[i], s);
  return s;
}

/// Lane `lane`'s K/32 consecutive elements of a raw bf16 row in shared memory, as floats.
template <int K>
__device__ __forceinline__ void load_lane_row(const bf16* row, int lane, float (&x)[K / 32]) {
  load_bf16<K / 32>(row + lane * (K / 32), x);
}

/// Warp 0's effective-query chain over entries t .. 0 (see the file comment): writes vw[0 .. t] and qeff[K] to
/// shared memory (no barrier). The query is keys row B; `scale` the query scale.
template <int K, int VB>
__device__ __forceinline__ void effective_query_chain(const ChainSmem<K, VB>& sm, int B, int t, float scale) {
  constexpr int N = K / 32, KS = ChainSmem<K, VB>::KS;
  const int lane = threadIdx.x % 32;
  float z[N];
  load_lane_row<K>(sm.keys + B * KS, lane, z);
  const float rq = scale * rsqrtf(warp_sum(lane_dot(z, z)) + kL2NormEps);
#pragma unroll
  for (int e = 0; e < N; ++e) z[e] *= rq;
  double gs = 0.0;  // sum of g over the entries already walked: G_t - G_j before entry j
  for (int j = t; j >= 0; j -= 2) {
    const int i = j - 1;  // the pair's older entry (none when i < 0)
    float kj[N], ki[N];
    load_lane_row<K>(sm.keys + j * KS, lane, kj);
    if (i >= 0) {
      load_lane_row<K>(sm.keys + i * KS, lane, ki);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) ki[e] = 0.f;
    }
    float r[5] = {lane_dot(kj, z), lane_dot(ki, z), lane_dot(ki, kj), lane_dot(kj, kj), lane_dot(ki, ki)};
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
#pragma unroll
      for (int x = 0; x < 5; ++x) r[x] += __shfl_xor_sync(0xffffffffu, r[x], off);
    const float rkj = rsqrtf(r[3] + kL2NormEps), bj = sm.beta[j];
    const float sj = r[0], cj = bj * rkj * rkj * sj;
    if (lane == 0) sm.vw[j] = bj * expf(float(gs)) * rkj * sj;
#pragma unroll
    for (int e = 0; e < N; ++e) z[e] = fmaf(-cj, kj[e], z[e]);
    gs += double(sm.g[j]);
    if (i >= 0) {
      const float rki = rsqrtf(r[4] + kL2NormEps), bi = sm.beta[i];
      const float si = fmaf(-cj, r[2], r[1]);  // k_i . (z - cj k_j)
      const float ci = bi * rki * rki * si;
      if (lane == 0) sm.vw[i] = bi * expf(float(gs)) * rki * si;
#pragma unroll
      for (int e = 0; e < N; ++e) z[e] = fmaf(-ci, ki[e], z[e]);
      gs += double(sm.g[i]);
    }
  }
  const float decay = expf(float(gs));  // e^{G_t}
#pragma unroll
  for (int e = 0; e < N; ++e) sm.qeff[lane * N + e] = decay * z[e];
}

/// Warps 1 .. 3 before a flush of T entries: the chunks' Gram matrices (one dot product per thread), then per entry
/// the chunk's A row in place and the coefficients (ChainSmem::coef). Named barrier inside; warps 1 .. 3 call.
template <int K, int VB>
__device__ __forceinline__ void flush_coefficients(const ChainSmem<K, VB>& sm, int T) {
  constexpr int KS = ChainSmem<K, VB>::KS, C = kFoldChunk;
  const int tid = threadIdx.x - 32, nthreads = kThreads - 32;
  for (int p = tid; p < T * C; p += nthreads) {
    const int i = p / C, jj = p % C, j = i / C * C + jj;
    if (j > i) continue;
    sm.gram[i * C + jj] = bf16_row_dot<K, true>(sm.keys + i * KS, sm.keys + j * KS);
  }
  sync_helper_warps();
  for (int i = tid; i < T; i += nthreads) {
    const int c0 = i / C * C, c1 = min(c0 + C, T);
    float* a = sm.gram + i * C;
    const float rki = rsqrtf(a[i - c0] + kL2NormEps), bi = sm.beta[i];
    float gsum = 0.f;  // sum of g over entries j + 1 .. i, from i down
    for (int j = i - 1; j >= c0; --j) {
      gsum += sm.g[j + 1];
      a[j - c0] *= bi * expf(gsum) * rki * rsqrtf(sm.gram[j * C + (j - c0)] + kL2NormEps);
    }
    float gc = 0.f, gend = 0.f;  // Gc_i and Gc_end, summed from the chunk's first entry
    for (int j = c0; j < c1; ++j) {
      gend += sm.g[j];
      if (j == i) gc = gend;
    }
    float after = 0.f;  // Gc_end - Gc_i, summed from the chunk's last entry down
    for (int j = c1 - 1; j > i; --j) after += sm.g[j];
    sm.coef[i] = make_float4(bi * expf(gc) * rki, expf(after) * rki, expf(gend), 0.f);
  }
}

/// One flush chunk, entries c0 .. c0 + cn - 1, on the slice in sm.tile: P (all threads) -> U and W (thread per column)
/// -> S <- e^{Gc_end} S + sum_j k_j W_j^T (each thread its own rows and columns). The last chunk writes the slice to
/// s0 ([K][V] of this value head, columns v0 ..) instead of the tile. Barriers inside; all threads call, after a
/// barrier that ends every earlier use of sm.scratch and sm.tile.
template <int K, int VB, class Tile>
__device__ __forceinline__ void fold_chunk(const ChainSmem<K, VB>& sm, const Tile& tile, int c0, int cn, bool last,
                                           float* __restrict__ s0, int V) {
  constexpr int KS = ChainSmem<K, VB>::KS, C = kFoldChunk, ES = kThreads / VB, EPT = C / ES;
  static_assert(kThreads % VB == 0 && C % ES == 0, "fold_chunk: VB must divide the block, 128 / VB divide the chunk");
  // P[jj][c] = sum_k S[k][c] k_{c0+jj}[k]: thread (c, js) takes entries js, js + ES, ...
  {
    const int c = threadIdx.x % VB, js = threadIdx.x / VB;
    float acc[EPT];
#pragma unroll
    for (int e = 0; e < EPT; ++e) acc[e] = 0.f;
#pragma unroll 2
    for (int k8 = 0; k8 < K / 8; ++k8) {
      float s[8];
#pragma unroll
      for (int x = 0; x < 8; ++x) s[x] = sm.tile[(k8 * 8 + x) * VB + c];
#pragma unroll
      for (int e = 0; e < EPT; ++e) {
        const int jj = js + e * ES;
        if (jj >= cn) break;
        float kk[8];
        load_bf16<8>(sm.keys + (c0 + jj) * KS + k8 * 8, kk);
#pragma unroll
        for (int x = 0; x < 8; ++x) acc[e] = fmaf(s[x], kk[x], acc[e]);
      }
    }
#pragma unroll
    for (int e = 0; e < EPT; ++e)
      if (js + e * ES < cn) sm.scratch[(js + e * ES) * VB + c] = acc[e];
  }
  __syncthreads();
  // u_i = beta_i v_i - beta_i e^{Gc_i} rk_i P_i - sum_{j<i} A_ij u_j, then W_i = e^{Gc_end - Gc_i} rk_i u_i in place.
  if (threadIdx.x < VB) {
    const int c = threadIdx.x;
    float u[C];
#pragma unroll
    for (int i = 0; i < C; ++i) {
      if (i >= cn) break;
      const float4 cf = sm.coef[c0 + i];
      float x = fmaf(sm.beta[c0 + i], __bfloat162float(sm.vals[(c0 + i) * VB + c]), -cf.x * sm.scratch[i * VB + c]);
#pragma unroll
      for (int j = 0; j < i; ++j) x = fmaf(-sm.gram[(c0 + i) * C + j], u[j], x);
      u[i] = x;
      sm.scratch[i * VB + c] = cf.y * x;
    }
  }
  __syncthreads();
  // S <- e^{Gc_end} S + sum_j k_j[rows] W_j[cols], 4 rows at a time (8 spill at 72 registers).
  const float decay = sm.coef[c0].z;
  constexpr int RB = Tile::ROWS < 4 ? Tile::ROWS : 4;
#pragma unroll 1
  for (int r0 = 0; r0 < Tile::ROWS; r0 += RB) {
    float4 s[RB];
#pragma unroll
    for (int i = 0; i < RB; ++i) {
      const float4 x = tile.at(tile.row(r0 + i));
      s[i] = make_float4(decay * x.x, decay * x.y, decay * x.z, decay * x.w);
    }
    for (int jj = 0; jj < cn; ++jj) {
      float kr[RB];
      load_bf16<RB>(sm.keys + (c0 + jj) * KS + tile.row(r0), kr);
      fma_rows<RB>(s, kr, reinterpret_cast<const float4*>(sm.scratch + jj * VB)[tile.cg]);
    }
#pragma unroll
    for (int i = 0; i < RB; ++i) {
      if (last) {
        if (tile.active) __stcs(reinterpret_cast<float4*>(s0 + int64_t(tile.row(r0 + i)) * V + tile.col), s[i]);
      } else {
        tile.at(tile.row(r0 + i)) = s[i];
      }
    }
  }
  if (!last) __syncthreads();
}

template <int K, int VB>
size_t chain_smem_bytes(int buffer_size) {
  return ChainSmem<K, VB>::bytes(buffer_size);
}

/// Blocks per SM the chain kernel's registers must allow (at most 80 registers for 6, 72 for 7): as many as its
/// shared memory allows at small B for a 32 KiB slice, so that registers never limit the bytes in flight.
constexpr int chain_min_blocks(int K, int VB) { return K * VB >= 128 * 64 ? 6 : 7; }

template <int K, int VB>
__global__ void __launch_bounds__(kThreads, chain_min_blocks(K, VB))
    kvbuffer_raw_decode_kernel(const RawKVBufferDecodeParams p) {
  using Tile = SmemTile<K, VB, kThreads>;
  using Smem = ChainSmem<K, VB>;
  extern __shared__ __align__(16) char dyn_smem[];  // chain_smem_bytes<K, VB>(B); no static shared memory
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = blockIdx.z;
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = h / p.shape.group();
  const RawKVBufferPool& pool = p.pool;
  const int slot = p.slot[row];
  const int64_t vo = (int64_t(row) * HV + h) * V;
  if (slot < 0 || slot >= pool.num_slots) {  // padding row: pool untouched, output zeroed
    zero_output_slice(p.o, p.o_dtype, vo, v0, VB, V);
    return;
  }
  const int B = pool.buffer_size;
  const int n = min(max(pool.fill[slot], 0), B - 1);  // precondition 0 <= fill < B; clamped
  const int T = n + 1;
  const bool flush = T == B;
  float* s0 = pool.checkpoint + (int64_t(slot) * HV + h) * K * V;
  const int64_t e0 = int64_t(slot) * pool.capacity;

  Smem sm;
  sm.setup(dyn_smem, B);
  Tile tile;
  tile.setup(reinterpret_cast<float4*>(sm.tile), v0, V);
  // Group 1: raw keys, the query and the value slices (small); group 2: the checkpoint slice.
  {
    constexpr int kc = K / 8, vc = VB / 8;
    const bf16* kt = p.in.k + (int64_t(row) * H + hk) * K;
    const bf16* qt = p.in.q + (int64_t(row) * H + hk) * K;
    for (int c = threadIdx.x; c < (T + 1) * kc; c += kThreads) {
      const int j = c / kc, part = c % kc;
      const bf16* src = j < n ? pool.keys + ((e0 + j) * H + hk) * K : (j == n ? kt : qt);
      cp_async16(sm.keys + (j <= n ? j : B) * Smem::KS + part * 8, src + part * 8, true);
    }
    for (int c = threadIdx.x; c < T * vc; c += kThreads) {
      const int j = c / vc, part = c % vc;
      const bf16* src = j < n ? pool.values + ((e0 + j) * HV + h) * V : p.in.v + vo;
      cp_async16(sm.vals + j * VB + part * 8, src + v0 + part * 8, true);
    }
  }
  cp_async_commit();
  tile.load_state_async(s0, V);
  cp_async_commit();
  {
    const float A_log = p.in.A_log[h], dt_bias = p.in.dt_bias[h];
    for (int j = threadIdx.x; j < T; j += kThreads) {
      const bool token = j == n;
      const int64_t i = token ? int64_t(row) * HV + h : (e0 + j) * HV + h;
      const bf16 a = token ? p.in.a[i] : pool.gate_a[i], b = token ? p.in.b[i] : pool.gate_b[i];
      const Gate gt = raw_gate(a, b, A_log, dt_bias);
      sm.g[j] = gt.g;
      sm.beta[j] = gt.beta;
      if (token && !flush && blockIdx.x == 0) {  // append the token's a and b at entry n (one block per head)
        pool.gate_a[(e0 + n) * HV + h] = a;
        pool.gate_b[(e0 + n) * HV + h] = b;
      }
    }
  }
  cp_async_wait_group<1>();
  __syncthreads();  // keys, query, value slices and gates in shared memory; the slice still streaming

  if (threadIdx.x < 32) effective_query_chain<K, VB>(sm, B, n, p.in.scale);
  else if (flush) flush_coefficients<K, VB>(sm, T);
  cp_async_wait_all();
  __syncthreads();

  // o = S0^T qeff + sum_j vw_j v_j over this thread's rows and columns, then over the row groups.
  float acc[4] = {0.f, 0.f, 0.f, 0.f}, unused[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int i = 0; i < Tile::ROWS; ++i) {
    const float4 s = tile.at(tile.row(i));
    const float w = sm.qeff[tile.row(i)];
    acc[0] = fmaf(s.x, w, acc[0]);
    acc[1] = fmaf(s.y, w, acc[1]);
    acc[2] = fmaf(s.z, w, acc[2]);
    acc[3] = fmaf(s.w, w, acc[3]);
  }
  for (int j = tile.rg; j < T; j += Tile::RG) {
    float v[4];
    load_bf16<4>(sm.vals + j * VB + 4 * tile.cg, v);
    const float w = sm.vw[j];
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[c] = fmaf(w, v[c], acc[c]);
  }
  tile.reduce_rows(acc, unused, sm.scratch);
  if (tile.rg == 0 && tile.active) store_output4(p.o, p.o_dtype, vo + tile.col, acc);

  if (flush) {  // S0 <- the state after all T entries, chunk by chunk
    __syncthreads();  // every thread has read its row sums from sm.scratch
    for (int c0 = 0; c0 < T; c0 += kFoldChunk)
      fold_chunk<K, VB>(sm, tile, c0, min(kFoldChunk, T - c0), c0 + kFoldChunk >= T, s0, V);
    return;
  }
  // Append the raw entry at position n from shared memory: this slice of v, and (one block per key head) the key;
  // a and b went out with the gates.
  const int64_t e = e0 + n;
  for (int c = threadIdx.x; c < VB / 8; c += kThreads)
    reinterpret_cast<uint4*>(pool.values + (e * HV + h) * V + v0)[c] =
        reinterpret_cast<const uint4*>(sm.vals + n * VB)[c];
  if (blockIdx.x == 0 && h % p.shape.group() == 0)
    for (int c = threadIdx.x; c < K / 8; c += kThreads)
      reinterpret_cast<uint4*>(pool.keys + (e * H + hk) * K)[c] =
          reinterpret_cast<const uint4*>(sm.keys + n * Smem::KS)[c];
}

template <int K, int VB>
cudaError_t launch_tile(const RawKVBufferDecodeParams& p, cudaStream_t stream) {
  const dim3 grid(p.shape.head_dim_v / VB, p.shape.heads_v, p.batch);
  const size_t smem = chain_smem_bytes<K, VB>(p.pool.buffer_size);
  if (const cudaError_t e = allow_dynamic_smem(kvbuffer_raw_decode_kernel<K, VB>, smem); e != cudaSuccess) return e;
  kvbuffer_raw_decode_kernel<K, VB><<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

template <int K>
cudaError_t launch_width(const RawKVBufferDecodeParams& p, cudaStream_t stream) {
  switch (raw_slice_width(p.batch, p.shape, p.tile)) {
    case 64: if constexpr (K < 256) return launch_tile<K, 64>(p, stream); else break;
    case 32: return launch_tile<K, 32>(p, stream);
    case 16: return launch_tile<K, 16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

template <int K>
size_t block_smem_k(int VB, int buffer_size) {
  auto of = [&](auto vb) { return chain_smem_bytes<K, decltype(vb)::value>(buffer_size); };
  switch (VB) {
    case 64: return of(std::integral_constant<int, 64>{});
    case 32: return of(std::integral_constant<int, 32>{});
    case 16: return of(std::integral_constant<int, 16>{});
  }
  return 0;
}

}  // namespace

size_t raw_decode_block_smem(const GdnShape& shape, int batch, int buffer_size) {
  const int VB = raw_slice_width(batch, shape);
  switch (shape.head_dim_k) {
    case 32: return block_smem_k<32>(VB, buffer_size);
    case 64: return block_smem_k<64>(VB, buffer_size);
    case 128: return block_smem_k<128>(VB, buffer_size);
    case 256: return block_smem_k<256>(VB, buffer_size);
  }
  return 0;
}

std::string validate(const RawKVBufferDecodeParams& p) {
  if (auto e = validate_raw_inputs(p.shape, p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens != 1) return "tokens = " + std::to_string(p.in.tokens) + ": raw decode takes 1 token per row";
  if (auto e = validate_raw_pool(p.pool); !e.empty()) return e;
  if (!p.slot || !p.o) return "slot and o must be set";
  if (auto e = validate_raw_tile(p.tile, p.shape); !e.empty()) return e;
  return "";
}

cudaError_t launch_kvbuffer_raw_decode(const RawKVBufferDecodeParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  return by_head_dim_k(p.shape.head_dim_k, [&](auto k) { return launch_width<decltype(k)::value>(p, stream); });
}

}  // namespace kvb
