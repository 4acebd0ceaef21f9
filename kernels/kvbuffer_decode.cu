// KVBuffer decode, delta form (DESIGN.md section 3). Per row with n = fill[slot] buffered entries and token t = n + 1:
//   u_t = beta (v - e^{G_t} S0^T k^_t - sum_j e^{G_t - G_j} (k^_j . k^_t) u_j)
//   o_t = e^{G_t} S0^T q^_t + sum_{j<=t} e^{G_t - G_j} (k^_j . q^_t) u_j
// then appends (k_t, u_t, g_t), or, when that makes B entries, flushes: S0 <- e^{G_t} S0 + sum_{j<=t} ... k^_j u_j^T.
// A stateless row (has_state 0, DESIGN.md section 3) streams no checkpoint tile: S0 = 0, only its buffer is read; its
// flush folds the buffer into a zero tile and writes the materialised state at state_slot.
// One pass over S0 serves both products: the buffer rows join the checkpoint rows in the same column reduction.
// Work items: (V slice, value head, row); a block of kThreads threads owns a K x VB slice of S0 per item and takes
// items in turn (persistent blocks, the next item's copies streaming while the current one finishes).
#include <algorithm>
#include <string>

#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"
#include "kernels/launch_util.h"
#include "kernels/pdl.cuh"

