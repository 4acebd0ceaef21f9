// KVBuffer in raw form (DESIGN.md section 3, "Raw form"): the buffer holds each token's inputs k, v, a, b as bf16,
// exactly as the layer hands them over, and the corrected deltas are rebuilt from the checkpoint at each step.
// Parameter structs and launchers of the raw-form kernels; the delta form's are in kernels/gdn_params.h.
//
// Per (request, value head), entries j = 0 .. T-1 since the checkpoint S0 (the T-th is the new token or a draft),
// with g_j, beta_j prepared in fp32 from a_j, b_j, k^_j the fp32 l2-normalised key and G_j = g_0 + ... + g_j:
//   A_ij = beta_i e^{G_i - G_j} (k^_i . k^_j)  (i > j),   R_j = beta_j (v_j - e^{G_j} S0^T k^_j),   U = (I + A)^-1 R.
// An output needs only one product against S0: with c_j = e^{G_t - G_j} (k^_j . q^_t) and d = (I + A)^-T c,
//   o_t = e^{G_t} S0^T q^_t + c^T U = S0^T (e^{G_t} q^_t - sum_j d_j beta_j e^{G_j} k^_j) + sum_j d_j beta_j v_j,
// so a step that does not flush streams S0 once (like the delta form) and never forms U. The decode kernel takes the
// effective query by the transposed delta rule (z <- (I - beta_j k^_j k^_j^T) z from the newest entry down, O(T K);
// kernels/kvbuffer_raw_decode.cu). A flush forms P = K^ S0 ([T x K] x [K x V]) and folds
// S0 <- e^{G_t} S0 + sum_j e^{G_t - G_j} k^_j u_j^T: decode in chunks of 8 entries on CUDA cores, accept on tensor
// cores.
#pragma once

#include "kernels/gdn_params.h"

namespace kvb {

/// Largest buffer_size (and capacity) of a raw pool: T = n + 1 entries of a decode step, and n + m (m <= 8) of a
/// verify, stay within the 80 rows the kernels' shared-memory tiles are sized for.
constexpr int kMaxRawBuffer = 64;

/// Per-request KVBuffer in raw form: a checkpoint S0 and up to `capacity` raw entries (k_j, v_j, a_j, b_j), all bf16.
/// Layout kv only. fill[slot] is request metadata shared by all layers, as in KVBufferPool: kernels only read it;
/// launch_kvbuffer_advance / launch_kvbuffer_advance_accepted (once per model step) write it.
/// Bytes per entry: H*K*2 + HV*V*2 + 2*HV*2 (Qwen3-Next TP1: 12,416, against the delta form's 20,608).
struct RawKVBufferPool {
  float* checkpoint = nullptr;  ///< [num_slots, HV, K, V] fp32 S0
  bf16* keys = nullptr;         ///< [num_slots, capacity, H, K] raw keys
  bf16* values = nullptr;       ///< [num_slots, capacity, HV, V] raw values
  bf16* gate_a = nullptr;       ///< [num_slots, capacity, HV] raw gate inputs a (g = -exp(A_log) softplus(a + dt_bias))
  bf16* gate_b = nullptr;       ///< [num_slots, capacity, HV] raw beta inputs b (beta = sigmoid(b))
  int32_t* fill = nullptr;      ///< [num_slots] entries held, 0 <= fill < buffer_size
  int num_slots = 0;
  int capacity = 0;             ///< entries per slot, in [max(buffer_size - 1, 1), kMaxRawBuffer]
  int buffer_size = 1;          ///< B in [1, kMaxRawBuffer]: the step that brings a slot to B entries flushes it
};

/// Raw-form decode: o_t from S0 and the rebuilt buffer; appends the raw entry (k_t, v_t, a_t, b_t) at position
/// fill[slot], or, when that makes B entries, folds all B entries into S0 instead (the flush) and appends nothing.
/// The inputs must carry a, b, A_log and dt_bias (prepared g / beta cannot be stored raw).
/// Bytes per row, not flushing: S0 read once + n raw entries read + one raw entry written; flushing: S0 read and
/// written + n raw entries read.
struct RawKVBufferDecodeParams {
  GdnShape shape;
  int batch = 0;
  TokenInputs in;                 ///< tokens must be 1
  RawKVBufferPool pool;
  const int32_t* slot = nullptr;  ///< [N], -1 = padding: pool untouched, o row zeroed
  void* o = nullptr;              ///< [N, HV, V]
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Tile of the launch: auto, or one of raw_tiles() that divides head_dim_v (at most 32 columns at head_dim_k = 256).
  TileShape tile;
};

/// Raw-form verification of m drafts (positions n + 1 .. n + m): every draft's output from S0 and the buffer in one
/// pass, no state and no delta written (accept needs only the drafts' raw inputs).
/// Bytes per row: S0 read once, n raw entries read, m tokens' inputs and outputs.
struct RawKVBufferVerifyParams {
  GdnShape shape;
  int batch = 0;
  TokenInputs in;                 ///< tokens = m, 1 <= m <= kMaxDraftTokens; a, b, A_log, dt_bias set
  RawKVBufferPool pool;           ///< read only here
  const int32_t* slot = nullptr;  ///< [N], -1 = padding: outputs zeroed
  void* o = nullptr;              ///< [N, m, HV, V]
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Tile of the launch: auto, or one of raw_tiles() that divides head_dim_v (at most 32 columns at head_dim_k = 256).
  TileShape tile;
};

/// Raw-form accept: the first a = accepted[row] drafts' raw entries (from the verify inputs) are appended at positions
/// fill .. fill + a - 1 when fill + a < B; otherwise all fill + a entries are folded into the checkpoint (up to
/// B - 1 + m, in shared memory) and the buffer empties. fill is not changed: follow each model step with
/// launch_kvbuffer_advance_accepted on pool.fill. (The delta form folds its accept into verify instead:
/// KVBufferVerifyParams.)
struct RawKVBufferAcceptParams {
  GdnShape shape;
  int batch = 0;
  TokenInputs in;                     ///< the verify inputs (tokens = m): k, v, a, b, A_log, dt_bias read; q unused
  RawKVBufferPool pool;
  const int32_t* slot = nullptr;      ///< [N], -1 = padding
  const int32_t* accepted = nullptr;  ///< [N], 0 <= a <= m
  /// Tile of the launch: auto, or one of raw_tiles() that divides head_dim_v (at most 32 columns at head_dim_k = 256).
  TileShape tile;
};

std::string validate(const RawKVBufferDecodeParams& p);
std::string validate(const RawKVBufferVerifyParams& p);
std::string validate(const RawKVBufferAcceptParams& p);

cudaError_t launch_kvbuffer_raw_decode(const RawKVBufferDecodeParams& p, cudaStream_t stream);
cudaError_t launch_kvbuffer_raw_verify(const RawKVBufferVerifyParams& p, cudaStream_t stream);
cudaError_t launch_kvbuffer_raw_accept(const RawKVBufferAcceptParams& p, cudaStream_t stream);

}  // namespace kvb
