// `kvb check-golden`: the reference and the kernels against gdn-case files (commands.h).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/interrupt.h"
#include "harness/workloads/golden_gpu.h"
#include "reference/golden_case.h"

namespace kvb::cli {
namespace {

/// Prints one line per check; returns true when all pass.
bool report(const std::string& file, size_t width, const std::vector<ref::TensorCheck>& checks) {
  bool ok = true;
  for (const auto& c : checks) {
    fmt::print("{:<{}}  {:<12}  {:<11}  max_rel_err {:.3e}  tolerance {:.1e}  {}\n", file, width, c.engine, c.tensor,
               c.max_rel_err, c.tolerance, c.pass() ? "PASS" : "FAIL");
    ok = ok && c.pass();
  }
  return ok;
}

/// One line of the table for an engine that skipped a file, and why.
void report_skipped(const std::string& file, size_t width, const std::string& engine, const std::string& why) {
  fmt::print("{:<{}}  {:<12}  skipped: {}\n", file, width, engine, why);
}

/// An error line on stderr, after the table's lines so far (stdout is buffered, stderr is not).
template <typename... Args>
void error_line(fmt::format_string<Args...> format, Args&&... args) {
  std::fflush(stdout);
  fmt::print(stderr, "kvb check-golden: {}\n", fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace

int run_check_golden(const CheckGoldenOptions& options) {
  // Every file readable before any is checked: a missing one stops the command (exit 2, its one line) with nothing
  // checked.
  for (const auto& file : options.files)
    if (const std::string why = ref::golden_case_unreadable(file); !why.empty()) {
      error_line("{}", why);
      return 2;
    }
  const bool gpu = cuda_device_present();
  if (!gpu) error_line("no CUDA device found; checking the float64 reference only");
  bool malformed = false, failed = false;
  size_t width = 0;
  for (const auto& file : options.files) width = std::max(width, file.size());
  size_t checked = 0;
  for (const auto& file : options.files) {
    if (checked > 0) test_stop_point("golden_file");
    if (interrupt_signal()) break;  // between files
    ++checked;
    ref::GoldenCase c;
    try {
      c = ref::load_golden_case(file);
    } catch (const std::exception& e) {  // a GoldenFormatError names the file and line; others name the file
      error_line("{}", e.what());
      malformed = true;
      continue;
    }
    try {
      failed = !report(file, width, ref::check_golden_reference(c)) || failed;
    } catch (const std::exception& e) {
      error_line("{}: reference failed: {}", file, e.what());
      failed = true;
    }
    if (!gpu) continue;
    if (const std::string why = golden_gpu_skip_reason(c); !why.empty()) {
      for (const auto& engine : golden_gpu_engines()) report_skipped(file, width, engine, why);
      continue;
    }
    try {
      failed = !report(file, width, check_golden_gpu(c)) || failed;
    } catch (const std::exception& e) {
      error_line("{}: gpu failed: {}", file, e.what());
      failed = true;
    }
    std::fflush(stdout);
  }
  const bool stopped = interrupt_signal() && checked < options.files.size();
  if (stopped)
    error_line("stopped by {}: {} of {} files checked", signal_name(interrupt_signal()), checked,
               options.files.size());
  std::fflush(stdout);
  if (malformed) return 2;
  if (stopped) return interrupt_exit_code();
  return failed ? 1 : 0;
}

}  // namespace kvb::cli
