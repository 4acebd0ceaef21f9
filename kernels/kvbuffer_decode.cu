// KVBuffer decode, delta form (DESIGN.md section 3). Per row with n = fill[slot] buffered entries and token t = n + 1:
//   u_t = beta (v - e^{G_t} S0^T k^_t - sum_j e^{G_t - G_j} (k^_j . k^_t) u_j)
//   o_t = e^{G_t} S0^T q^_t + sum_{j<=t} e^{G_t - G_j} (k^_j . q^_t) u_j
// then appends (k_t, u_t, g_t), or, when that makes B entries, flushes: S0 <- e^{G_t} S0 + sum_{j<=t} ... k^_j u_j^T.
// A stateless row (has_state 0, DESIGN.md section 3) streams no checkpoint tile: S0 = 0, only its buffer is read; its
// flush folds the buffer into a zero tile and writes the materialised state at state_slot.
// One pass over S0 serves both products: the buffer rows join the checkpoint rows in the same column reduction.
// The checkpoint is fp32 or bf16 (pool.state_dtype: S, widened in shared memory, rounded where the flush stores it);
// the buffered entries are the same in both. A bf16 whole-head slice arrives by one bulk copy (TMA).
// Grid: (V slices, HV, N), the rows in batch order or in a row order that spreads the flushing rows over the launch
// (kernels/row_order.h); block: kThreads threads owning a K x VB slice of S0.
#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_device.cuh"
#include "kernels/launch_util.h"
#include "kernels/pdl.cuh"
#include "kernels/stagger.cuh"