namespace kvb {
namespace {

using namespace dev;

/// Dynamic shared memory of one block: the K x VB checkpoint slice and `capacity` delta rows, then the buffer's keys
/// and per-entry values (BufferSmem).
template <int K, int VB, int THREADS, bool kStateless>
constexpr size_t smem_bytes(int capacity) {
  return SmemTile<K, VB, THREADS, kStateless>::bytes(capacity) + BufferSmem<K>::bytes(capacity);
}

/// Blocks per SM the decode kernel's registers must allow: 128-thread blocks of a 64-column slice take about 40 KB of
/// shared memory at B <= 16, so five fit an SM; the registers are held to that too (at most 96 per thread).
template <int VB, int THREADS>
constexpr int decode_min_blocks() { return THREADS == 128 && VB == 64 ? 5 : 1; }

/// One work item of the decode grid, value columns [v0, v0 + VB) of value head h of batch row `row`, with what a
/// block must know of its request before streaming it. Items are numbered slice-fastest: item = x + slices * (h +
/// HV * row).
struct DecodeItem {
  int row, h, v0, slot;
  bool padding;    ///< the pool is untouched and the output slice zeroed (also a state that cannot be found)
  bool has_state;  ///< its checkpoint slice is read (false: a stateless row, S0 = 0)
  float* s0;       ///< its checkpoint matrix [K][V]; nullptr when it has no checkpoint row
};

template <int K, int VB, bool kStateless>
__device__ __forceinline__ DecodeItem decode_item(const KVBufferDecodeParams& p, int item, int slices) {
  const KVBufferPool& pool = p.pool;
  const int HV = p.shape.heads_v, V = p.shape.head_dim_v;
  DecodeItem it;
  const int t = item / slices;
  it.v0 = (item - t * slices) * VB;
  it.h = t % HV;
  it.row = t / HV;
  it.slot = p.slot[it.row];
  const bool padding = it.slot < 0 || it.slot >= pool.num_slots;
  // Stateless rows (no state yet: S0 = 0) read no checkpoint; their flush materialises one at state_slot.
  it.has_state = !kStateless && !padding && (!p.has_state || p.has_state[it.row] != 0);
  const int cslot = padding ? -1 : p.state_slot ? p.state_slot[it.row] : it.slot;
  const bool cslot_ok = cslot >= 0 && cslot < pool.checkpoint_rows();
  it.s0 = cslot_ok ? pool.checkpoint + (int64_t(cslot) * HV + it.h) * K * V : nullptr;
  it.padding = padding || (it.has_state && !cslot_ok);
  return it;
}

/// The buffer position of a non-padding item: 0 <= fill < B after decode steps; up to B - 1 + m after a speculative
/// accept (gdn_params.h), when the token makes more than B entries and the step flushes them all.
__device__ __forceinline__ int item_fill(const KVBufferPool& pool, const DecodeItem& it) {
  return min(max(pool.fill[it.slot], 0), pool.capacity);
}

/// Starts an item's copies into shared memory in two groups: its n entries' keys and log-decays first (the
/// coefficients need only them), then its checkpoint slice (unless `slice_issued`) and deltas, which keep streaming
/// while the coefficients are formed. `tile` is set up for the item's columns.
template <int K, class Tile, bool kStateless>
__device__ __forceinline__ void issue_item_copies(const KVBufferDecodeParams& p, const DecodeItem& it, int n,
                                                  bool slice_issued, const Tile& tile, const BufferSmem<K>& bs) {
  const KVBufferPool& pool = p.pool;
  const int HV = p.shape.heads_v, V = p.shape.head_dim_v;
  bs.load_async(pool, p.shape.heads_qk, HV, it.slot, it.h, it.h / p.shape.group(), n);
  cp_async_commit();
  if constexpr (!kStateless)
    if (it.has_state && !slice_issued) tile.load_state_async(it.s0, V);
  tile.load_extra_async(pool.deltas + (int64_t(it.slot) * pool.capacity * HV + it.h) * V, int64_t(HV) * V, n);
  cp_async_commit();
}

/// Persistent blocks (grid: the blocks the GPU holds at once, at most one per item), each taking items blockIdx.x,
/// blockIdx.x + gridDim.x, ... in a software pipeline: as soon as an item's checkpoint slice and buffer have been read
/// out of shared memory (after the row reduction; after the fold on a flush step), the next item's copies are issued,
/// so that they stream during this item's output and append and the next item's token preparation.
/// kStateless: a stateless batch (KVBufferDecodeParams::stateless_batch): no checkpoint tile at all.
template <int K, int VB, int THREADS, bool kStateless>
__global__ void __launch_bounds__(THREADS, decode_min_blocks<VB, THREADS>())
    kvbuffer_decode_kernel(const KVBufferDecodeParams p) {
  using Tile = SmemTile<K, VB, THREADS, kStateless>;
  extern __shared__ __align__(16) char dyn_smem[];  // smem_bytes<K, VB>(capacity)
  __shared__ float red[2 * Tile::WARPS * VB];
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v;
  const KVBufferPool& pool = p.pool;
  const int slices = num_slices(V, VB), items = slices * HV * p.batch;
  BufferSmem<K> bs;
  bs.setup(dyn_smem + Tile::bytes(pool.capacity), pool.capacity);

  int item = blockIdx.x;  // < items: the launcher sizes the grid so
  DecodeItem cur = decode_item<K, VB, kStateless>(p, item, slices);
  int n = 0;
  // PDL (kernels/pdl.cuh): the first item's checkpoint slice, the layer's own state, streams before the wait; so do
  // its buffer position and entries when the previous kernel writes no buffer position (fill_before_wait). The token
  // inputs are read after it.
  bool slice_issued = false, copies_issued = false;
  {
    Tile tile;
    tile.setup(reinterpret_cast<float4*>(dyn_smem), cur.v0, V);
    if (p.pdl && !cur.padding) {
      if (p.fill_before_wait) {
        n = item_fill(pool, cur);
        issue_item_copies<K, Tile, kStateless>(p, cur, n, false, tile, bs);
        copies_issued = true;
      } else if constexpr (!kStateless) {
        if (cur.has_state) {
          tile.load_state_async(cur.s0, V);
          cp_async_commit();
          slice_issued = true;
        }
      }
    }
    pdl_wait();
    pdl_launch_dependents();
    if (!cur.padding && !copies_issued) {
      n = item_fill(pool, cur);
      issue_item_copies<K, Tile, kStateless>(p, cur, n, slice_issued, tile, bs);
    }
  }

  for (;;) {
    const int next = item + int(gridDim.x);
    DecodeItem nxt{};
    int n_next = 0;
    // Issues the next item's copies; called once per item, where this item's shared memory is free.
    auto prefetch_next = [&] {
      if (next >= items) return;
      nxt = decode_item<K, VB, kStateless>(p, next, slices);
      if (nxt.padding) return;
      Tile t;
      t.setup(reinterpret_cast<float4*>(dyn_smem), nxt.v0, V);
      n_next = item_fill(pool, nxt);
      issue_item_copies<K, Tile, kStateless>(p, nxt, n_next, false, t, bs);
    };
    const int h = cur.h, hk = h / p.shape.group(), row = cur.row;
    const int64_t vo = (int64_t(row) * HV + h) * V;
    Tile tile;
    tile.setup(reinterpret_cast<float4*>(dyn_smem), cur.v0, V);
    if (cur.padding) {
      zero_output_slice(p.o, p.o_dtype, vo, cur.v0, VB, V);
      prefetch_next();
    } else {
      const bool flush = n + 1 >= pool.buffer_size;
      const int lane = threadIdx.x % 32;
      const bf16* qp = p.in.q + (int64_t(row) * H + hk) * K;
      const bf16* kp = p.in.k + (int64_t(row) * H + hk) * K;
      WarpVec<K> qv, kv;
      qv.load(qp, lane);
      kv.load(kp, lane);
      float kr[Tile::ROWS], qr[Tile::ROWS], vv[4];
      load_bf16<Tile::ROWS>(kp + tile.row(0), kr);
      load_bf16<Tile::ROWS>(qp + tile.row(0), qr);
      load4(p.in.v + vo + tile.col, tile.active, vv);
      const Gate gate = prepare_gate(p.in, row, h, HV);
      const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
#pragma unroll
      for (int r = 0; r < Tile::ROWS; ++r) {
        kr[r] *= nrm.rk;
        qr[r] *= nrm.rq;
      }

      cp_async_wait_group<1>();  // keys and log-decays (and a slice issued before the wait, committed first)
      __syncthreads();           // keys and log-decays in shared memory; the slice still streaming
      buffer_coefficients<K>(n, gate.g, &kv, &qv, nrm, bs);
      // [S0; u_1..u_n]^T [e^{G_t} k^; w_j (k^_j . k^_t)] and the same with q^: one pass over checkpoint and buffer.
      // A thread reads only the state and delta rows it copied itself, so its own wait suffices for them.
      cp_async_wait_all();
      float sk[4] = {0.f, 0.f, 0.f, 0.f}, sq[4] = {0.f, 0.f, 0.f, 0.f};
      if constexpr (!kStateless)
        if (cur.has_state) tile.accumulate2(kr, sk, qr, sq);
      __syncthreads();  // buffer coefficients in shared memory
      const float decay0 = bs.decay0[0];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        sk[c] *= decay0;
        sq[c] *= decay0;
      }
      accumulate_buffer<Tile, K>(tile, bs, n, sk, sq);
      tile.reduce_rows(sk, sq, red);  // past its barrier every thread has read its tile rows and the coefficients
      if (!flush) prefetch_next();

      float u[4], o[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        u[c] = gate.beta * (vv[c] - sk[c]);
        o[c] = sq[c] + nrm.kq * u[c];
      }
      if (tile.rg == 0 && tile.active) store_output4(p.o, p.o_dtype, vo + tile.col, o);

      if (flush) {  // S0 <- e^{G_t} S0 + k^_t u_t^T + sum_j w_j k^_j u_j^T, written once
        if (cur.s0)  // a stateless row without a checkpoint row writes nothing
          fold_and_store<K>(cur.s0, V, decay0, kr, u, /*from_zero=*/kStateless || !cur.has_state, n, bs, tile);
        __syncthreads();  // the fold read the whole tile and buffer
        prefetch_next();
      } else {  // append entry n: u_t (this slice), g_t (one thread per head), the raw key (one block per key head)
        const int64_t e = int64_t(cur.slot) * pool.capacity + n;
        if (tile.rg == 0 && tile.active)
          *reinterpret_cast<float4*>(pool.deltas + (e * HV + h) * V + tile.col) = make_float4(u[0], u[1], u[2], u[3]);
        if (cur.v0 == 0) {
          if (threadIdx.x == 0) pool.log_decay[e * HV + h] = gate.g;
          if (h % p.shape.group() == 0) {
            const uint4* src = reinterpret_cast<const uint4*>(kp);
            uint4* dst = reinterpret_cast<uint4*>(pool.keys + (e * H + hk) * K);
            for (int c = threadIdx.x; c < K / 8; c += blockDim.x) dst[c] = src[c];
          }
        }
      }
    }
    if (next >= items) return;
    item = next;
    cur = nxt;
    n = n_next;
  }
}

template <int K, int VB, int THREADS = kThreads, bool kStateless = false>
cudaError_t launch_tile(const KVBufferDecodeParams& p, cudaStream_t stream) {
  const size_t smem = smem_bytes<K, VB, THREADS, kStateless>(p.pool.capacity);
  const auto kernel = kvbuffer_decode_kernel<K, VB, THREADS, kStateless>;
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  int per_sm = 0;
  if (const cudaError_t e = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), THREADS, smem, per_sm);
      e != cudaSuccess)
    return e;
  const int64_t items = int64_t(num_slices(p.shape.head_dim_v, VB)) * p.shape.heads_v * p.batch;
  int64_t blocks = std::min<int64_t>(items, int64_t(std::max(per_sm, 1)) * sm_count());
  if (p.max_blocks > 0) blocks = std::min<int64_t>(blocks, p.max_blocks);
  return launch_kernel(kernel, dim3(unsigned(blocks)), THREADS, smem, stream, p.pdl, p);
}

}  // namespace

