// The sweep loop: resume, run, record, report (sweep.h).
#include "harness/sweep/sweep.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/sweep/interrupt.h"
#include "harness/sweep/result_csv.h"
#include "harness/sweep/table_keys.h"

namespace kvb {
namespace {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return s;
}

bool is_ok(const std::string& status) { return status == "ok"; }

size_t column_index(const std::vector<std::string>& cols, const std::string& name) {
  for (size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == name) return i;
  return cols.size();
}

/// Builds the full CSV row of a point from its run's Row (or an empty result on failure).
std::vector<std::string> make_row(const ExperimentKind& kind, const std::string& experiment, const Point& p,
                                  const Row& result, const std::string& status, const SweepContext& ctx) {
  std::vector<std::string> row{experiment};
  for (const auto& a : p.axes) row.push_back(a.second);
  for (const auto& col : kind.result_columns) {
    std::string value;
    for (const auto& [name, v] : result)
      if (name == col) value = v;
    row.push_back(value);
  }
  row.push_back(status);
  row.push_back(ctx.gpu);
  row.push_back(ctx.driver);
  row.push_back(ctx.cuda);
  row.push_back(ctx.git_sha);
  row.push_back(utc_timestamp());
  return row;
}

/// The status a run's Row declares ("ok" when none); throws when the Row names a column the kind does not declare.
std::string checked_status(const ExperimentKind& kind, const Row& result) {
  std::string status = "ok";
  for (const auto& [name, value] : result) {
    if (name == "status") {
      status = value.empty() ? "ok" : one_line(value);
      continue;
    }
    if (column_index(kind.result_columns, name) == kind.result_columns.size())
      throw std::runtime_error("run returned column '" + name + "' that the kind does not declare");
  }
  return status;
}

/// Progress text of a finished point: its latency when the kind reports one, else its status.
std::string outcome_text(const std::vector<std::string>& cols, const std::vector<std::string>& row) {
  const std::string& status = row[column_index(cols, "status")];
  if (!is_ok(status)) return status;
  const size_t med = column_index(cols, "latency_us_median");
  if (med == cols.size() || row[med].empty()) return "ok";
  std::string text = row[med] + " us";
  const size_t p10 = column_index(cols, "latency_us_p10"), p90 = column_index(cols, "latency_us_p90");
  if (p10 < cols.size() && p90 < cols.size() && !row[p10].empty() && !row[p90].empty())
    text += " (p10 " + row[p10] + ", p90 " + row[p90] + ")";
  return text;
}

void print_summary(std::FILE* out, const ExperimentKind& kind, const std::vector<std::string>& cols,
                   const std::vector<Point>& points, const std::vector<std::vector<std::string>>& rows) {
  if (!out || rows.empty()) return;
  // Axes that vary across the points (variant always), then latency columns, then status.
  std::vector<size_t> shown;
  for (size_t a = 0; a < kind.axes.size(); ++a) {
    std::set<std::string> distinct;
    for (const auto& p : points) distinct.insert(p.axes[a].second);
    if (distinct.size() > 1 || kind.axes[a].name == "variant") shown.push_back(1 + a);
  }
  std::vector<std::string> wanted{"latency_us_median", "latency_us_p10", "latency_us_p90"};
  bool any_latency = false;
  for (const auto& w : wanted)
    if (column_index(cols, w) < cols.size()) {
      shown.push_back(column_index(cols, w));
      any_latency = true;
    }
  if (!any_latency)
    for (size_t i = 0; i < kind.result_columns.size() && i < 3; ++i) shown.push_back(1 + kind.axes.size() + i);
  shown.push_back(column_index(cols, "status"));

  auto cell = [](const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; };
  std::vector<size_t> width;
  for (size_t c : shown) {
    size_t w = cols[c].size();
    for (const auto& r : rows) w = std::max(w, cell(r[c]).size());
    width.push_back(w);
  }
  std::string line;
  for (size_t i = 0; i < shown.size(); ++i) line += fmt::format("{:<{}}  ", cols[shown[i]], width[i]);
  fmt::print(out, "{}\n", line);
  for (const auto& r : rows) {
    line.clear();
    for (size_t i = 0; i < shown.size(); ++i) line += fmt::format("{:<{}}  ", cell(r[shown[i]]), width[i]);
    fmt::print(out, "{}\n", line);
  }
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  const long long s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

CsvTable load_resume_table(const ExperimentKind& kind, const std::string& path, const std::string& flag) {
  CsvTable table = read_csv_file(path);
  if (table.header.empty()) return table;
  try {
    validate_result_table(table, {csv_schema(kind)}, path);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{} {}; move the file away or choose another --out", flag, e.what()));
  }
  upgrade_older_header(kind, table, path);
  return table;
}

void require_resume_experiment(const CsvTable& table, const std::string& experiment, const std::string& path,
                               const std::string& flag) {
  const size_t col = column_index(table.header, "experiment");
  for (size_t r = 0; r < table.rows.size(); ++r)
    if (col < table.rows[r].size() && table.rows[r][col] != experiment)
      throw UsageError(fmt::format("{} {}:{}: experiment '{}' is not this sweep's (allowed: a CSV of experiment "
                                   "'{}' to resume, or a new --out)",
                                   flag, path, table.line(r), table.rows[r][col], experiment));
}

std::vector<bool> finished_points(const ExperimentKind& kind, const std::string& experiment,
                                  const std::vector<Point>& points, const CsvTable& table) {
  const size_t status_col = 1 + kind.axes.size() + kind.result_columns.size();
  std::set<std::string> ok;
  for (const auto& row : table.rows)
    if (row.size() > status_col && is_ok(row[status_col])) ok.insert(kind_row_key(kind, row));
  std::vector<bool> done;
  for (const auto& p : points) done.push_back(ok.count(point_row_key(experiment, p)) != 0);
  return done;
}

size_t rows_outside_grid(const ExperimentKind& kind, const std::string& experiment, const std::vector<Point>& grid,
                         const CsvTable& table) {
  std::set<std::string> keys;
  for (const Point& p : grid) keys.insert(point_row_key(experiment, p));
  size_t outside = 0;
  for (const auto& row : table.rows) outside += keys.count(kind_row_key(kind, row)) == 0;
  return outside;
}

void report_rows_outside_grid(std::FILE* out, size_t count, const std::string& path) {
  if (!out || count == 0) return;
  fmt::print(out,
             "kvb sweep: {} row(s) of {} are no point of this grid (other axis values, or values this kvb does not "
             "know); they stay in the file and count for no point\n",
             count, shown_escaped_value(line_escaped(path)));
}

SweepSummary run_sweep(const ExperimentKind& kind, const std::vector<Point>& points, SweepContext& ctx,
                       const SweepOptions& options) {
  using clock = std::chrono::steady_clock;
  const auto cols = csv_columns(kind);
  const size_t status_col = column_index(cols, "status");
  check_output_writable(options.out_path);  // before any point runs: a point's row must be writable
  CsvTable table = load_resume_table(kind, options.out_path);
  require_resume_experiment(table, options.experiment, options.out_path);
  if (table.header.empty()) table.header = cols;

  // Resuming continues a run on the same GPU: rows measured on another GPU are not this run's results.
  const size_t gpu_col = column_index(cols, "gpu");
  for (const auto& row : table.rows)
    if (row.size() > gpu_col && !row[gpu_col].empty() && !ctx.gpu.empty() && row[gpu_col] != ctx.gpu)
      throw UsageError(fmt::format("--out {}: holds results measured on '{}', this run is on '{}' (allowed: a file "
                                   "from the same GPU to resume, or a new --out)",
                                   options.out_path, row[gpu_col], ctx.gpu));

  std::map<std::string, size_t> row_of;  // key -> index in table.rows
  for (size_t r = 0; r < table.rows.size(); ++r) row_of[kind_row_key(kind, table.rows[r])] = r;
  const std::vector<bool> done = finished_points(kind, options.experiment, points, table);

  SweepSummary summary;
  summary.points = points.size();
  size_t to_run = 0;
  for (bool d : done) to_run += !d;
  summary.skipped = points.size() - to_run;
  if (options.progress && summary.skipped)
    fmt::print(options.progress, "kvb sweep: {} of {} points already done in {}; running the other {}\n",
               summary.skipped, points.size(), options.out_path, to_run);

  double seconds_spent = 0;
  size_t ran = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const std::string key = point_row_key(options.experiment, p);
    if (done[i]) {
      summary.rows.push_back(table.rows[row_of.at(key)]);
      ++summary.ok;
      continue;
    }
    if (interrupt_signal()) {  // between points: every finished point is in the file
      summary.signal = interrupt_signal();
      ++summary.not_run;
      continue;
    }
    const auto start = clock::now();
    std::vector<std::string> row;
    try {
      if (!kind.run) throw std::runtime_error("experiment kind " + kind.name + " has no runner");
      const Row result = kind.run(p, ctx);
      row = make_row(kind, options.experiment, p, result, checked_status(kind, result), ctx);
    } catch (const std::exception& e) {
      row = make_row(kind, options.experiment, p, {}, "failed: " + one_line(e.what()), ctx);
    } catch (...) {
      row = make_row(kind, options.experiment, p, {}, "failed: unknown exception", ctx);
    }
    if (is_ok(row[status_col])) ++summary.ok;
    else ++summary.failed;

    auto it = row_of.find(key);
    if (it != row_of.end()) {
      table.rows[it->second] = row;
    } else {
      row_of[key] = table.rows.size();
      table.rows.push_back(row);
    }
    write_file_atomic(options.out_path, format_csv(table));
    summary.rows.push_back(row);

    seconds_spent += std::chrono::duration<double>(clock::now() - start).count();
    ++ran;
    if (options.progress) {
      const double eta = seconds_spent / double(ran) * double(to_run - ran);
      fmt::print(options.progress, "[{}/{}] {} -> {}  (ETA {})\n", i + 1, points.size(), p.label(),
                 outcome_text(cols, row), format_duration(eta));
      std::fflush(options.progress);
    }
  }

  print_summary(options.summary, kind, cols, points, summary.rows);
  if (options.summary && summary.signal)
    fmt::print(options.summary,
               "kvb sweep: stopped by {} between points: {} of {} points finished ({} ok, {} failed, {} done "
               "earlier), {} not run; {} holds every finished point; run the same command again to resume\n",
               signal_name(summary.signal), summary.ok + summary.failed, summary.points, summary.ok, summary.failed,
               summary.skipped, summary.not_run, options.out_path);
  else if (options.summary)
    fmt::print(options.summary, "kvb sweep: {} points: {} ok, {} failed ({} done earlier); results in {}\n",
               summary.points, summary.ok, summary.failed, summary.skipped, options.out_path);
  return summary;
}

}  // namespace kvb
