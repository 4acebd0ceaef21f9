// Parameters and launchers of the stateless prefill (DESIGN.md section 3, "Stateless short context"): the prompt of a
// request whose context L <= B goes straight into its KVBuffer, with no state. Kept apart from gdn_params.h; the
// decode and flush kernels take stateless rows through KVBufferDecodeParams::has_state / state_slot.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kernels/gdn_params.h"

namespace kvb {

/// Longest prompt one prefill launch takes (tokens per row): the L x L triangular solve lives in shared memory.
constexpr int kMaxPrefillTokens = 64;

/// Stateless prefill: row i's prompt of L_i = prompt_len[i] tokens into its empty buffer, from S0 = 0. Layout is
/// padded: in.tokens = Lmax, token t of row i at index i * Lmax + t of every input ([N, Lmax, H, K], ...), tokens
/// t >= L_i are ignored. The corrected deltas come from the triangular solve (DESIGN.md section 3, w_tj = e^{G_t - G_j})
///   u_t = beta_t (v_t - sum_{j<t} w_tj (k^_j . k^_t) u_j),   o_t = sum_{j<=t} w_tj (k^_j . q^_t) u_j.
/// When L_i < B the L_i entries (raw keys, u_t, g_t) are written at buffer positions 0 .. L_i - 1 of slot[i] (the
/// buffer is taken as empty; fill is neither read nor written). When L_i = B (the transition) nothing is appended:
/// the entries are folded into a state materialised from zero, S = sum_j w_{L,j} k^_j u_j^T, written at checkpoint
/// row state_slot[i] (nothing written when state_slot[i] < 0). Follow every layer's prefill with one
/// launch_kvbuffer_advance_prefill per model step. Bytes per row: L tokens' inputs and outputs, L entries written (or
/// one state written when L = B); nothing read from the pool.
struct KVBufferPrefillParams {
  GdnShape shape;
  int batch = 0;
  TokenInputs in;                       ///< tokens = Lmax, 1 <= Lmax <= kMaxPrefillTokens
  const int32_t* prompt_len = nullptr;  ///< [N] L_i, clamped to [0, min(Lmax, B)]; 0: nothing written, o rows zeroed
  KVBufferPool pool;                    ///< entries written at positions 0 .. L_i - 1; checkpoint written when L_i = B
  const int32_t* slot = nullptr;        ///< [N] buffer row, -1 = padding: pool untouched, o rows zeroed
  const int32_t* state_slot = nullptr;  ///< optional [N] checkpoint row for L_i = B; nullptr = slot
  void* o = nullptr;                    ///< [N, Lmax, HV, V]; tokens t >= L_i are zeroed
  OutputDtype o_dtype = OutputDtype::bf16;
};

std::string validate(const KVBufferPrefillParams& p);

cudaError_t launch_kvbuffer_prefill(const KVBufferPrefillParams& p, cudaStream_t stream);

/// After every layer's prefill of one model step: fill[slot[i]] = L_i < buffer_size ? L_i : 0 (prompt_len[i] = L_i)
/// for rows with slot >= 0, the buffers being empty before (fill 0).
cudaError_t launch_kvbuffer_advance_prefill(int32_t* fill, const int32_t* slot, const int32_t* prompt_len, int batch,
                                            int buffer_size, cudaStream_t stream);

}  // namespace kvb