namespace kvb {
namespace {

using namespace dev;

/// Dynamic shared memory of one block: the K x VB checkpoint slice and `capacity` delta rows, then the buffer's keys
/// and per-entry values (BufferSmem).
template <int K, int VB, int THREADS, bool kStateless, typename S>
constexpr size_t smem_bytes(int capacity) {
  return SmemTile<K, VB, THREADS, kStateless, S>::bytes(capacity) + BufferSmem<K>::bytes(capacity);
}

/// Blocks per SM the decode kernel's registers must allow: 128-thread blocks of a 64-column slice of K = 128 take
/// 37,520 bytes of shared memory at B = 8 (dynamic plus static, the row reduction in turn:
/// SmemTile::reduce_rows_in_turn), so six fit an SM of 228 KB, and their registers are held to six too (at most 80 a
/// thread, no spills); from B = 16 (41,776 bytes) five fit. Six blocks beat five from batch 64 on and lose at batch
/// 16 with PDL, where a layer is 1.3 waves (docs/FINDINGS.md). The stateless kernel's whole-head blocks (K <= 128)
/// are held to four (at most 128 registers), as many as its shared memory allows at B = 64.
template <int K, int VB, int THREADS>
constexpr int decode_min_blocks() {
  return THREADS != 128 ? 1 : VB == 64 ? 6 : VB == 128 && K <= 128 ? 4 : 1;
}

/// Blocks per SM the bf16 whole-head blocks (decode_kq_shared) are held to where shared memory holds that many: five
/// (at most 96 registers a thread), for short buffers (B <= 8 at K = V = 128; launch_typed asks the occupancy);
/// longer buffers keep decode_min_blocks' four.
constexpr int kDecodeShortBufferBlocks = 5;

/// Rows a flush takes into registers per pass over the buffer (fold_and_store): 16 where a register cap of MINB
/// blocks an SM leaves at least 128 registers a thread, else 8 (fewer passes cost registers).
template <int THREADS, int MINB>
constexpr int decode_fold_rows() {
  return 65536 / (THREADS * MINB) >= 128 ? 16 : 8;
}

/// Whether a block keeps the token's k^ and q^ at its rows in shared memory instead of registers: the bf16 whole-head
/// blocks (one row group a warp, 32 rows a thread), where the 64 registers of those rows, loaded from global memory by
/// every thread, are read back four rows at a time from a warp-wide broadcast instead.
template <int K, int VB, int THREADS, bool kStateless, typename S>
constexpr bool decode_kq_shared() {
  return !kStateless && std::is_same<S, bf16>::value && VB == 128 && THREADS == 128 && K == 128;
}

/// kStateless: a stateless batch (KVBufferDecodeParams::stateless_batch): no checkpoint tile at all. S: the
/// checkpoint's element type (float or bf16). MINB: the blocks per SM its registers must allow.
template <int K, int VB, int THREADS, bool kStateless, typename S, int MINB>
__global__ void __launch_bounds__(THREADS, MINB)
    kvbuffer_decode_kernel(const KVBufferDecodeParams p, int early_blocks, const FirstWaveStagger stagger) {
  using Tile = SmemTile<K, VB, THREADS, kStateless, S>;
  extern __shared__ __align__(128) char dyn_smem[];  // smem_bytes<K, VB, THREADS, kStateless, S>(capacity)
  // Blocks held to six an SM reduce their rows through half the shared memory, a's partials then b's: what lets the
  // sixth fit (decode_min_blocks); the blocks whose k^ and q^ rows take shared memory do the same.
  constexpr bool kKqShared = decode_kq_shared<K, VB, THREADS, kStateless, S>();
  constexpr bool kReduceInTurn = MINB == 6 || kKqShared;
  __shared__ float red[(kReduceInTurn ? 1 : 2) * Tile::WARPS * VB];
  static_assert(!kKqShared || Tile::CG == 32, "k^ and q^ rows in shared memory: one row group a warp");
  __shared__ __align__(16) float kq_rows[kKqShared ? Tile::RG * 2 * Tile::ROWS : 4];  // [RG][k^, q^][ROWS]
  __shared__ __align__(8) uint64_t slice_landed;  // the checkpoint slice's bulk load (bulk below)
  // The row: from row_order (its slot and fill with it, one 16-byte load) or in batch order. Either is read before the
  // PDL wait: no kernel just before this one writes the slots or the order (KVBufferDecodeParams::row_order).
  stagger_first_wave(stagger);
  const OrderedRow ordered = p.row_order ? p.row_order[blockIdx.z] : OrderedRow{int(blockIdx.z), p.slot[blockIdx.z]};
  const int v0 = blockIdx.x * VB, h = blockIdx.y, row = ordered.row;
  // The key head by GdnShape::key_head (two float operations instead of two integer divisions at the block's start;
  // exact here: heads_v is a grid dimension y, at most 65,535).
  const int H = p.shape.heads_qk, HV = p.shape.heads_v, V = p.shape.head_dim_v, hk = p.shape.key_head(h);
  const KVBufferPool& pool = p.pool;
  const int cap = pool.capacity;
  const int slot = ordered.slot;
  const int64_t vo = (int64_t(row) * HV + h) * V;
  const bool padding = slot < 0 || slot >= pool.num_slots;  // pool untouched, output zeroed
  // Stateless rows (no state yet: S0 = 0) read no checkpoint; their flush materialises one at state_slot.
  const bool has_state = !kStateless && !padding && (!p.has_state || p.has_state[row] != 0);
  const int cslot = padding ? -1 : p.state_slot ? p.state_slot[row] : slot;
  const bool cslot_ok = cslot >= 0 && cslot < pool.checkpoint_rows();
  S* s0 = cslot_ok ? static_cast<S*>(pool.checkpoint) + (int64_t(cslot) * HV + h) * K * V : nullptr;
  // The slice of a bf16 whole-head block, one contiguous 32 KB run of the checkpoint where V = VB, arrives by one bulk
  // copy (SmemTile::load_state_bulk) that one thread issues, instead of 4,096 eight-byte copies across the block.
  const bool bulk = kKqShared && V == VB;
  Tile tile;
  tile.setup(reinterpret_cast<float4*>(dyn_smem), v0, V);
  const auto load_slice = [&] {
    if constexpr (!kStateless) {
      if (bulk) {
        if (threadIdx.x == 0) {
          bulk_barrier_init(&slice_landed);
          tile.load_state_bulk(s0, &slice_landed);
        }
      } else {
        tile.load_state_async(s0, V);
      }
    }
  };
  // PDL (kernels/pdl.cuh): a block of the first wave (linear index < early_blocks, the blocks the GPU holds at once)
  // may start while the previous kernel finishes, and copies its checkpoint slice before the wait; everything else
  // (token inputs, buffer positions, entries) is read after it. Later blocks start after that kernel has completed
  // and keep the plain order below, where the keys come first: a 32 KB slice queued ahead of a block's buffer
  // positions and keys holds up its coefficients (every block copying its slice first, or prefetching it into L2,
  // made large batches slower; docs/FINDINGS.md).
  const bool early = pdl_first_wave(early_blocks);
  if constexpr (!kStateless)
    if (early && has_state && cslot_ok) {
      load_slice();
      cp_async_commit();
    }
  pdl_wait();
  pdl_launch_dependents();
  if (padding || (has_state && !cslot_ok)) {  // a state that cannot be found is treated as padding
    zero_output_slice(p.o, p.o_dtype, vo, v0, VB, V);
    return;
  }
  // 0 <= fill < B after decode steps; up to B - 1 + m after a speculative accept (gdn_params.h): the token then
  // makes more than B entries and the step flushes them all.
  const int n = min(max(p.row_order ? ordered.fill : pool.fill[slot], 0), cap);
  const bool flush = n + 1 >= pool.buffer_size;

  // Checkpoint slice, deltas, keys and log-decays stream into shared memory while the token is prepared, in two copy
  // groups: the buffer's keys and log-decays first (the coefficients need only them), then this thread's rows of the
  // checkpoint slice and the deltas, which keep streaming while the coefficients are formed.
  BufferSmem<K> bs;
  bs.setup(dyn_smem + Tile::bytes(cap), cap);
  bs.load_async(pool, H, HV, slot, h, hk, n);
  cp_async_commit();
  if constexpr (!kStateless)
    if (has_state && !early) load_slice();
  tile.load_extra_async(pool.fp32_deltas() + (int64_t(slot) * cap * HV + h) * V, int64_t(HV) * V, n);
  cp_async_commit();

  const int lane = threadIdx.x % 32;
  const bf16* qp = p.in.q + (int64_t(row) * H + hk) * K;
  const bf16* kp = p.in.k + (int64_t(row) * H + hk) * K;
  WarpVec<K> qv, kv;
  qv.load(qp, lane);
  kv.load(kp, lane);
  float kr[kKqShared ? 1 : Tile::ROWS], qr[kKqShared ? 1 : Tile::ROWS], vv[4];
  if constexpr (!kKqShared) {
    load_bf16<Tile::ROWS>(kp + tile.row(0), kr);
    load_bf16<Tile::ROWS>(qp + tile.row(0), qr);
  }
  load4(p.in.v + vo + tile.col, tile.active, vv);
  // The gate's inputs are requested with the token's, before any of them is used: formed in place
  // (prepare_gate), their loads waited for the norm, one more memory round trip per block.
  const GateInputs gin = load_gate_inputs(p.in, row, h, HV);
  const Gate gate = form_gate(p.in, gin);
  const QKNorm nrm = warp_qk_norm<K>(qv, kv, p.in.scale);
  float* const kq_mine = kq_rows + (kKqShared ? tile.rg * 2 * Tile::ROWS : 0);  // this warp's rows
  if constexpr (kKqShared) {
    // Lane l holds elements 4l .. 4l + 3 of k and q (WarpVec): this warp's rows are those of lanes 8 rg .. 8 rg + 7.
    if (lane / 8 == tile.rg) {
      const int i0 = (lane % 8) * 4;
      *reinterpret_cast<float4*>(kq_mine + i0) =
          make_float4(kv.x[0] * nrm.rk, kv.x[1] * nrm.rk, kv.x[2] * nrm.rk, kv.x[3] * nrm.rk);
      *reinterpret_cast<float4*>(kq_mine + Tile::ROWS + i0) =
          make_float4(qv.x[0] * nrm.rq, qv.x[1] * nrm.rq, qv.x[2] * nrm.rq, qv.x[3] * nrm.rq);
    }
    __syncwarp();
  } else {
#pragma unroll
    for (int r = 0; r < Tile::ROWS; ++r) {
      kr[r] *= nrm.rk;
      qr[r] *= nrm.rq;
    }
  }

  cp_async_wait_group<1>();  // an early block's checkpoint group, committed first, is complete too
  __syncthreads();  // keys and log-decays in shared memory; the slice still streaming
  buffer_coefficients<K>(n, gate.g, &kv, &qv, nrm, bs);
  // [S0; u_1..u_n]^T [e^{G_t} k^; w_j (k^_j . k^_t)] and the same with q^: one pass over checkpoint and buffer.
  // A thread reads only the state and delta rows it copied itself, so its own wait suffices for them.
  cp_async_wait_all();
  float sk[4] = {0.f, 0.f, 0.f, 0.f}, sq[4] = {0.f, 0.f, 0.f, 0.f};
  if constexpr (!kStateless)
    if (has_state) {
      if (bulk) bulk_wait(&slice_landed);  // initialised by thread 0 before the barrier above
      if constexpr (kKqShared)
        tile.accumulate2_shared(kq_mine, sk, kq_mine + Tile::ROWS, sq);
      else
        tile.accumulate2(kr, sk, qr, sq);
    }
  __syncthreads();  // buffer coefficients in shared memory
  const float decay0 = bs.decay0[0];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    sk[c] *= decay0;
    sq[c] *= decay0;
  }
  accumulate_buffer<Tile, K>(tile, bs, n, sk, sq);
  if constexpr (kReduceInTurn)
    tile.reduce_rows_in_turn(sk, sq, red);
  else
    tile.reduce_rows(sk, sq, red);

