// What a kind of experiment (decode, spec_verify, ...) tells the sweep engine: its axes, which axes each variant
// uses, its result columns, and how to run one point. The engine (sweep.h) does the rest: config, grid, CSV, resume.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kvb {

/// `text` with each NUL byte written as the four characters \x00 (two hex digits, so that a digit after it does not
/// read as part of it, as one after \0 would in C's octal escapes).
std::string nul_escaped(const std::string& text);

/// `text` with each line break and control character written as its escape, so that it prints as one line: LF as \n,
/// CR as \r, the other control characters but tab as \xNN (VT, FF, the separators FS to RS, ESC, DEL, NUL: a
/// terminal or an editor may break a line at them or act on them), NEL, U+2028 and U+2029 as \u0085, \u2028 and
/// \u2029, and each byte that is no UTF-8 text (a path's Latin-1 byte) as \xNN. The figures' result_csv.escaped writes
/// the same.
std::string line_escaped(const std::string& text);

/// A bad value for a named field: the message names the field and the allowed values. Maps to exit code 2.
/// The message is kept with its NUL bytes written \x00 (nul_escaped): what() is a C string, which would end at the
/// first one, and a value quoted from a config string or a CSV cell may hold one.
struct UsageError : std::runtime_error {
  explicit UsageError(const std::string& message) : std::runtime_error(nul_escaped(message)) {}
};

/// A value as an error message quotes it: whole up to 80 characters (UTF-8 code points; each byte of an ill-formed
/// sequence one character), else its first 72 and how many it has, so that a pasted file or a runaway string still
/// gives a short error.
std::string shown_value(const std::string& value);
/// The characters of `text` as shown_value counts them (UTF-8 code points; each byte of an ill-formed sequence one).
size_t character_count(const std::string& text);
/// shown_value of line_escaped text: each escape line_escaped writes (\n, \xNN, \u2028, ...) counts as one
/// character and is never cut, so that a value is shown with the count it had before it was escaped.
std::string shown_escaped_value(const std::string& text);

/// The integer in `text` when the whole of it is one decimal integer in range of long long (no leading white space,
/// which strtoll would skip, nothing after it); false otherwise. Every integer the command line, a config or a point
/// gives is read by it.
bool parse_integer(const std::string& text, long long& out);
/// True when `text` is written as one decimal integer: an optional sign, then ASCII digits only. parse_integer reads
/// every such text but one long long cannot hold (out of range), and no other text.
bool integer_text(const std::string& text);

/// One sweep point: (axis, value) in the experiment's axis order, values as written in the config.
/// An axis that does not apply to the point's variant holds "" (and is written empty in the CSV).
struct Point {
  std::vector<std::pair<std::string, std::string>> axes;

  /// Value of `axis`; throws std::out_of_range naming it when absent.
  const std::string& get(const std::string& axis) const;
  /// Value parsed as an integer; throws UsageError naming the axis when it is not one.
  long long get_int(const std::string& axis) const;
  /// "axis=value,axis=value" of the non-empty axes (for progress lines and NVTX range names).
  std::string label() const;
};

/// Result columns of one row, in the kind's result_columns order (missing ones are written empty; a column the kind
/// does not declare fails the point). A row may also carry a "status" entry (for example "failed: outputs above
/// tolerance" with the measured values kept); without one the engine writes "ok". Only "ok" rows are skipped on resume.
using Row = std::vector<std::pair<std::string, std::string>>;

/// Device facts and run options the engine measures or parses once per sweep and hands to every point.
struct SweepContext {
  std::string gpu, driver, cuda, git_sha;
  int device = 0;
  double copy_gbps = 0;  ///< measured device copy bandwidth, bytes read + written per second / 1e9
  double read_gbps = 0;  ///< measured device read bandwidth, GB/s
  std::string l2_mode = "cold";  ///< "cold" | "hot"
  bool cupti = true;             ///< profile DRAM bytes after timing
  double max_seconds_per_point = 3.0;
  int min_samples = 10;
  double target_noise_pct = 1.0;
};

/// An axis's validator: `allowed`, its allowed values in words ("integers 1 to 4096", "plain, pdl"; empty when not
/// given), and `reason(value)`, "" for an allowed value, else a one-line reason naming the axis and the allowed values.
/// Called as check(value) ("" when no validator is set); false when none is.
/// `rule`, `words`, `low` and `high` state what `reason` allows as data, for the figures' reader, which holds a result
/// CSV's axis values to the same checks (plots/result_axes.csv, kept equal to them by a CPU test):
///  - "words": one of `words` ("is not known");
///  - "integers": a decimal integer (parse_integer) from `low` to `high` ("is not an integer", "is out of range");
///  - "integer_set": a decimal integer equal to one of `words` ("is not supported");
///  - "words_or_rate": one of `words`, or a finite decimal number strictly between `low` and `high` ("is not
///    allowed");
/// "" for a check they do not describe (no kind has one).
struct AxisCheck {
  std::string allowed;
  std::function<std::string(const std::string& value)> reason;
  std::string rule;
  std::vector<std::string> words;
  std::string low, high;
  AxisCheck() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, AxisCheck> &&
                                              std::is_invocable_r_v<std::string, F, const std::string&>>>
  AxisCheck(F f, std::string allowed_values = "", std::string rule_name = "", std::vector<std::string> rule_words = {},
            std::string rule_low = "", std::string rule_high = "")
      : allowed(std::move(allowed_values)),
        reason(std::move(f)),
        rule(std::move(rule_name)),
        words(std::move(rule_words)),
        low(std::move(rule_low)),
        high(std::move(rule_high)) {}
  std::string operator()(const std::string& value) const { return reason ? reason(value) : ""; }
  explicit operator bool() const { return bool(reason); }
};

/// An axis: its name, the values used when the config does not list it, and its validator.
struct AxisSpec {
  std::string name;
  std::vector<std::string> defaults;
  AxisCheck check;
  /// The kind gained this axis after CSVs of it were written: a CSV without the column is still of this kind, and
  /// its rows hold the axis's single default (csv_kind, RowKeyer; a sweep resuming such a file, load_resume_table),
  /// or `older_value` when set: what those rows measured when it differs from what the default means now.
  bool added_later = false;
  std::string older_value = "";

  /// "" when `check` allows `value` (or there is no check), else its reason, naming the axis ("AXIS = 'VALUE': ..."
  /// where the check's own reason does not), or "AXIS = 'VALUE' has white space around it (allowed: ...)" for a
  /// value the check takes once that is removed (it is not removed: "64" and " 64" would be two spellings of one
  /// point). What a config, a --set and a result CSV read by merge or compare are held to alike.
  std::string refusal(const std::string& value) const;
};

/// A kind of experiment. `applies(variant, axis)` says whether an axis matters for a variant: axes that do not are
/// emptied and their duplicate points dropped (a recurrent point has no buffer_size).
struct ExperimentKind {
  std::string name;
  std::vector<AxisSpec> axes;
  std::vector<std::string> result_columns;
  /// Result columns the kind gained after CSVs of it were written: a CSV without them still resumes, its rows
  /// reading them empty (load_resume_table).
  std::vector<std::string> results_added_later;
  std::function<bool(const std::string& variant, const std::string& axis)> applies;
  /// Whole-point check (combinations, e.g. heads_v a multiple of heads_qk): "" or the reason.
  std::function<std::string(const Point&)> validate;
  /// Runs one point on the GPU; throws on failure (the engine records the row as failed and goes on).
  std::function<Row(const Point&, SweepContext&)> run;
};

}  // namespace kvb
