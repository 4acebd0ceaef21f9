// Reading result CSVs by column name: which columns identify a point (experiment and axes), and row keys.
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// An axis a CSV of its kind may lack: one the kind gained later (AxisSpec::added_later) with a single default.
bool may_be_absent(const AxisSpec& axis);

/// The kind in `kinds` whose axes a result CSV header carries: the first whose axis names follow "experiment" in
/// order, or else the first whose axes do with some left out, each of them one the kind gained later
/// (AxisSpec::added_later, with a single default: decode CSVs written before `launch`); nullptr when none does.
const ExperimentKind* csv_kind(const std::vector<std::string>& header, const std::vector<ExperimentKind>& kinds);

/// The axis columns of a result CSV header. Rule: the axes of csv_kind(header, kinds), all of them, also those the
/// header leaves out (header = "experiment", axes..., results..., metadata). When no kind matches (a CSV from an
/// older build), every column between "experiment" and "latency_us_median". Throws UsageError naming `origin` when
/// the header does not start with "experiment" or neither rule applies.
std::vector<std::string> csv_axis_columns(const std::vector<std::string>& header,
                                          const std::vector<ExperimentKind>& kinds, const std::string& origin);

/// Index of column `name` in `header`. Throws UsageError naming `origin` and the column when it is absent.
size_t require_column(const std::vector<std::string>& header, const std::string& name, const std::string& origin);

/// Identifies a point across CSV files: the values of "experiment" and the axis columns of one row.
class RowKeyer {
 public:
  /// Looks up "experiment" and `axis_columns` in `header`. An axis column the header lacks takes, when `kind` gained
  /// that axis later (AxisSpec::added_later, a single default), that default in every row where the kind's `applies`
  /// says the axis matters for the row's variant (empty elsewhere), or the axis's `older_value` where it has one and
  /// the row's point with it is one the kind runs (ExperimentKind::validate; a raw-form verify row measured no
  /// cuda_cores kernel); otherwise it is missing and throws UsageError naming `origin`.
  RowKeyer(const std::vector<std::string>& header, const std::vector<std::string>& axis_columns,
           const std::string& origin, const ExperimentKind* kind = nullptr);
  /// The key of a row of that header ("\x1f"-joined values, the axes' in their one spelling, canonical_axis_value:
  /// rows that spell one point two ways, such as accepted 0.7 and 0.70, have one key).
  std::string key(const std::vector<std::string>& row) const;
  /// "axis=value,..." of the row's non-empty axis values (the same text as Point::label).
  std::string label(const std::vector<std::string>& row) const;
  /// (axis, value) pairs of the row, in axis order.
  std::vector<std::pair<std::string, std::string>> axes(const std::vector<std::string>& row) const;

 private:
  std::string value(const std::vector<std::string>& row, size_t i) const;  // column i of names_ in `row`
  std::string plain_value(const std::vector<std::string>& row, size_t i) const;  // value, older_value unchecked

  std::vector<std::string> names_;
  std::vector<size_t> index_;         // experiment first, then the axes; kAbsent: a column the header lacks
  std::vector<std::string> default_;  // per name: the value of an absent column where it applies
  std::vector<std::string> fallback_; // per name: the axis's default where default_ is an older_value the row refuses
  bool all_axes_ = false;             // names_ are the kind's axes in order (a row's point can be checked)
  const ExperimentKind* kind_ = nullptr;
  size_t variant_ = 0;                // index of the variant column (when a column is absent)
  static constexpr size_t kAbsent = size_t(-1);
};

/// An axis value as a point's key reads it: an empty state_dtype is fp32 (a CSV written before the column, or a
/// capacity CSV, may leave it empty), so that such a row and the same point's fp32 row are one point; any other
/// value as it is.
std::string key_axis_value(const std::string& axis, const std::string& value);

/// The key of a point: `experiment` and its axis values, each in its one spelling (canonical_axis_value), joined by
/// "\x1f". Every reader keys rows by it (a sweep's resume, merge, compare, a CSV's one-row-a-point check), so that two
/// spellings of one value, such as accepted 0.7 and 0.70, are one point everywhere.
std::string point_key(const std::string& experiment, const std::vector<std::string>& axis_values);

/// The key RowKeyer gives a row of `experiment` at `point` (point_key over key_axis_value of each axis).
std::string point_row_key(const std::string& experiment, const Point& point);

/// The key of a row laid out as `kind`'s CSV (experiment, then the kind's axes in order): point_key over
/// key_axis_value of each axis, the same as point_row_key of the row's point and RowKeyer's key of the row.
std::string kind_row_key(const ExperimentKind& kind, const std::vector<std::string>& row);

/// A CSV of `kind` written before the kind gained some of its axes (may_be_absent: spec_verify and decode CSVs
/// without `launch`) or result columns (ExperimentKind::results_added_later): when `table`'s header is exactly the
/// kind's columns less such columns, puts them back, axes with the values RowKeyer reads for them (the default where
/// the kind's `applies` says the axis matters for the row's variant, empty elsewhere, as the sweep writes them),
/// result columns empty, and returns true; the next write of the table carries the whole header. Otherwise leaves
/// `table` alone and returns false.
bool upgrade_older_header(const ExperimentKind& kind, CsvTable& table, const std::string& path);

}  // namespace kvb
