// `kvb`: the command line of kvbuffer-bench. Subcommands info, check-golden, sweep, merge, compare, capacity,
// reproduce (harness/cli/commands.h).
// Exit codes: 0 success, 1 a check or sweep point failed (or a runtime error, or standard output could not be
// written), 2 bad input, 130 / 143 stopped by SIGINT / SIGTERM (harness/sweep/interrupt.h).
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <system_error>

#include <fmt/format.h>

#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/cli/stdout_flush.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/interrupt.h"
#include "harness/sweep/shard.h"
#include "core/cuda_check.h"

int main(int argc, char** argv) {
  using namespace kvb::cli;
  CLI::App app{"kvb: measures Gated DeltaNet decode kernels, recurrent and KVBuffer"};
  app.require_subcommand(1);

  InfoOptions info;
  CLI::App* info_cmd = app.add_subcommand("info", "GPU, driver and CUDA versions; measured copy and read bandwidth");
  info_cmd->add_option("--device", info.device, "CUDA device whose bandwidth is measured")
      ->check(integer_in(0, kvb::kMaxDeviceIndex));
  info_cmd->add_option("--buffer-mib", info.buffer_mib, "size of each bandwidth buffer in MiB (>= 64)")
      ->check(number_in(64.0, 1.0e7, "MiB"));
  info_cmd->add_flag("--gpu-present", info.gpu_present_only,
                     "print nothing; exit 0 when a CUDA device is present, 1 otherwise");

  CheckGoldenOptions golden;
  CLI::App* golden_cmd = app.add_subcommand(
      "check-golden", "check the float64 reference (and the kernels when a GPU is present) against gdn-case files");
  golden_cmd->add_option("files", golden.files, "gdn-case v1 files (tests/data/golden/*.gdn)")->required();

  SweepCommandOptions sweep;
  int min_samples = 0;
  double max_seconds = 0;
  CLI::App* sweep_cmd = app.add_subcommand("sweep", "run the Cartesian product of a config's axes; one CSV row each");
  sweep_cmd->add_option("--config", sweep.config, "sweep config, experiments/NAME.toml")
      ->required()
      ->check(non_empty("a TOML file such as experiments/decode_latency.toml"));
  sweep_cmd->add_option("--out", sweep.out,
                        "result CSV (default the config's experiment.out, else results/<experiment name>.csv; "
                        "resumed when it exists)")
      ->check(non_empty("a file path such as results/NAME.csv"));
  // One value an occurrence, so that a file name after it is not taken as a second override.
  sweep_cmd->add_option("--set", sweep.sets, "override an axis: AXIS=V1,V2,... (repeatable)")
      ->allow_extra_args(false);
  sweep_cmd->add_flag("--dry-run", sweep.dry_run, "print the points and exit (works without a GPU)");
  sweep_cmd->add_option("--l2", sweep.l2, "L2 state between samples: cold (flushed) or hot")
      ->check(CLI::IsMember({"cold", "hot"}));
  sweep_cmd->add_flag("--no-cupti", sweep.no_cupti, "skip the CUPTI DRAM byte counts");
  CLI::Option* min_opt = sweep_cmd->add_option("--min-samples", min_samples, "fewest timed samples per point")
                             ->check(integer_in(1, 1000000));
  CLI::Option* max_opt = sweep_cmd->add_option("--max-seconds", max_seconds, "time budget per point, seconds (> 0)")
                             ->check(number_in(0.0, 1.0e6, "seconds", true));
  CLI::Option* device_opt =
      sweep_cmd->add_option("--device", sweep.device, "CUDA device index")->check(integer_in(0, kvb::kMaxDeviceIndex));
  sweep_cmd->add_option("--shard", sweep.shard,
                        "run grid points i with i % N == I (I/N, 0 <= I < N); default output "
                        "results/<name>.shardI-of-N.csv (or experiment.out's stem)")
      ->check(non_empty("I/N with 0 <= I < N"));
  sweep_cmd->add_option("--devices", sweep.devices,
                        "one worker process per GPU (0,1,... or all), rows merged into --out")
      ->check(non_empty("all, or distinct device indices in 0..1023, comma-separated"));

  MergeCommandOptions merge;
  CLI::App* merge_cmd = app.add_subcommand("merge", "join shard CSVs of one experiment into one CSV");
  merge_cmd->add_option("out", merge.out, "merged CSV (written atomically)")->required();
  merge_cmd->add_option("inputs", merge.inputs, "shard CSVs")->required();
  merge_cmd->add_option("--config", merge.config, "order rows as in this config's full grid; check its experiment")
      ->check(non_empty("a TOML file such as experiments/decode_latency.toml"));
  merge_cmd->add_option("--set", merge.sets, "axis override of that grid: AXIS=V1,V2,... (repeatable)")
      ->allow_extra_args(false);
  merge_cmd->add_flag("--force", merge.force, "replace OUT when it exists");

  CompareCommandOptions compare;
  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "per-point latency of a candidate CSV against a baseline; exit 1 when a point got slower");
  compare_cmd->add_option("baseline", compare.baseline, "baseline result CSV")->required();
  compare_cmd->add_option("candidate", compare.candidate, "candidate result CSV")->required();
  compare_cmd->add_option("--threshold", compare.threshold_pct,
                          "smallest median change that counts, percent (default 5)")
      ->check(number_in(0.0, 1000.0, "percent"));
  compare_cmd->add_flag("--markdown", compare.markdown, "GitHub Markdown table (for a pull-request comment)");
  compare_cmd->add_option("--metric", compare.metric,
                          "latency columns to compare: latency_us (decode, default), verify_us or verify_accept_us "
                          "(spec_verify, default verify_accept_us)")
      ->check(CLI::IsMember({"latency_us", "verify_us", "verify_accept_us"}));
  compare_cmd->add_flag("--allow-different-gpu", compare.allow_different_gpu,
                        "compare even when the two files ran on different GPUs");

  CapacityCommandOptions capacity;
  CLI::App* capacity_cmd = add_capacity_command(app, capacity);

  ReproduceOptions reproduce;
  CLI::App* reproduce_cmd = app.add_subcommand(
      "reproduce", "run the experiments the paper's figures need (or, without a GPU, what needs none), the figures "
                   "and the claims table");
  reproduce_cmd->add_flag("--quick", reproduce.quick, "reduced grids (fewer batches, buffer sizes and lengths; under a minute on one H200)");
  reproduce_cmd->add_option("--out-dir", reproduce.out_dir, "folder of the CSVs and figures/ (default results)")
      ->check(non_empty("a folder path"));
  reproduce_cmd->add_flag("--no-plots", reproduce.no_plots, "do not run plots/make_all.py");
  reproduce_cmd->add_flag("--force", reproduce.force,
                          "replace the capacity CSV and figures already in --out-dir (its sweep CSVs are resumed)");
  reproduce_cmd->add_option("--device", reproduce.device, "CUDA device index")
      ->check(integer_in(0, kvb::kMaxDeviceIndex));

  if (argc > 1 && argv[1][0] != '-') {  // a word that names no subcommand: say which ones exist
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->get_name() == argv[1];
    }
    if (!found) {
      fmt::print(stderr, "{}\n", one_line(fmt::format("kvb: unknown subcommand '{}' (allowed: {})", argv[1], known)));
      return 2;
    }
  }
  // What a command printed must reach its reader: a full disk or a closed file behind standard output is a failed
  // write (exit 1, the command's own failure code kept), not a success that lost its output.
  const auto stdout_written = [](int code) {
    kvb::cli::flush_stdout();
    if (!std::ferror(stdout)) return code;
    const int reason = kvb::cli::stdout_flush_errno();  // this flush's, or an earlier one's in the command
    fmt::print(stderr, "kvb: standard output: {}\n", reason != 0 ? std::strerror(reason) : "a write failed");
    return code == 0 ? 1 : code;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return stdout_written(app.exit(e));  // --help
    // An unknown option first: CLI11 reports a missing required one before it.
    if (const std::string unknown = unknown_option(app, argc, argv); !unknown.empty()) {
      fmt::print(stderr, "{}\n", one_line(unknown));
      return 2;
    }
    // A second override given to one --set: CLI11 calls the word not expected.
    if (const std::string stray = stray_override(app, argc, argv); !stray.empty()) {
      fmt::print(stderr, "kvb: {}\n", one_line(stray));
      return 2;
    }
    if (const std::string message = parse_error_message(app, e); !message.empty()) {
      fmt::print(stderr, "{}\n", one_line(message));
      return 2;
    }
    // Point at the help of the subcommand being parsed (the last one given), else the top level's.
    std::string help = "kvb --help";
    for (const CLI::App* sub : app.get_subcommands()) help = "kvb " + sub->get_name() + " --help";
    fmt::print(stderr, "kvb: {} (see {})\n", one_line(e.what()), help);
    return 2;
  }
  if (min_opt->count()) sweep.min_samples = min_samples;
  if (max_opt->count()) sweep.max_seconds = max_seconds;
  sweep.device_given = device_opt->count() > 0;

  // A sweep and reproduce stop between their steps (what is finished stays whole, a rerun resumes); every other
  // command stops at once, removing its temporary files.
  const bool stepwise = sweep_cmd->parsed() || reproduce_cmd->parsed();
  const kvb::InterruptHandlers interrupts(stepwise ? kvb::InterruptMode::between_steps : kvb::InterruptMode::immediate);
  const auto dispatch = [&] {
    if (info_cmd->parsed()) return run_info(info);
    if (golden_cmd->parsed()) return run_check_golden(golden);
    if (sweep_cmd->parsed()) return run_sweep_command(sweep);
    if (merge_cmd->parsed()) return run_merge_command(merge);
    if (compare_cmd->parsed()) return run_compare_command(compare);
    if (capacity_cmd->parsed()) return run_capacity_command(capacity);
    if (reproduce_cmd->parsed()) return run_reproduce_command(reproduce);
    return 2;
  };
  try {
    const int code = stdout_written(dispatch());
    return kvb::interrupt_signal() ? kvb::interrupt_exit_code() : code;
  } catch (const kvb::UsageError& e) {
    fmt::print(stderr, "kvb: {}\n", one_line(e.what()));
    return 2;
  } catch (const kvb::CudaError& e) {
    fmt::print(stderr, "kvb: CUDA error: {}\n", one_line(e.what()));
    return 1;
  } catch (const std::system_error& e) {
    // fmt::print throws when its write fails (a full disk behind standard output): said of standard output as such.
    if (std::ferror(stdout)) {
      fmt::print(stderr, "kvb: standard output: {}\n", e.code().message());
      return 1;
    }
    fmt::print(stderr, "kvb: error: {}\n", one_line(e.what()));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kvb: error: {}\n", one_line(e.what()));
    return 1;
  }
}