std::string validate_pool(const KVBufferPool& pool) {
  if (!pool.checkpoint || !pool.keys || !pool.deltas || !pool.log_decay || !pool.fill)
    return "pool: checkpoint, keys, deltas, log_decay and fill must be set";
  if (pool.num_slots < 1) return "pool.num_slots must be >= 1";
  if (pool.num_checkpoints < 0)
    return "pool.num_checkpoints = " + std::to_string(pool.num_checkpoints) + " must be >= 0 (0: num_slots)";
  if (pool.buffer_size < 1 || pool.buffer_size > dev::kMaxBuffer)
    return "buffer_size = " + std::to_string(pool.buffer_size) + " is out of range (allowed: 1 to " +
           std::to_string(dev::kMaxBuffer) + ")";
  if (pool.capacity < std::max(pool.buffer_size - 1, 1) || pool.capacity > dev::kMaxBuffer)
    return "pool.capacity = " + std::to_string(pool.capacity) + " must be in [max(buffer_size - 1, 1), " +
           std::to_string(dev::kMaxBuffer) + "]";
  return "";
}

std::string validate(const KVBufferDecodeParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens != 1) return "tokens = " + std::to_string(p.in.tokens) + ": kvbuffer decode takes 1 token per row";
  if (auto e = validate_pool(p.pool); !e.empty()) return e;
  if (!p.slot || !p.o) return "slot and o must be set";
  if (p.max_blocks < 0) return "max_blocks = " + std::to_string(p.max_blocks) + " must be >= 0 (0: no cap)";
  return "";
}

