// The paper's headline claims and this project's measured counterparts, computed from result CSVs (kvb reproduce).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/sweep/csv.h"
#include "harness/sweep/result_csv.h"

namespace kvb::claims {

/// fla 0.5.2 Triton `fused_recurrent_gated_delta_rule` decode on an H200, per-layer microseconds by batch, Qwen3-Next
/// TP1 shape (HV = 32, K = V = 128, fp32 state), 36 layers: anchor fla_recurrent_decode of results/anchors.csv
/// (anchors.h). Throws UsageError when the anchors file is missing or malformed.
const std::map<int, double>& fla_triton_anchor_us();

/// A recurrent decode of another project that the decode claims compare with: its `variant` in a decode CSV (a peer
/// of the decode kind, measured by the peer runner: docs/MEASURING.md, "Peers"), the `anchor` of results/anchors.csv
/// recorded for it on an H200, and its `name` in the table.
struct RecurrentPeer {
  std::string variant, anchor, name;
};

/// fla's Triton recurrent decode (fla_recurrent, anchor fla_recurrent_decode) and FlashInfer's fp32-state recurrent
/// decode (flashinfer_recurrent, anchor flashinfer_recurrent_decode).
const std::vector<RecurrentPeer>& recurrent_peers();

/// Paper values: "up to 45.17%" lower decode latency; 5x the requests with 4 draft tokens.
inline constexpr double kPaperDecodeReduction = 0.4517;
inline constexpr double kPaperCapacityRatio = 5.0;

/// The largest decode latency reduction 1 - kvbuffer / baseline over the batches >= min_batch, where kvbuffer is the
/// fastest KVBuffer row (any buffer size B) at that batch. Latencies are latency_us_median, microseconds.
struct DecodeReduction {
  double reduction = 0;      ///< 1 - kvbuffer_us / baseline_us (0.35 = 35% lower)
  int batch = 0;             ///< requests
  int buffer_size = 0;       ///< B of the fastest KVBuffer row at that batch
  double kvbuffer_us = 0;    ///< its per-layer latency, us
  double baseline_us = 0;    ///< the baseline's per-layer latency at that batch, us
  std::string phase;         ///< phase of that KVBuffer row ("" when the CSV has none)
  std::string baseline;      ///< the baseline: a variant of the CSV ("recurrent", "flashinfer_recurrent") or an anchor
  bool measured = true;      ///< the baseline was measured in this CSV (false: an anchor of results/anchors.csv)
  std::string version;       ///< a measured peer's package and version ("fla-core 0.6.0"; "" when not known)
};

/// Against the fastest recurrent decode measured in this CSV at each batch: this project's recurrent rows launched as
/// `launch` (plain or pdl; a CSV without a launch column holds plain launches) and the rows of recurrent_peers() (plain
/// launches, the only ones a peer takes), the faster where both ran, each KVBuffer row against baselines of its own
/// model (layers, heads_qk, heads_v, head_dims: the columns the CSV has); the best over the models. Only rows with
/// status ok (or without a status column) count. Returns nullopt when no batch >= min_batch has both a baseline and a
/// KVBuffer row. Throws UsageError naming `origin` when a needed column (variant, batch, buffer_size,
/// latency_us_median) is missing or a value is not a number.
std::optional<DecodeReduction> best_reduction_vs_recurrent(const CsvTable& decode, const std::string& origin,
                                                           int min_batch = 64, const std::string& launch = "plain");

/// Against `peer`, over the rows of the anchors' shape (Qwen3-Next at tensor parallelism 1: heads_qk 16, heads_v 32,
/// head_dim_k = head_dim_v = 128, state_dtype fp32, where those columns exist), each model (layer count) on its own:
/// the peer's ok rows of that model in this CSV when it has any, else its anchor (`measured` false), at batches >=
/// min_batch; the best over the models. KVBuffer rows count only when launched as `launch`. Same errors as
/// best_reduction_vs_recurrent.
std::optional<DecodeReduction> best_reduction_vs_peer(const CsvTable& decode, const std::string& origin,
                                                      const RecurrentPeer& peer, int min_batch = 64,
                                                      const std::string& launch = "plain");

/// Requests KVBuffer verification serves over recurrent verification with the same draft tokens m (capacity CSV of
/// kvb capacity): max_requests_measured of both rows when both are set, else max_requests_model.
struct CapacityRatio {
  double ratio = 0;           ///< kvbuffer_requests / recurrent_requests
  int buffer_size = 0;        ///< B
  int draft_tokens = 0;       ///< m
  long long kvbuffer_requests = 0, recurrent_requests = 0;
  bool measured = false;      ///< true: max_requests_measured (allocation proof); false: the model
};

/// The ratio for kvbuffer_verify (B, m) against recurrent_verify (m), both with fp32 states and status ok (rows whose
/// state_dtype is set and not fp32, or whose status is not ok, are left out; a CSV without a state_dtype column holds
/// fp32 rows only), each of one model (layers, heads, head dims: the columns the CSV has); the lowest ratio where
/// several models have both rows; nullopt when no model has both rows with request counts. Throws UsageError naming
/// `origin` when a needed column is missing or a count is not a number.
std::optional<CapacityRatio> capacity_ratio(const CsvTable& capacity, const std::string& origin, int buffer_size,
                                            int draft_tokens);

/// Stateless short contexts: the paper computes a short context's outputs from the buffer alone, without a state
/// (no number). This project's target: stateless KVBuffer decode at batch >= 64 takes at most this fraction of the
/// recurrent per-layer latency, with no state bytes.
inline constexpr double kTargetStatelessRatio = 0.5;

/// The worst (largest) stateless KVBuffer latency over recurrent latency at the same batch in a short_context CSV
/// (kind short_context), over the rows with stateless = true at batch >= min_batch. Latencies are
/// latency_us_median, microseconds; recurrent rows have an empty context_len.
struct StatelessRatio {
  double ratio = 0;             ///< kvbuffer_us / recurrent_us at the worst stateless point
  int batch = 0;                ///< requests
  int buffer_size = 0;          ///< B of that point
  int context_len = 0;          ///< L of that point (L < B)
  double kvbuffer_us = 0;       ///< its per-layer latency, us
  double recurrent_us = 0;      ///< recurrent per-layer latency at that batch, us
  int points = 0;               ///< stateless points compared (batch >= min_batch with a recurrent row at their batch)
  double max_state_bytes = 0;   ///< largest state_bytes_per_request of those points (0: none holds a state)
};

/// Only rows with status ok (or without a status column) count, and only stateless steps that read nothing but their
/// buffer (context_len + 1 < buffer_size): the step at L = B - 1 writes the request's first state. Returns nullopt when
/// no such KVBuffer row at batch >= min_batch has a recurrent row of its model (layers, heads, head dims) at its batch.
/// Throws UsageError naming `origin` when a needed column (variant, batch, buffer_size, context_len, stateless,
/// state_bytes_per_request, latency_us_median) is missing, a value is not a number, or stateless is neither true nor
/// false.
std::optional<StatelessRatio> worst_stateless_ratio(const CsvTable& short_context, const std::string& origin,
                                                    int min_batch = 64);

/// SGLang's speculative-verify kernel on an H200 (recurrent, one fp32 intermediate state written per draft, state
/// pool untouched), per-layer microseconds by draft tokens m and batch, Qwen3-Next TP1 shape: anchor sglang_verify of
/// results/anchors.csv (anchors.h). Throws UsageError when the anchors file is missing or malformed.
const std::map<int, std::map<int, double>>& sglang_verify_anchor_us();

/// ReplaySSM's speculative verify on an H200 (the research fork's Triton kernels: a checkpoint plus a circular cache of
/// (delta, key, log-decay) records), per-layer microseconds by draft tokens m and batch, every draft accepted,
/// Qwen3-Next TP1 shape: verify alone (anchor replayssm_verify) and verify + flush + commit, one step
/// (replayssm_verify_flush_commit). Throw UsageError when the anchors file is missing or malformed.
const std::map<int, std::map<int, double>>& replayssm_verify_anchor_us();
const std::map<int, std::map<int, double>>& replayssm_verify_commit_anchor_us();

/// Targets against ReplaySSM's verify (every draft accepted, plain launches, every m and batch >= 64 of its anchor):
/// KVBuffer verify alone at most 1.00x its verify, verify + accept at most 0.90x its verify + flush + commit.
inline constexpr double kTargetVerifyVsReplaySsm = 1.0;
inline constexpr double kTargetVerifyAcceptVsReplaySsm = 0.9;

/// KVBuffer's latency over an anchor's at the worst (draft tokens, batch), the fastest KVBuffer row (any B) at each.
struct VerifyRatio {
  double ratio = 0;        ///< kvbuffer_us / anchor_us at the worst point
  int draft_tokens = 0;    ///< m of that point
  int batch = 0;           ///< requests
  int buffer_size = 0;     ///< B of the fastest KVBuffer row there
  double kvbuffer_us = 0;  ///< its latency in the compared column
  double anchor_us = 0;    ///< the anchor's
  int points = 0;          ///< (m, batch) points compared (once a model where the CSV holds several)
};

/// Over a spec_verify CSV (kind spec_verify): kvbuffer_verify rows with accepted "all", plain launches, status ok, of
/// the anchors' shape (as best_reduction_vs_peer), batch >= min_batch, the fastest in `column` (verify_us_median or
/// verify_accept_us_median) at each (draft tokens, batch) of each model (layers may differ), against `anchor` (m ->
/// batch -> us) at the points both have; the worst over them. Returns nullopt when none has both. Throws UsageError
/// naming `origin` when a needed column (variant, batch, draft_tokens, accepted, buffer_size, launch, `column`) is
/// missing, a value a compared row needs is blank or not positive, or a batch or m is not a whole number.
std::optional<VerifyRatio> worst_verify_ratio(const CsvTable& spec, const std::string& origin, const std::string& column,
                                              const std::map<int, std::map<int, double>>& anchor,
                                              int min_batch = 64);

/// This project's speculative-verification targets (the paper gives no number): with 4 drafts at batch >= 64,
/// KVBuffer verify + accept at least 4x faster than recurrent verify + accept, and at least 4.5x faster than SGLang's
/// verify kernel (verify alone).
inline constexpr double kTargetVerifyVsRecurrent = 4.0;
inline constexpr double kTargetVerifyVsSglang = 4.5;

/// KVBuffer verify + accept against a baseline at the worst batch >= min_batch, the fastest KVBuffer row (any B) at
/// each batch. Latencies are microseconds per layer.
struct VerifySpeedup {
  double speedup = 0;           ///< baseline_us / kvbuffer_us at the worst batch
  int batch = 0;                ///< requests
  int buffer_size = 0;          ///< B of the fastest KVBuffer row at that batch
  double kvbuffer_us = 0;       ///< its verify_accept_us_median
  double baseline_us = 0;       ///< recurrent verify_accept_us_median at that batch, or SGLang's anchor (verify)
  double over_floor = 0;        ///< the KVBuffer row's verify_accept_over_floor
  double needed_over_floor = 0; ///< the largest over_floor that meets `target`: baseline_us / (target * floor_us)
  int points = 0;               ///< batches compared (a batch once a model where the CSV holds several)
};

/// Over a spec_verify CSV (kind spec_verify): kvbuffer_verify rows with these draft tokens and accepted (the column's
/// text: "all", "none" or a rate), launched as `launch`, status ok, against recurrent_verify rows of the same model
/// (layers, heads, head dims), batch, draft tokens, accepted and launch (vs_sglang false; the fastest where several),
/// or against sglang_verify_anchor_us (vs_sglang true; its batches only, and KVBuffer rows of the anchors' shape only,
/// as best_reduction_vs_peer, each model on its own). The worst batch is taken over the batches where both sides have
/// a row (`points`). Returns nullopt when no batch >= min_batch has both. Throws UsageError naming `origin` when a
/// needed column (variant, batch, draft_tokens, accepted, buffer_size, launch, verify_accept_us_median,
/// verify_accept_floor_us, verify_accept_over_floor) is missing, a value is not a number, a value a compared row needs
/// is blank or not positive, or a batch is not a whole number.
std::optional<VerifySpeedup> worst_verify_speedup(const CsvTable& spec, const std::string& origin, int draft_tokens,
                                                  const std::string& accepted, bool vs_sglang, double target,
                                                  int min_batch = 64, const std::string& launch = "plain");

/// One line of the claims table.
struct ClaimLine {
  std::string claim;     ///< the paper's claim
  std::string paper;     ///< its number as the paper states it
  std::string measured;  ///< this run's counterpart ("not measured ..." when there is none)
  std::string source;    ///< the CSV and configuration it came from
};

/// The claims table from a decode CSV, a capacity CSV, a short_context CSV and a spec_verify CSV (any path may be
/// absent: its claims say "not measured"): decode reduction at batch >= 64 against the fastest recurrent decode
/// measured and against each of recurrent_peers() (measured in the CSV, else its anchor, the source saying which);
/// capacity ratio with 4 drafts at B = 4 and B = 8; stateless short contexts (worst_stateless_ratio at batch >= 64
/// against kTargetStatelessRatio); verify + accept with 4 drafts against recurrent and against SGLang
/// (worst_verify_speedup for every accepted setting of the CSV, plain and PDL launches); verify alone and verify +
/// accept against ReplaySSM's (worst_verify_ratio over every m and batch >= 64). Every CSV present is read and
/// validated first (read_result_csv with `schemas`, harness/sweep/result_csv.h). Throws UsageError naming the file and
/// line of a CSV that is malformed or breaks a rule.
std::vector<ClaimLine> compute_claims(const std::string& decode_csv, const std::string& capacity_csv,
                                      const std::string& short_context_csv, const std::string& spec_verify_csv,
                                      const std::vector<CsvSchema>& schemas);

/// The table as aligned text, one claim per line, with a header.
std::string format_claims(const std::vector<ClaimLine>& lines);

}  // namespace kvb::claims
