// The subcommands of `kvb`: their options and entry points. Each returns the process exit code
// (0 success, 1 a check or point failed, 2 bad input); UsageError escapes to main, which prints it and exits 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/sweep/merge.h"

namespace CLI {
class App;
}

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
/// per tensor per engine. A case whose shape the GPU kernels do not take gets one "skipped: REASON" line per GPU
/// engine (golden_gpu_skip_reason) and counts neither as a pass nor as a failure. Exit 0 all pass, 1 a tensor above
/// tolerance or a GPU failure, 2 a malformed or unreadable file (the other files are still checked). Between files
/// it stops on a recorded SIGINT or SIGTERM.
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
  bool device_given = false;      ///< --device was on the command line
  std::string shard;              ///< "I/N": run grid points i with i % N == I; "" the whole grid
  std::string devices;            ///< "0,1,..." or "all": one worker process per GPU; "" one process
};

/// Validates the config, overrides, shard and output, then (unless dry_run) checks for a GPU (exit 2 without one),
/// measures the device, and runs the sweep (or, with devices, one worker `kvb sweep` per GPU and merges their rows
/// into the output). Exit 0 when every point is ok, 1 when any point failed, 128 + the signal when SIGINT or SIGTERM
/// stopped it between points (the output holds every finished point; the same command resumes).
int run_sweep_command(const SweepCommandOptions& options);

/// `kvb merge` options.
struct MergeCommandOptions {
  std::string out;                 ///< merged CSV, written atomically
  std::vector<std::string> inputs; ///< shard CSVs
  std::string config;              ///< optional: order rows as in this config's full grid and check its experiment
  std::vector<std::string> sets;   ///< AXIS=V1,V2,... overrides of that grid
  bool force = false;              ///< replace an existing OUT (otherwise an existing OUT is refused)
};

/// Joins shard CSVs (kvb/sweep/merge.h). Exit 0, or UsageError (exit 2, nothing written) for a missing, malformed or
/// invalid input (harness/sweep/result_csv.h), a header, experiment or GPU that differs, a point in two inputs, or an
/// OUT that exists without force or is one of the inputs.
int run_merge_command(const MergeCommandOptions& options);

/// Reads and parses a result CSV that must exist (for merge and compare; they validate it), named on the command line
/// by `argument` ("IN", "BASELINE"). Throws UsageError naming the argument and file when it is absent, a folder,
/// unreadable or malformed.
CsvInput read_input_csv(const std::string& path, const std::string& argument);

/// `kvb compare` options.
struct CompareCommandOptions {
  std::string baseline, candidate;  ///< result CSVs
  double threshold_pct = 5.0;       ///< smallest median change that counts, percent
  bool markdown = false;            ///< GitHub Markdown table instead of aligned text
  bool allow_different_gpu = false;
  std::string metric;               ///< latency column prefix ("" = latency_us, or verify_accept_us for spec_verify)
};

/// Prints the per-point comparison (harness/reports/compare.h) to stdout. Exit 1 when any point is slower beyond the
/// threshold and the spread, else 0; UsageError (exit 2) for unusable input (no common points, different GPUs
/// without allow_different_gpu, a missing or malformed file).
int run_compare_command(const CompareCommandOptions& options);

/// `kvb capacity` options; unset optionals fall back to the config (--config), then to the defaults
/// (capacity::CapacitySettings: Qwen3-Next TP1, 36 layers).
struct CapacityCommandOptions {
  std::string config;                       ///< experiments/capacity.toml or another capacity config; "" none
  /// "" (default): results/capacity.csv when the allocation proof runs, results/capacity_model.csv for a model-only
  /// run (no GPU, or --no-probe), so that a model-only run never replaces a proved CSV by default.
  std::string out;
  std::string out_flag = "--out";           ///< the flag that names `out` in errors (kvb reproduce: --out-dir)
  std::optional<double> budget_gib;         ///< GiB; unset: free memory less the reserve (required without a GPU)
  std::optional<double> reserve_gib;
  std::optional<int> layers, heads_qk, heads_v, head_dim_k, head_dim_v;
  std::optional<std::string> buffer_sizes;  ///< "1,2,4,8,16"
  std::optional<std::string> draft_tokens;  ///< "1,2,4,8"
  std::optional<std::string> state_dtypes;  ///< "fp32,bf16": element types of the stored states, one block of rows each
  bool force = false;                       ///< replace an existing out (otherwise it is refused)
  bool no_probe = false;                    ///< model only, even on a GPU
  bool conv_state = false;                  ///< count the short-convolution state in the per-request bytes
  int device = 0;
};

/// Registers the `capacity` subcommand and its options on `app`, writing into `options`; returns the subcommand.
CLI::App* add_capacity_command(CLI::App& app, CapacityCommandOptions& options);

/// Every check run_capacity_command makes before it starts (settings, config, output, budget, device), nothing
/// written: the UsageError it would throw.
void check_capacity_command(const CapacityCommandOptions& options);

/// Tabulates the capacity of every case (harness/kinds/capacity_config.h capacity_cases) for the budget, proves each on
/// the GPU unless there is none or no_probe is set, prints the table and the claim check, and writes the CSV
/// atomically. Exit 0 when every row is ok, model only or "kernel not available[: reason]"; 1 when a probe disagreed
/// with the model or failed. UsageError (exit 2, nothing written): a bad flag or config field, no GPU and no
/// --budget-gib, a budget above the free memory, an output that exists without force or is the --config.
int run_capacity_command(const CapacityCommandOptions& options);

/// `kvb reproduce` options.
struct ReproduceOptions {
  bool quick = false;              ///< reduced grids (docs/CLI.md, "kvb reproduce", lists them)
  std::string out_dir = "results"; ///< where the CSVs (and figures/) go
  bool no_plots = false;           ///< skip plots/make_all.py
  bool force = false;              ///< replace the capacity CSV and figures already in out_dir
  int device = 0;                  ///< CUDA device for the sweeps and the capacity probe
};

/// Regenerates the paper's figures. With a GPU: kvb sweep of experiments/decode_latency.toml, spec_verify.toml,
/// short_context.toml and buffer_form.toml, then kvb capacity --config experiments/capacity.toml, each into out_dir
/// (quick: narrowed grids), then plots/make_all.py on out_dir into out_dir/figures. Without a GPU: the float64
/// reference's golden checks, the capacity model at a 135 GiB budget into out_dir/capacity_model.csv, the figures from
/// the committed results/ CSVs (make_all skips those whose CSV is absent), and a "skipped: ..." line per GPU step.
/// Then prints the claims table (harness/reports/claims.h) from the CSVs of this run (GPU) or the committed ones.
/// Runs from the repository root. Before the first step every input is checked (the sweeps' configs and the CSVs they
/// resume, the committed CSVs the figures and claims read, the capacity settings) and every output: the capacity CSV
/// and the figures already there need force (the sweeps' CSVs are resumed). A SIGINT or SIGTERM stops it between
/// steps (a sweep between points): it lists what finished and what did not and returns 128 + the signal. Exit 0 when
/// every step passed, 1 when one failed, 2 for bad input (UsageError before any step, or a step's bad input, after
/// which nothing runs).
int run_reproduce_command(const ReproduceOptions& options);

}  // namespace kvb::cli
