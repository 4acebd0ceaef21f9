// The sweep engine: runs every point of a grid through its experiment kind, appends each finished point to the CSV
// (atomically, whole file), resumes from a previous file, reports progress with an ETA, and prints a summary table.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// Where a sweep writes and reports.
struct SweepOptions {
  std::string experiment;          ///< written in the "experiment" column
  std::string out_path;            ///< result CSV; its missing folders are created
  std::FILE* progress = stderr;    ///< one line per point with an ETA; nullptr: silent
  std::FILE* summary = stdout;     ///< final table; nullptr: silent
};

/// What a sweep did. `rows` holds the CSV row of every point of the grid (in grid order, columns as csv_columns),
/// including points skipped because an earlier run finished them.
struct SweepSummary {
  size_t points = 0, skipped = 0, ok = 0, failed = 0;
  size_t not_run = 0;  ///< points left when a signal stopped the sweep
  int signal = 0;      ///< SIGINT or SIGTERM when one stopped the sweep between points (interrupt.h), else 0
  std::vector<std::vector<std::string>> rows;
};

/// Reads the CSV at `path` for resuming: an empty table when absent. The file must pass validate_result_table
/// (result_csv.h) as a CSV of `kind`. A file written before the kind gained an axis or a result column
/// (AxisSpec::added_later, one default; ExperimentKind::results_added_later) is read with that column put back (the
/// axis's default where it applies to the row's variant; an empty result), and the sweep's next write of the file
/// carries the whole header. Throws UsageError naming `flag` (what gave the path: --out, or a config's experiment.out),
/// the file and the line when it is malformed or breaks a rule.
CsvTable load_resume_table(const ExperimentKind& kind, const std::string& path, const std::string& flag = "--out");

/// Throws UsageError naming `flag` and `path` and the line of the first row of `table` (as load_resume_table read it)
/// whose experiment is not `experiment`: a sweep resumes its own experiment's file, and would otherwise add its rows
/// to another's (which kvb merge then refuses).
void require_resume_experiment(const CsvTable& table, const std::string& experiment, const std::string& path,
                               const std::string& flag = "--out");

/// For each point: true when `table` holds an "ok" row for it (same experiment and axis values).
std::vector<bool> finished_points(const ExperimentKind& kind, const std::string& experiment,
                                  const std::vector<Point>& points, const CsvTable& table);

/// Rows of `table` (a result CSV of `kind`) that are no point of `grid` in experiment `experiment`: rows of other
/// axis values, or with a value this kvb does not know. Resuming keeps them in the file and counts them for no point.
size_t rows_outside_grid(const ExperimentKind& kind, const std::string& experiment, const std::vector<Point>& grid,
                         const CsvTable& table);

/// Prints the line that says so, naming the file, to `out` (nothing when `count` is 0 or `out` is null).
void report_rows_outside_grid(std::FILE* out, size_t count, const std::string& path);

/// Runs the sweep. Points with an "ok" row in the existing file are skipped; failed rows are run again and replaced
/// in place; new rows are appended; rows of other points are kept. After each point the whole file is rewritten
/// atomically (write_file_atomic), so an interrupted sweep leaves a complete file and re-running resumes it. When
/// SIGINT or SIGTERM was recorded (interrupt.h, InterruptMode::between_steps), no further point starts: the summary
/// says which signal, how many points finished and how many were not run.
/// An exception from ExperimentKind::run is caught and recorded as status "failed: <what()>" (one line); the sweep
/// goes on. Throws UsageError for a bad existing file or output folder, std::runtime_error when writing fails.
SweepSummary run_sweep(const ExperimentKind& kind, const std::vector<Point>& points, SweepContext& ctx,
                       const SweepOptions& options);

/// "1h02m", "3m05s", "12s": a duration in seconds for progress lines.
std::string format_duration(double seconds);

}  // namespace kvb