  float u[4], o[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    u[c] = gate.beta * (vv[c] - sk[c]);
    o[c] = sq[c] + nrm.kq * u[c];
  }
  if (tile.rg == 0 && tile.active) store_output4(p.o, p.o_dtype, vo + tile.col, o);

  if (flush) {  // S0 <- e^{G_t} S0 + k^_t u_t^T + sum_j w_j k^_j u_j^T, written once
    if (!s0) return;  // stateless row without a checkpoint row: nothing written
    const auto kcol = [&](int i) {
      if constexpr (kKqShared)
        return kq_mine[i];
      else
        return kr[i];
    };
    fold_and_store<K, decode_fold_rows<THREADS, MINB>()>(s0, V, decay0, kcol, u,
                                                         /*from_zero=*/kStateless || !has_state, n, bs, tile);
    return;
  }
  // Append entry n: u_t (this slice), g_t (one thread per head), the raw key (one block per key head).
  const int64_t e = int64_t(slot) * cap + n;
  if (tile.rg == 0 && tile.active)
    *reinterpret_cast<float4*>(pool.fp32_deltas() + (e * HV + h) * V + tile.col) = make_float4(u[0], u[1], u[2], u[3]);
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) pool.log_decay[e * HV + h] = gate.g;
    if (h == 0 || p.shape.key_head(h - 1) != hk) {  // the key group's first head
      const uint4* src = reinterpret_cast<const uint4*>(kp);
      uint4* dst = reinterpret_cast<uint4*>(pool.keys + (e * H + hk) * K);
      for (int c = threadIdx.x; c < K / 8; c += blockDim.x) dst[c] = src[c];
    }
  }
}

