// The rows of `kvb capacity`: per-request bytes, modelled and measured capacity, ratios to the recurrent baseline,
// the CSV (results/capacity.csv) and the table and claim check printed to stdout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/kinds/capacity_model.h"
#include "harness/sweep/result_csv.h"

namespace kvb::capacity {

/// Row status when the probe did not run.
inline constexpr const char* kStatusNoGpu = "model only (no GPU)";
inline constexpr const char* kStatusNoProbe = "model only (--no-probe)";
/// Start of the status of a row whose pools were allocated (the measured count stands) but whose step could not run:
/// the launcher returned cudaErrorNotSupported, or no kernel of this project stores the row's state dtype for its
/// variant (then a reason follows, after ": ").
inline constexpr const char* kStatusNoKernel = "kernel not available";

/// One row: a case's plan, the budget, the modelled capacity, the measured one (when the probe ran) and the status
/// ("ok", a model-only status, one starting with kStatusNoKernel, or what went wrong).
struct CapacityRow {
  CapacityPlan plan;
  int64_t budget_bytes = 0;
  int64_t max_requests_model = 0;
  std::optional<int64_t> max_requests_measured;
  std::string status;
  std::optional<double> ratio_to_recurrent;  ///< set by fill_ratios; unset when the baseline holds no request
};

/// Requests a row is credited with: max_requests_measured when set, else max_requests_model.
int64_t credited_requests(const CapacityRow& row);

/// Sets ratio_to_recurrent of every row: its requests over those of its baseline of the same state dtype,
/// recurrent_decode for decode rows and recurrent_verify with the same m for verify rows (a bf16 KVBuffer row is
/// compared with recurrent bf16 states, never with fp32 ones). Measured values are used when both rows have one,
/// else the model's. Rows without a baseline in `rows` (or whose baseline holds 0 requests) keep no ratio.
void fill_ratios(std::vector<CapacityRow>& rows);

/// CSV header: variant, buffer_size, draft_tokens, state_dtype (fp32 or bf16: the stored states' element type),
/// entry_dtypes (entry_dtypes.h: the delta form's on KVBuffer rows, the form the model counts; empty on recurrent
/// ones), budget_bytes, bytes_per_request, max_requests_model, max_requests_measured, status, then layers, state_bytes,
/// intermediate_state_bytes, buffer_bytes, draft_bytes, conv_state_bytes, ratio_to_recurrent, buffer_entries,
/// io_bytes_per_request, fixed_bytes, conv_state_counted, heads_qk, heads_v, head_dim_k, head_dim_v, gpu,
/// timestamp. Bytes are per request over all layers.
const std::vector<std::string>& capacity_csv_columns();

/// What a capacity CSV holds for the shared validation (harness/sweep/result_csv.h): capacity_csv_columns; one row
/// per variant, buffer_size, draft_tokens and state_dtype; budget_bytes and the request counts whole numbers >= 0.
/// state_dtype and entry_dtypes are added later: a CSV written before state_dtype has no such column, and its rows
/// hold fp32 states; one written before entry_dtypes lacks that column alone.
CsvSchema capacity_csv_schema();

/// The whole CSV text for `rows` (buffer_size empty for recurrent rows, draft_tokens empty for decode rows,
/// max_requests_measured and ratio_to_recurrent empty when unset).
std::string format_capacity_csv(const std::vector<CapacityRow>& rows, const std::string& gpu,
                                const std::string& timestamp);

/// Aligned text table, one line per row: variant, B, m, state dtype (column dtype), MiB per request (state,
/// intermediate, buffer, draft, total), modelled and measured capacity, ratio, status; then, for each state dtype of
/// the rows, a grid of kvbuffer_verify ratios (B down, m across) with the kvbuffer_decode ratio in its own column.
std::string format_capacity_table(const std::vector<CapacityRow>& rows);

/// "4 drafts, fp32 states: KVBuffer/recurrent = X.XXx at B = 4, Y.YYx at B = 8 (paper: 5x)" from the kvbuffer_verify
/// rows with m = 4 and states of `dtype` ("n/a" for a B not tabulated). The paper's 5x is its claim for fp32 states;
/// a bf16 line names no paper value.
std::string claim_check_line(const std::vector<CapacityRow>& rows, StateDtype dtype = StateDtype::fp32);

/// "4.5x target with 4 drafts, B <= 8, fp32 states: met at B = ...; not met at B = ..." over the tabulated B <= 8 of
/// the fp32 rows (the capacity target: KVBuffer at least 4.5x the recurrent requests with 4 drafts and B <= 8, set
/// against the paper's 5x with fp32 states).
std::string target_check_line(const std::vector<CapacityRow>& rows, double target = 4.5);

}  // namespace kvb::capacity
