// `kvb check-golden`: the reference and the kernels against gdn-case files (commands.h).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/cli/stdout_flush.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/input_file.h"
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

/// An error line on stderr (one_line), after the table's lines so far (stdout is buffered, stderr is not).
template <typename... Args>
void error_line(fmt::format_string<Args...> format, Args&&... args) {
  flush_stdout();
  fmt::print(stderr, "kvb check-golden: {}\n", one_line(fmt::format(format, std::forward<Args>(args)...)));
}

/// "" when the gdn-case file `path` holds no NUL byte, else why not: the line and column (in characters) of the first
/// one, and that line as shown_value shows it (its NUL written \x00 where the message is printed). A gdn-case file is
/// plain text, and the reader's errors, which quote the line at fault, would end at the NUL.
std::string nul_byte(const std::string& path) {
  const std::string text = read_input_file(path, "FILE", "a gdn-case v1 file such as tests/data/golden/draft4.gdn");
  const size_t nul = text.find('\0');
  if (nul == std::string::npos) return "";
  const size_t begin = nul == 0 ? 0 : text.rfind('\n', nul - 1) + 1;  // npos + 1 == 0: the first line
  const size_t end = std::min(text.find('\n', nul), text.size());
  const size_t line = size_t(std::count(text.begin(), text.begin() + long(begin), '\n')) + 1;
  return fmt::format("{}:{}: a NUL byte at column {} of '{}' (allowed: plain text: '# comment', 'key: value' and "
                     "'tensor NAME RANK D0 D1 ...' lines, the tensors' numbers)",
                     path, line, character_count(text.substr(begin, nul - begin)) + 1,
                     shown_value(text.substr(begin, end - begin)));
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
  // Said once, before the first check's lines: a file refused before any check gets its one line alone.
  bool told = gpu;
  const auto tell_no_gpu = [&] {
    if (!told) error_line("no CUDA device found; checking the float64 reference only");
    told = true;
  };
  bool malformed = false, failed = false;
  size_t width = 0;
  for (const auto& file : options.files) width = std::max(width, file.size());
  size_t checked = 0;
  for (const auto& file : options.files) {
    if (checked > 0) test_stop_point("golden_file");
    if (interrupt_signal()) break;  // between files
    ++checked;
    if (const std::string why = nul_byte(file); !why.empty()) {
      error_line("{}", why);
      malformed = true;
      continue;
    }
    ref::GoldenCase c;
    try {
      c = ref::load_golden_case(file);
    } catch (const std::exception& e) {  // a GoldenFormatError names the file and line; others name the file
      error_line("{}", e.what());
      malformed = true;
      continue;
    }
    tell_no_gpu();
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
    flush_stdout();
  }
  const bool stopped = interrupt_signal() && checked < options.files.size();
  if (stopped)
    error_line("stopped by {}: {} of {} files checked", signal_name(interrupt_signal()), checked,
               options.files.size());
  flush_stdout();
  if (malformed) return 2;
  if (stopped) return interrupt_exit_code();
  return failed ? 1 : 0;
}

}  // namespace kvb::cli
