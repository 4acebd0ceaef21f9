// Regression check between two result CSVs of the same experiment: per-point latency ratios, classified as faster,
// same or slower taking each side's spread (p10..p90) into account.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/merge.h"

namespace kvb {

/// Verdict for one point.
enum class Verdict { faster, same, slower };
const char* to_string(Verdict v);

/// One side's latency of a point, microseconds (latency_us_median, latency_us_p10, latency_us_p90 columns).
struct Latency {
  double median = 0, p10 = 0, p90 = 0;
};

/// Comparison settings.
struct CompareOptions {
  double threshold_pct = 5.0;        ///< smallest change of the median that counts, percent, in [0, 1000]
  /// Latency columns compared: METRIC_median, METRIC_p10, METRIC_p90. "" picks latency_us (decode) when the CSV has
  /// it, else verify_accept_us (spec_verify); verify_us selects spec_verify's verify-alone columns.
  std::string metric;
  bool allow_different_gpu = false;  ///< compare rows whose "gpu" values differ
};

/// The rule, with t = threshold_pct / 100 and ratio = candidate.median / baseline.median:
///   slower  when candidate.p10 > baseline.p90 and ratio > 1 + t  (the spreads do not overlap, and the change is big),
///   faster  when candidate.p90 < baseline.p10 and ratio < 1 - t,
///   same    otherwise.
Verdict classify(const Latency& baseline, const Latency& candidate, double threshold_pct);

/// One point present (status ok) in both files.
struct PointComparison {
  std::vector<std::pair<std::string, std::string>> axes;  ///< (axis, value) in the CSV's axis order
  std::string label;                                      ///< "axis=value,..." of the non-empty axes
  Latency baseline, candidate;
  double ratio = 0;  ///< candidate median / baseline median
  Verdict verdict = Verdict::same;
};

/// Everything compare found.
struct Comparison {
  std::vector<PointComparison> points;      ///< common points, in the baseline's row order
  std::vector<std::string> only_baseline;   ///< labels of ok baseline points the candidate lacks (or did not get ok)
  std::vector<std::string> only_candidate;  ///< labels of ok candidate points the baseline lacks
  std::string baseline_gpu, candidate_gpu;  ///< "gpu" of the first common point on each side
  double threshold_pct = 5.0;

  size_t count(Verdict v) const;
  /// 1 when any point is slower, else 0.
  int exit_code() const { return count(Verdict::slower) ? 1 : 0; }
};

/// Validates both files (validate_result_table with the schemas of `kinds`, harness/sweep/result_csv.h: known
/// columns, finite positive latencies with p10 <= median <= p90, one row per point, one GPU; validate_axis_values:
/// axis values a sweep of the file's kind allows), matches their
/// status-ok rows by experiment and axis columns (csv_axis_columns with `kinds`; both files must have the same axis
/// columns) and classifies every common point. Throws UsageError (exit 2) naming the file, line and column for: a
/// bad threshold (naming --threshold), a file that breaks a rule, no common points, or (unless allow_different_gpu)
/// a common point whose "gpu" values differ (naming --allow-different-gpu).
Comparison compare_tables(const CsvInput& baseline, const CsvInput& candidate, const std::vector<ExperimentKind>& kinds,
                          const CompareOptions& options);

}  // namespace kvb