/// Launches the decode kernel for p, or, with `describe`, fills it instead (KVBufferDecodeLaunch) and launches nothing.
/// The bf16 whole-head blocks take the instance held to kDecodeShortBufferBlocks blocks an SM where that many fit the
/// shared memory of p's buffer capacity (B <= 8 at K = V = 128), else the one held to decode_min_blocks.
template <int K, int VB, int THREADS, bool kStateless, typename S>
cudaError_t launch_typed(const KVBufferDecodeParams& p, cudaStream_t stream, KVBufferDecodeLaunch* describe) {
  const size_t smem = smem_bytes<K, VB, THREADS, kStateless, S>(p.pool.capacity);
  // Describes or launches `kernel`, whose dynamic shared memory the caller has allowed.
  const auto run = [&](auto kernel) {
    if (describe) {
      size_t static_bytes = 0;
      if (const cudaError_t e = static_smem_bytes(reinterpret_cast<const void*>(kernel), static_bytes);
          e != cudaSuccess)
        return e;
      describe->slice_columns = VB;
      describe->threads = THREADS;
      describe->smem_bytes = smem + static_bytes;
      return resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), THREADS, smem,
                                    describe->resident_blocks_per_sm);
    }
    const dim3 grid(num_slices(p.shape.head_dim_v, VB), p.shape.heads_v, p.batch);
    int early_blocks = 0;
    if (const cudaError_t e = pdl_first_wave_blocks(kernel, THREADS, smem, p.pdl, early_blocks); e != cudaSuccess)
      return e;
    // bf16 checkpoints launched with PDL: the first wave (early_blocks, the resident blocks of every SM) staggered
    // (kernels/stagger.cuh).
    const int ns = std::is_same<S, bf16>::value && p.pdl ? kFirstWaveStaggerNs : 0;
    const FirstWaveStagger stagger = first_wave_stagger(early_blocks / sm_count(), grid, ns);
    return launch_kernel(kernel, grid, THREADS, smem, stream, p.pdl, p, early_blocks, stagger);
  };
  if constexpr (decode_kq_shared<K, VB, THREADS, kStateless, S>()) {
    const auto short_buffer = kvbuffer_decode_kernel<K, VB, THREADS, kStateless, S, kDecodeShortBufferBlocks>;
    if (const cudaError_t e = allow_dynamic_smem(short_buffer, smem); e != cudaSuccess) return e;
    int resident = 0;
    if (const cudaError_t e = resident_blocks_per_sm(reinterpret_cast<const void*>(short_buffer), THREADS, smem,
                                                     resident);
        e != cudaSuccess)
      return e;
    if (resident >= kDecodeShortBufferBlocks) return run(short_buffer);
  }
  const auto kernel = kvbuffer_decode_kernel<K, VB, THREADS, kStateless, S, decode_min_blocks<K, VB, THREADS>()>;
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  return run(kernel);
}

