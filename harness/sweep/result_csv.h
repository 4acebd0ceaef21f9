// The one validation of result CSVs, shared by every reader: a resuming sweep, kvb merge, kvb compare, the claims
// table (and, by the same rules over plots/result_schemas.csv, the figures: plots/result_csv.py). A file that breaks a
// rule is refused with one line naming the file, the line, the column and what is allowed.
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// What a result CSV of one kind holds.
struct CsvSchema {
  std::string kind;                      ///< "decode", "spec_verify", "short_context", "capacity", ...
  std::vector<std::string> columns;      ///< the header kvb writes today, in order
  std::vector<std::string> key;          ///< the columns that name a point: one row per point
  std::vector<std::string> added_later;  ///< columns a file written by an older kvb may lack (its order kept)
  std::vector<std::string> counts;       ///< columns that hold whole numbers >= 0 where they are set
};

/// The schema of a sweep CSV of `kind`: csv_columns(kind); key "experiment" and the axes; added_later the axes that
/// may be absent (may_be_absent) and ExperimentKind::results_added_later; no count columns.
CsvSchema csv_schema(const ExperimentKind& kind);

/// csv_schema of each kind, in order.
std::vector<CsvSchema> csv_schemas(const std::vector<ExperimentKind>& kinds);

/// Checks a parsed result CSV (`origin` names it in messages) against the rules every reader shares, and returns the
/// schema it follows:
///  - the text: UTF-8 (no byte outside a well-formed character: an overlong form, a surrogate, a stray 0xE9), every
///    column name and cell, the first refused naming the line, the column and the byte;
///  - known columns: the header is the columns of one schema, less some of its added_later ones, in its order
///    (otherwise the message names the first missing, unknown or misplaced column and the kind's header);
///  - latencies: every group of columns NAME_us_median, NAME_us_p10, NAME_us_p90 holds, where set, finite numbers
///    > 0 with p10 <= median <= p90, and is set in every row whose status is "ok";
///  - counts: whole numbers >= 0 where set;
///  - sizes (batch, buffer_size, draft_tokens, layers, heads_qk, heads_v, head_dim_k, head_dim_v): whole numbers >= 1
///    where set; floors, ratios to them and bandwidths (columns ending floor_us, _over_floor, _gbps): finite numbers
///    > 0 where set; model bytes (ending model_bytes, model_read_bytes, model_write_bytes): finite numbers >= 0;
///  - state_dtype, where the kind has it: fp32, bf16, or empty (a row written before the column: fp32);
///  - stateless (short_context): true or false, or empty where the point failed;
///  - entry_dtypes, where set: entry_dtypes_of the row's variant, buffer_form and delta_dtype (entry_dtypes.h; empty
///    where the point failed or the row was written before the column; not checked against a delta_dtype value
///    validate_axis_values refuses);
///  - timestamp, where set: a UTC time as YYYY-MM-DDTHH:MM:SSZ (a file cut inside it and given a line end is refused);
///  - capacity: where set, bytes_per_request > 0 and max_requests_model, max_requests_measured x bytes_per_request
///    <= budget_bytes;
///  - one row per point (the key columns);
///  - one GPU: every non-empty "gpu" value the same.
/// A header alone (an empty shard) is fine; an empty table has no header and is refused. Throws UsageError
/// "ORIGIN:LINE: ..." for the first rule broken.
const CsvSchema& validate_result_table(const CsvTable& table, const std::vector<CsvSchema>& schemas,
                                       const std::string& origin);

/// Checks that every axis value a result CSV of `kind` sets is one a sweep of the kind could have written: each
/// non-empty value of an axis column must pass that axis's check (AxisSpec::refusal: the allowed values `kvb sweep`
/// holds a config to). An empty value is an axis that does not apply to the row's variant (in state_dtype, a row
/// written before the column: fp32). kvb merge and kvb compare apply it after validate_result_table; a resuming sweep
/// does not, keeping such rows as rows outside its grid. Throws UsageError "ORIGIN:LINE: AXIS = 'VALUE' ... (allowed:
/// ...)" for the first value refused.
void validate_axis_values(const CsvTable& table, const ExperimentKind& kind, const std::string& origin);

/// What kvb merge and kvb compare hold each input to: validate_result_table, then, for a CSV of one of `kinds`
/// (csv_kind), validate_axis_values. Returns that kind, or nullptr for a CSV of no sweep kind (capacity). Throws as
/// they do.
const ExperimentKind* validate_result_input(const CsvTable& table, const std::vector<CsvSchema>& schemas,
                                            const std::vector<ExperimentKind>& kinds, const std::string& origin);

/// Reads the result CSV at `path` (read_input_file: `flag` names it), parses it (BOM and CRLF accepted) and validates
/// it (validate_result_table). Throws UsageError naming the flag, file and line.
CsvTable read_result_csv(const std::string& path, const std::vector<CsvSchema>& schemas, const std::string& flag = "");

}  // namespace kvb
