// Float64 reference of the gated delta rule and of the KVBuffer algebra (DESIGN.md sections 2 and 3).
// One function per kernel family, same name and meaning as in kernels/gdn_params.h. Plain C++ interface (no Eigen in
// headers) so that CUDA translation units can call it; the implementation uses Eigen.
// All tensors are row-major std::vector<double>; shapes are given per function. States use layout kv: [HV][K][V].
// Every function throws std::invalid_argument when a tensor's size does not match the shape. Decay factors
// e^{G_t - G_j} are formed from the per-entry g values (exp of g_{j+1} + ... + g_t), never as a difference of large
// cumulative sums, so strong gates (g ~ -20 and below) stay exact to float64 rounding.
#pragma once

#include <cstdint>
#include <vector>

#include "core/gdn_shape.h"

namespace kvb::ref {

/// One token of one request, as the layer hands it over (values already exact bf16, held as double).
struct TokenRaw {
  std::vector<double> q;  ///< [H][K]
  std::vector<double> k;  ///< [H][K]
  std::vector<double> v;  ///< [HV][V]
  std::vector<double> a;  ///< [HV] raw gate input
  std::vector<double> b;  ///< [HV] raw beta input
};

/// Per-layer gate parameters.
struct GateParams {
  std::vector<double> A_log;    ///< [HV]
  std::vector<double> dt_bias;  ///< [HV]
  double scale = 0;             ///< query scale, usually K^-1/2
  double l2norm_eps = 1e-6;
};

/// One token after preparation (DESIGN.md section 2): q^ = scale q / sqrt(|q|^2 + eps), k^ = k / sqrt(|k|^2 + eps),
/// g = -exp(A_log) softplus(a + dt_bias) (softplus(x) = x for x > 20), beta = sigmoid(b).
/// As DESIGN.md section 2 prescribes, preparation yields fp32 values: the l2-norm runs in fp32 (see l2_normalize),
/// g and beta are computed in float64 and rounded to fp32; q^ is the fp32 normalised q times scale in float64.
struct TokenPrepared {
  std::vector<double> q_hat;  ///< [H][K]
  std::vector<double> k_hat;  ///< [H][K]
  std::vector<double> v;      ///< [HV][V]
  std::vector<double> g;      ///< [HV]
  std::vector<double> beta;   ///< [HV]
};

/// DESIGN.md section 2 "prepare". Throws std::invalid_argument when a tensor's size does not match the shape.
TokenPrepared prepare_token(const GdnShape& s, const TokenRaw& t, const GateParams& p);
/// Same with the gates g, beta [HV] given directly and used as they are (golden cases that override g or beta);
/// t.a and t.b are not read.
TokenPrepared prepare_token_with_gates(const GdnShape& s, const TokenRaw& t, const GateParams& p,
                                       const std::vector<double>& g, const std::vector<double>& beta);

/// l2-normalised key of raw key x (length n): x / sqrt(|x|^2 + eps), computed in fp32 as the kernels and the golden
/// oracle do (DESIGN.md section 2): the sum of squares is accumulated in fp32 in the order of a vectorised CPU
/// reduction (lane i % 8 of row (i / 8) % 4; rows, then lanes, added in order) and each value divided in fp32.
/// The results are fp32 values held as double.
std::vector<double> l2_normalize(const double* x, int n, double eps = 1e-6);

/// Stored states (the `state_dtype` argument of the functions below): a state, checkpoint or intermediate state is
/// rounded to its StateDtype where a kernel stores it, and only there: values a kernel holds in registers within one
/// launch stay unrounded (a step's output, the drafts after a fold, the next draft of a recurrent verify). With
/// StateDtype::fp32 the stored values are the float64 ones (the fp32 kernels are checked against them within
/// tolerance); with bf16 each stored element is rounded to nearest even (round_to_bf16), as a bf16 kernel rounds its
/// fp32 registers, so that a bf16 kernel is checked against the same roundings.
/// Rounds every element of a stored state to `d` (nothing for fp32).
void round_stored_state(std::vector<double>& state, StateDtype d);

/// Recurrent decode of one request (mirrors launch_recurrent_decode): state [HV][K][V] updated in place,
/// o [HV][V] written. S <- e^g S; u = beta (v - S^T k^); S += k^ u^T; o = S^T q^ (from S before it is stored);
/// the state stored as `state_dtype`.
void recurrent_decode(const GdnShape& s, const TokenPrepared& t, std::vector<double>& state, std::vector<double>& o,
                      StateDtype state_dtype = StateDtype::fp32);

/// One buffered entry of the delta form.
struct BufferEntry {
  std::vector<double> k_hat;  ///< [H][K] normalised key
  std::vector<double> u;      ///< [HV][V] corrected delta
  std::vector<double> g;      ///< [HV] per-step log-decay of that token
};

/// A request's KVBuffer: checkpoint S0 [HV][K][V] (empty vector = stateless: S0 identically zero, DESIGN.md
/// section 3) and its entries in token order.
struct KVBufferSlot {
  std::vector<double> checkpoint;
  std::vector<BufferEntry> entries;
};

/// KVBuffer decode of one request (mirrors launch_kvbuffer_decode): computes u_t and o_t [HV][V] from S0 and the
/// buffer, appends the entry, and flushes (folds every entry into S0, empties the buffer) when the buffer then holds
/// buffer_size entries. A stateless slot (empty checkpoint: the kernels' has_state = 0) reads no S0 and gets its
/// checkpoint materialised (from zero) at that flush.
/// A slot holding buffer_size - 1 entries or more (after a speculative accept) flushes all of them with the token.
/// Requires buffer_size >= 1 (else std::invalid_argument). A flush stores the checkpoint as `state_dtype`.
void kvbuffer_decode(const GdnShape& s, int buffer_size, const TokenPrepared& t, KVBufferSlot& slot,
                     std::vector<double>& o, StateDtype state_dtype = StateDtype::fp32);

/// Folds all entries into the checkpoint and empties the buffer (mirrors launch_kvbuffer_flush + clear):
/// S0 <- e^{G_n} S0 + sum_j e^{G_n - G_j} k^_j u_j^T, stored as `state_dtype`. Afterwards the slot always holds a
/// checkpoint.
void kvbuffer_flush(const GdnShape& s, KVBufferSlot& slot, StateDtype state_dtype = StateDtype::fp32);

/// Stateless prefill of one request (mirrors launch_kvbuffer_prefill, DESIGN.md section 3): the prompt's L tokens
/// (1 <= L <= buffer_size) into an empty stateless slot (no checkpoint, no entries, else std::invalid_argument), as
/// one L x L unit-lower-triangular solve per value head: (I + A) U = diag(beta) V with A_tj = beta_t w_tj (k^_t . k^_j)
/// for j < t, then o = (W o (Q^ K^^T), lower triangle with diagonal) U, w_tj = e^{G_t - G_j}. o is [L][HV][V]. The L
/// entries are appended; when L = buffer_size they are folded into a checkpoint materialised from zero instead
/// (stored as `state_dtype`).
void kvbuffer_prefill(const GdnShape& s, int buffer_size, const std::vector<TokenPrepared>& prompt, KVBufferSlot& slot,
                      std::vector<double>& o, StateDtype state_dtype = StateDtype::fp32);

/// The current state S_n = e^{G_n} S0 + sum_j e^{G_n - G_j} k^_j u_j^T, materialised, [HV][K][V].
std::vector<double> kvbuffer_state(const GdnShape& s, const KVBufferSlot& slot);

/// Speculative verification from S0 + buffer (DESIGN.md section 3), mirroring launch_kvbuffer_verify: a due slot
/// (buffer_size entries or more, left by an accept) is first folded into its checkpoint (kvbuffer_flush), the flush
/// verify performs; then the outputs o [m][HV][V] and entries of the m draft tokens, nothing else written to the
/// slot. Draft i is computed after the slot's entries and drafts 0..i-1 (the triangular dependency). The entries' u
/// are exact for any accepted prefix. draft_entries is replaced. Throws std::invalid_argument when buffer_size < 1 or
/// there are no drafts. A due slot's folded checkpoint serves the drafts unrounded and is stored as `state_dtype`.
void kvbuffer_verify(const GdnShape& s, int buffer_size, const std::vector<TokenPrepared>& drafts, KVBufferSlot& slot,
                     std::vector<double>& o, std::vector<BufferEntry>& draft_entries,
                     StateDtype state_dtype = StateDtype::fp32);

/// Appends the first `accepted` draft entries (mirrors launch_kvbuffer_commit_accepted after launch_kvbuffer_verify):
/// the buffer may then hold buffer_size entries or more (up to buffer_size - 1 + m), and the slot's next verify or
/// decode folds them. Throws std::invalid_argument unless accepted is in [0, draft_entries.size()], buffer_size >= 1
/// and the slot holds fewer than buffer_size entries (verify folded a due slot).
void kvbuffer_accept(const GdnShape& s, int buffer_size, const std::vector<BufferEntry>& draft_entries, int accepted,
                     KVBufferSlot& slot);

/// Recurrent verification (the baseline): steps a copy of the state through the m drafts; o [m][HV][V] and the
/// m intermediate states [m][HV][K][V] (state after draft i at index i, stored as `state_dtype`; draft i + 1 steps
/// from the unrounded state). state is not modified.
void recurrent_verify(const GdnShape& s, const std::vector<TokenPrepared>& drafts, const std::vector<double>& state,
                      std::vector<double>& o, std::vector<double>& intermediate_states,
                      StateDtype state_dtype = StateDtype::fp32);

/// A state [HV][K][V] (layout kv) as [HV][V][K] (layout vk, the kernels' StateLayout::vk): each value head's
/// matrix transposed. vk_to_kv is the inverse. Throws std::invalid_argument when s.size() != state_elems().
std::vector<double> kv_to_vk(const GdnShape& s, const std::vector<double>& state);
std::vector<double> vk_to_kv(const GdnShape& s, const std::vector<double>& state);

/// Largest per-head error relative to that head's largest reference magnitude (DESIGN.md section 4):
/// max over heads of max|got - ref| / max|ref|. Tensors are [heads][head_elems]; NaN in got or ref gives +inf; a
/// head whose reference is all zero counts its absolute error. The vector overload splits ref.size() into `heads`.
double max_rel_err(const double* ref, const double* got, int64_t heads, int64_t head_elems);
double max_rel_err(const std::vector<double>& ref, const std::vector<double>& got, int64_t heads);

}  // namespace kvb::ref
