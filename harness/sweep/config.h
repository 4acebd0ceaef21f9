// Sweep configuration: the TOML file (experiments/NAME.toml), command-line axis overrides, and the resolved axes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// Axis name and its values (as strings, in the order given).
using AxisValues = std::pair<std::string, std::vector<std::string>>;

/// Timing options of a config's optional [timing] table; absent keys stay unset (the SweepContext defaults hold).
struct TimingConfig {
  std::optional<int> min_samples;                 ///< fewest timed samples per point, >= 1
  std::optional<double> max_seconds_per_point;    ///< time budget per point in seconds, > 0
  std::optional<double> target_noise_pct;         ///< stop sampling once the median's noise is below this (%), > 0
};

/// A parsed config file, before it meets its experiment kind.
/// Layout: [experiment] name (string, required), kind (string, default "decode"), description (string, optional);
/// [axes] AXIS = [values] (integers or strings, or one scalar); [timing] min_samples, max_seconds_per_point,
/// target_noise_pct (optional).
/// Characters an experiment name may have: with ".shardK-of-N.csv" it stays under a file name's 255 bytes.
constexpr size_t kMaxExperimentName = 200;

struct SweepConfig {
  std::string path;
  std::string name;
  std::string kind = "decode";
  std::string description;
  /// The CSV a sweep writes without --out, ending in .csv (shards: its stem + .shardK-of-N.csv); "" for
  /// results/NAME.csv. A config whose name matches a committed CSV's experiment (to be compared with it) sets its own.
  std::string out;
  std::vector<AxisValues> axes;  ///< as written in [axes] (sorted by axis name; resolve_axes puts them in kind order)
  std::vector<int> axis_lines;   ///< the line of each of `axes` in the file (0: not known)
  TimingConfig timing;
};

/// Throws UsageError "ORIGIN: experiment.name ..." unless `name` is an experiment name: not empty, letters, digits,
/// '_', '-', '.' only (it makes file names), at most kMaxExperimentName characters. Sweep and capacity configs alike.
void check_experiment_name(const std::string& name, const std::string& origin);

/// Reads and parses a config file. Throws UsageError naming the file and the field on a missing or unreadable file,
/// malformed TOML, a missing or mistyped field, an unknown table or key, or an empty axis.
SweepConfig load_sweep_config(const std::string& path);

/// Parses the same content from a string (`origin` names it in errors). Same errors as load_sweep_config.
SweepConfig parse_sweep_config(const std::string& toml_text, const std::string& origin);

/// Parses one `--set AXIS=V1,V2,...` override (values trimmed; an empty one is kept for resolve_axes to refuse with
/// the axis's allowed values). Throws UsageError naming --set when the form is wrong.
AxisValues parse_axis_override(const std::string& text);

/// The kind's axes, in the kind's order, each with its values: the kind's defaults, replaced by the config's list,
/// replaced by the override naming it. Every value is checked with AxisSpec::check. Throws UsageError naming an
/// unknown axis (listing the known ones), an axis overridden twice, an empty override value (with the allowed values
/// the check names) or the first bad value (with the check's reason).
std::vector<AxisValues> resolve_axes(const ExperimentKind& kind, const SweepConfig& config,
                                     const std::vector<AxisValues>& overrides);

/// The one spelling of an axis value: integers in plain decimal ("064", "+64" -> "64"), other numbers in their
/// shortest form (".7" -> "0.7"); anything not written as a plain ASCII decimal number (a word, a hex float, text
/// holding a NUL) and a number a double cannot hold (overflow, underflow, subnormal) unchanged. The figures'
/// result_csv.canonical_axis_value gives the same text.
std::string canonical_axis_value(const std::string& value);

}  // namespace kvb