/// launch_typed with the checkpoint's element type of p.pool.state_dtype.
template <int K, int VB, int THREADS = kThreads, bool kStateless = false>
cudaError_t launch_tile(const KVBufferDecodeParams& p, cudaStream_t stream, KVBufferDecodeLaunch* describe) {
  if (p.pool.state_dtype == StateDtype::bf16)
    return launch_typed<K, VB, THREADS, kStateless, bf16>(p, stream, describe);
  return launch_typed<K, VB, THREADS, kStateless, float>(p, stream, describe);
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

std::string validate_fp32_checkpoint(const KVBufferPool& pool, const char* family) {
  if (pool.state_dtype == StateDtype::fp32) return "";
  return std::string("state_dtype = ") + to_string(pool.state_dtype) + ": " + family +
         " takes fp32 checkpoints (allowed: fp32; bf16 with kvbuffer decode and verify)";
}

std::string validate_fp32_deltas(const KVBufferPool& pool, const char* family) {
  if (pool.delta_dtype == StateDtype::fp32) return "";
  return std::string("delta_dtype = ") + to_string(pool.delta_dtype) + ": " + family +
         " takes fp32 deltas (allowed: fp32; bf16 with kvbuffer verify on bf16 checkpoints, kernel = automatic or "
         "staged)";
}

std::string validate(const KVBufferDecodeParams& p) {
  if (auto e = validate_shape(p.shape); !e.empty()) return e;
  if (auto e = validate_inputs(p.in, p.batch); !e.empty()) return e;
  if (p.in.tokens != 1) return "tokens = " + std::to_string(p.in.tokens) + ": kvbuffer decode takes 1 token per row";
  if (auto e = validate_pool(p.pool); !e.empty()) return e;
  if (auto e = validate_fp32_deltas(p.pool, "kvbuffer decode"); !e.empty()) return e;
  if (!p.slot || !p.o) return "slot and o must be set";
  if (auto e = validate_tile(p.tile, kvbuffer_decode_tiles(), p.shape, "kvbuffer decode"); !e.empty()) return e;
  if (!p.tile.is_auto() && p.stateless_batch)
    return "tile = " + to_string(p.tile) + ": a stateless batch takes whole value heads (allowed: auto)";
  return "";
}

namespace {
/// The head-dimension and slice-width dispatch of launch_kvbuffer_decode and describe_kvbuffer_decode_launch.
cudaError_t dispatch_decode(const KVBufferDecodeParams& p, cudaStream_t stream, KVBufferDecodeLaunch* describe) {
  if (!validate(p).empty()) return cudaErrorInvalidValue;
  const bool narrow = narrow_slices(p.batch, p.shape);
  if (p.stateless_batch)  // buffer-only blocks: whole value heads (up to 128 columns) per block
    return by_head_dim_k(p.shape.head_dim_k, [&](auto k) {
      return launch_tile<decltype(k)::value, 128, kThreads, true>(p, stream, describe);
    });
  switch (p.shape.head_dim_k) {
    case 32: return narrow ? launch_tile<32, 16>(p, stream, describe) : launch_tile<32, 32>(p, stream, describe);
    case 64: return narrow ? launch_tile<64, 16>(p, stream, describe) : launch_tile<64, 32>(p, stream, describe);
    case 128:
      if (p.tile == TileShape{32, 128}) return launch_tile<128, 32>(p, stream, describe);
      if (p.tile == TileShape{64, 256}) return launch_tile<128, 64, 256>(p, stream, describe);
      if (p.tile == TileShape{128, 256}) return launch_tile<128, 128, 256>(p, stream, describe);
      if (p.tile == TileShape{64, 128}) return launch_tile<128, 64, 128>(p, stream, describe);
      if (p.tile == TileShape{128, 128}) return launch_tile<128, 128, 128>(p, stream, describe);
      // auto: 16-wide slices when the batch does not fill the GPU, else two slices per head of 128 threads, the
      // fastest there; from the wide grid on, a bf16 checkpoint's whole head in one 128-thread block (as many bytes
      // a block as an fp32 half head).
      if (narrow) return launch_tile<128, 16>(p, stream, describe);
      if (p.pool.state_dtype == StateDtype::bf16 && wide_grid(p.batch, p.shape))
        return launch_tile<128, 128, 128>(p, stream, describe);
      return launch_tile<128, 64, 128>(p, stream, describe);
    case 256: return launch_tile<256, 16>(p, stream, describe);
  }
  return cudaErrorInvalidValue;
}
}  // namespace

cudaError_t launch_kvbuffer_decode(const KVBufferDecodeParams& p, cudaStream_t stream) {
  return dispatch_decode(p, stream, nullptr);
}

cudaError_t describe_kvbuffer_decode_launch(const KVBufferDecodeParams& p, KVBufferDecodeLaunch& out) {
  out = KVBufferDecodeLaunch{};
  return dispatch_decode(p, nullptr, &out);
}

int kvbuffer_decode_wave_rows(const KVBufferDecodeParams& p) {
  KVBufferDecodeLaunch l;
  if (describe_kvbuffer_decode_launch(p, l) != cudaSuccess || l.slice_columns < 1) return 0;
  const int64_t blocks_per_row = int64_t(dev::num_slices(p.shape.head_dim_v, l.slice_columns)) * p.shape.heads_v;
  return wave_rows(l.resident_blocks_per_sm, blocks_per_row);
}

}  // namespace kvb