cudaError_t launch_kvbuffer_decode(const KVBufferDecodeParams& p, cudaStream_t stream) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  const bool narrow = narrow_slices(p.batch, p.shape);
  if (p.stateless_batch) {  // buffer-only blocks: whole value heads (up to 128 columns) per block
    switch (p.shape.head_dim_k) {
      case 32: return launch_tile<32, 128, kThreads, true>(p, stream);
      case 64: return launch_tile<64, 128, kThreads, true>(p, stream);
      case 128: return launch_tile<128, 128, kThreads, true>(p, stream);
      case 256: return launch_tile<256, 128, kThreads, true>(p, stream);
    }
    return cudaErrorInvalidValue;
  }
  switch (p.shape.head_dim_k) {
    case 32: return narrow ? launch_tile<32, 16>(p, stream) : launch_tile<32, 32>(p, stream);
    case 64: return narrow ? launch_tile<64, 16>(p, stream) : launch_tile<64, 32>(p, stream);
    case 128:
      if (narrow) return launch_tile<128, 16>(p, stream);
      // Two slices per head, 128 threads measured fastest on the H200 at batch >= 64.
      switch (tile_override()) {
        case 32128: return launch_tile<128, 32>(p, stream);
        case 64256: return launch_tile<128, 64, 256>(p, stream);
        case 128256: return launch_tile<128, 128, 256>(p, stream);
        default: return launch_tile<128, 64, 128>(p, stream);
      }
    case 256: return launch_tile<256, 16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace kvb
