// `kvb check-golden`: the reference and the kernels against gdn-case files (commands.h).
#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/measure/device_info.h"
#include "harness/workloads/golden_gpu.h"
#include "reference/golden_case.h"

namespace kvb::cli {
namespace {

/// Prints one line per check; returns true when all pass.
bool report(const std::string& file, size_t width, const std::vector<ref::TensorCheck>& checks) {
  bool ok = true;
  for (const auto& c : checks) {
    fmt::print("{:<{}}  {:<9}  {:<11}  max_rel_err {:.3e}  tolerance {:.1e}  {}\n", file, width, c.engine, c.tensor,
               c.max_rel_err, c.tolerance, c.pass() ? "PASS" : "FAIL");
    ok = ok && c.pass();
  }
  return ok;
}

}  // namespace

int run_check_golden(const CheckGoldenOptions& options) {
  const bool gpu = cuda_device_present();
  if (!gpu) fmt::print(stderr, "kvb check-golden: no CUDA device found; checking the float64 reference only\n");
  bool malformed = false, failed = false;
  size_t width = 0;
  for (const auto& file : options.files) width = std::max(width, file.size());
  for (const auto& file : options.files) {
    ref::GoldenCase c;
    try {
      c = ref::load_golden_case(file);
    } catch (const ref::GoldenFormatError& e) {
      fmt::print(stderr, "kvb check-golden: {}\n", e.what());
      malformed = true;
      continue;
    } catch (const std::exception& e) {
      fmt::print(stderr, "kvb check-golden: {}\n", e.what());  // the message names the file
      malformed = true;
      continue;
    }
    try {
      failed = !report(file, width, ref::check_golden_reference(c)) || failed;
    } catch (const std::exception& e) {
      fmt::print(stderr, "kvb check-golden: {}: reference failed: {}\n", file, e.what());
      failed = true;
    }
    if (!gpu) continue;
    try {
      failed = !report(file, width, check_golden_gpu(c)) || failed;
    } catch (const std::exception& e) {
      fmt::print(stderr, "kvb check-golden: {}: gpu failed: {}\n", file, e.what());
      failed = true;
    }
  }
  if (malformed) return 2;
  return failed ? 1 : 0;
}

}  // namespace kvb::cli
