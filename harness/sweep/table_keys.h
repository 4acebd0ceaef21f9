// Reading result CSVs by column name: which columns identify a point (experiment and axes), and row keys.
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// The axis columns of a result CSV header. Rule: the axes of the first kind in `kinds` whose axis names follow
/// "experiment" in the header, in order (header = "experiment", axes..., results..., metadata). When no kind matches
/// (a CSV from an older build), every column between "experiment" and "latency_us_median". Throws UsageError naming
/// `origin` when the header does not start with "experiment" or neither rule applies.
std::vector<std::string> csv_axis_columns(const std::vector<std::string>& header,
                                          const std::vector<ExperimentKind>& kinds, const std::string& origin);

/// Index of column `name` in `header`. Throws UsageError naming `origin` and the column when it is absent.
size_t require_column(const std::vector<std::string>& header, const std::string& name, const std::string& origin);

/// Identifies a point across CSV files: the values of "experiment" and the axis columns of one row.
class RowKeyer {
 public:
  /// Looks up "experiment" and `axis_columns` in `header`; throws UsageError naming `origin` for a missing column.
  RowKeyer(const std::vector<std::string>& header, const std::vector<std::string>& axis_columns,
           const std::string& origin);
  /// The key of a row of that header ("\x1f"-joined values).
  std::string key(const std::vector<std::string>& row) const;
  /// "axis=value,..." of the row's non-empty axis values (the same text as Point::label).
  std::string label(const std::vector<std::string>& row) const;
  /// (axis, value) pairs of the row, in axis order.
  std::vector<std::pair<std::string, std::string>> axes(const std::vector<std::string>& row) const;

 private:
  std::vector<std::string> names_;
  std::vector<size_t> index_;  // experiment first, then the axes
};

/// The key RowKeyer gives a row of `experiment` at `point`.
std::string point_row_key(const std::string& experiment, const Point& point);

}  // namespace kvb
