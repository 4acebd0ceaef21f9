// The subcommands of `kvb`: their options and entry points. Each returns the process exit code
// (0 success, 1 a check or point failed, 2 bad input); UsageError escapes to main, which prints it and exits 2.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kvb::cli {

/// `kvb info` options.
struct InfoOptions {
  int device = 0;                 ///< which device's bandwidth to measure
  double buffer_mib = 2048;       ///< size of each bandwidth buffer, MiB
  bool gpu_present_only = false;  ///< print nothing; exit 0 when a CUDA device is present, 1 otherwise
};

/// Prints the GPU (name, SMs, L2, memory), driver and CUDA versions, and the measured copy (read+write) and read
/// bandwidths; without a GPU says so and still exits 0.
int run_info(const InfoOptions& options);

/// `kvb check-golden` options.
struct CheckGoldenOptions {
  std::vector<std::string> files;  ///< gdn-case v1 files
};

/// Checks the float64 reference (and the GPU kernels when a device is present) against each golden file; one line
/// per tensor per engine. Exit 0 all pass, 1 a tensor above tolerance or a GPU failure, 2 a malformed or unreadable
/// file (the other files are still checked).
int run_check_golden(const CheckGoldenOptions& options);

/// `kvb sweep` options; unset optionals fall back to the config's [timing] table, then to SweepContext defaults.
struct SweepCommandOptions {
  std::string config;
  std::string out;                ///< default results/<experiment name>.csv
  std::vector<std::string> sets;  ///< AXIS=V1,V2,... overrides
  bool dry_run = false;
  std::string l2 = "cold";
  bool no_cupti = false;
  std::optional<int> min_samples;
  std::optional<double> max_seconds;
  int device = 0;
};

/// Validates the config, overrides and output, then (unless dry_run) checks for a GPU (exit 2 without one),
/// measures the device, and runs the sweep. Exit 0 when every point is ok, 1 when any point failed.
int run_sweep_command(const SweepCommandOptions& options);

}  // namespace kvb::cli
