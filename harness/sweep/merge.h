// Joining shard CSVs (kvb sweep --shard I/N, or the workers of --devices) into one result CSV.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// One input CSV and the name used for it in errors.
struct CsvInput {
  std::string path;
  CsvTable table;
};

/// What the merged file must satisfy; empty fields are taken from the inputs.
struct MergeSpec {
  std::vector<std::string> header;     ///< required header (csv_columns of the config's kind); empty: the first input's
  std::string experiment;              ///< required "experiment" value; empty: the first row's
  std::vector<std::string> grid_keys;  ///< point_row_key of every point of the full grid, in grid order; empty: keep
                                       ///< the input order (file by file, row by row)
};

/// The merged table and the GPU its rows ran on.
struct MergeResult {
  CsvTable table;
  std::string gpu;  ///< the rows' "gpu" value ("" when no row has one)
};

/// Joins the rows of `inputs`. Every input must pass validate_result_table and validate_axis_values (result_csv.h) as
/// a CSV of one of `kinds` and needs a header equal to the first input's (and to spec.header when given), after a CSV
/// written before its kind gained an axis has had that column put back (upgrade_older_header); every row the same
/// "experiment" value (spec.experiment when given) and the same "gpu"; no point (experiment and axis columns, see csv_axis_columns with
/// `kinds`) may appear twice. Header-only inputs (an empty shard) are fine. With grid_keys the rows come in grid
/// order, rows of points outside the grid after them in input order. Throws UsageError naming the offending file
/// (and the first file holding a duplicate point or another GPU) and the column.
MergeResult merge_csv_tables(std::vector<CsvInput> inputs, const std::vector<ExperimentKind>& kinds,
                             const MergeSpec& spec = {});

/// A result table of one experiment kind (csv_columns) indexed by point (experiment and axis values), for folding the
/// rows of workers into an existing result file the way run_sweep does: a point's row is replaced in place, a new
/// point is appended.
class KeyedRows {
 public:
  /// Indexes `table`; an empty table gets the kind's header. Rows must have the kind's columns.
  KeyedRows(const ExperimentKind& kind, CsvTable table);
  /// Puts `row` in: appends it for a new point, else replaces the point's row, except that with keep_ok an "ok" row
  /// is not replaced by a row whose status is not "ok".
  void put(const std::vector<std::string>& row, bool keep_ok);
  /// The row of the point with this key (point_row_key), or nullptr.
  const std::vector<std::string>* find(const std::string& key) const;
  /// The key of a row (equal to point_row_key of its point).
  std::string key(const std::vector<std::string>& row) const;
  /// Whether a row's status is "ok".
  bool ok(const std::vector<std::string>& row) const { return row.at(status_col_) == "ok"; }
  const CsvTable& table() const { return table_; }

 private:
  ExperimentKind kind_;  // its axes name the key's columns (kind_row_key)
  size_t status_col_ = 0;
  CsvTable table_;
  std::map<std::string, size_t> row_of_;
};

}  // namespace kvb
