// `kvb reproduce`: runs the experiments the paper's figures need (on a GPU), or what needs none (the float64
// reference's golden checks and the capacity model), then the figures (plots/make_all.py) and the claims table
// (harness/reports/claims.h). Must run from the repository root (it reads experiments/, tests/data/golden/, plots/).
// Every input is checked and every output cleared before the first step; SIGINT and SIGTERM stop it between steps.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/commands.h"
#include "harness/cli/stdout_flush.h"
#include "harness/cli/sweep_setup.h"
#include "harness/kinds/registry.h"
#include "harness/measure/device_info.h"
#include "harness/reports/claims.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/interrupt.h"
#include "harness/sweep/output_file.h"
#include "harness/sweep/result_csv.h"
#include "harness/sweep/workers.h"
#include "reference/golden_case.h"

namespace kvb::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDecodeConfig = "experiments/decode_latency.toml";
constexpr const char* kSpecConfig = "experiments/spec_verify.toml";
constexpr const char* kShortContextConfig = "experiments/short_context.toml";
constexpr const char* kBufferFormConfig = "experiments/buffer_form.toml";
constexpr const char* kCapacityConfig = "experiments/capacity.toml";
constexpr const char* kGoldenDir = "tests/data/golden";
constexpr const char* kMakeAll = "plots/make_all.py";
constexpr double kModelBudgetGib = 135.0;  ///< model-only capacity budget without a GPU (the H200 run's 135.3 GiB)
/// The CSVs of a results folder that the figures (plots/make_all.py, its state-dtype figures included) and the claims
/// read: each is validated before anything is written.
constexpr const char* kFigureCsvs[] = {"decode_latency.csv", "spec_verify.csv", "short_context.csv", "buffer_form.csv",
                                       "capacity.csv", "accuracy.csv", "decode_state_dtype.csv",
                                       "spec_verify_state_dtype.csv"};

/// UsageError, naming --out-dir, unless `dir` is a folder or a path where one can be made: not empty, no name or path
/// over the file system's limits, and nothing on the way that exists and is not a folder.
void check_out_dir(const std::string& dir) {
  if (dir.empty()) throw UsageError("--out-dir '': allowed: a folder path");
  fs::path p(dir);
  for (;;) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw UsageError(fmt::format("--out-dir {:.60}{}: {} (allowed: a folder path)", dir,
                                   dir.size() > 60 ? "..." : "", ec.message()));
    if (fs::exists(st)) {
      if (!fs::is_directory(st))
        throw UsageError(fmt::format("--out-dir {}: {} exists and is not a folder (allowed: a folder path)", dir,
                                     p.string()));
      return;
    }
    if (!p.has_parent_path() || p.parent_path() == p) return;
    p = p.parent_path();
  }
}

/// One step of the run: what it is (for the progress and the final lines) and how it runs (its exit code).
struct Step {
  std::string what;
  std::function<int()> run;
};

void heading(const std::string& what) {
  fmt::print("\n== {}\n", what);
  flush_stdout();
}

/// Exit code of `argv` (argv[0] looked up on PATH), its output copied to `out` (nullptr: dropped); -1 when it
/// cannot be started.
int run_program(const std::vector<std::string>& argv, std::FILE* out) {
  try {
    return run_workers({{argv, "", true}}, out).at(0);
  } catch (const std::exception&) {
    return -1;
  }
}

/// The figures step: plots/make_all.py on results_dir into figures_dir; its exit status, or 0 after adding a skip
/// line when python3 cannot import matplotlib (a signal that stops that check gives the interrupt's exit status).
int run_plots(const std::string& results_dir, const std::string& figures_dir, std::vector<std::string>& skipped) {
  if (run_program({"python3", "-c", "import matplotlib"}, nullptr) != 0) {
    if (interrupt_signal()) return interrupt_exit_code();  // the check was stopped, not refused
    skipped.push_back("figures (python3 cannot import matplotlib: python3 -m pip install -r plots/requirements.txt)");
    return 0;
  }
  return run_program({"python3", kMakeAll, "--results-dir", results_dir, "--out-dir", figures_dir}, stdout);
}

/// UsageError unless `figures_dir` is a folder the figures may be drawn into: writable, and holding no figure
/// (PNG or PDF) unless `force`.
void check_figures_folder(const fs::path& figures_dir, bool force) {
  check_outputs({{(figures_dir / "decode_latency.png").string(), "--out-dir", Existing::replace}});
  std::error_code ec;
  if (force || !fs::is_directory(figures_dir, ec)) return;
  std::vector<std::string> figures;
  for (const auto& e : fs::directory_iterator(figures_dir, ec))
    if (e.path().extension() == ".png" || e.path().extension() == ".pdf") figures.push_back(e.path().filename());
  std::sort(figures.begin(), figures.end());
  if (!figures.empty())
    throw UsageError(fmt::format("--out-dir: {} holds {} figures ({}) that kvb reproduce would redraw (allowed: "
                                 "--force to replace them, --no-plots, or another --out-dir)",
                                 figures_dir.string(), figures.size(), fmt::join(figures, ", ")));
}

}  // namespace

int run_reproduce_command(const ReproduceOptions& o) {
  // 1. Every check before the first step: where it runs, the devices, the configs and CSVs it reads, the files it
  //    writes.
  for (const char* needed :
       {kDecodeConfig, kSpecConfig, kShortContextConfig, kBufferFormConfig, kCapacityConfig, kGoldenDir, kMakeAll})
    if (!fs::exists(needed))
      throw UsageError(fmt::format("kvb reproduce runs from the repository root: {} not found here", needed));
  check_out_dir(o.out_dir);
  const bool gpu = cuda_device_present();
  if (gpu && (o.device < 0 || o.device >= cuda_device_count()))
    throw UsageError(fmt::format("--device {}: there are {} CUDA devices (allowed: 0..{})", o.device,
                                 cuda_device_count(), cuda_device_count() - 1));
  const fs::path out(o.out_dir);
  std::error_code ec;
  const bool out_is_results = fs::equivalent(out, "results", ec);

  std::vector<Step> steps;
  std::vector<std::string> skipped;
  std::string claims_dir;  // the folder whose CSVs the claims read
  CapacityCommandOptions cap;
  cap.config = kCapacityConfig;
  cap.device = o.device;
  cap.force = o.force;
  std::string results_dir, figures_dir;
  if (gpu) {
    SweepCommandOptions decode;
    decode.config = kDecodeConfig;
    decode.out = (out / "decode_latency.csv").string();
    decode.device = o.device;
    decode.device_given = true;
    SweepCommandOptions spec = decode, short_context = decode, buffer_form = decode;
    spec.config = kSpecConfig;
    spec.out = (out / "spec_verify.csv").string();
    short_context.config = kShortContextConfig;
    short_context.out = (out / "short_context.csv").string();
    buffer_form.config = kBufferFormConfig;
    buffer_form.out = (out / "buffer_form.csv").string();
    if (o.quick) {
      decode.sets = {"batch=64,256", "buffer_size=4,8,16"};
      spec.sets = {"batch=64", "draft_tokens=1,4", "accepted=0.7", "buffer_size=8"};
      short_context.sets = {"batch=64", "buffer_size=16", "context_len=1,4,8,16,64"};
      buffer_form.sets = {"batch=64,256", "buffer_size=4,16"};
      decode.max_seconds = spec.max_seconds = short_context.max_seconds = buffer_form.max_seconds = 1.0;
      cap.buffer_sizes = "4,8";
      cap.draft_tokens = "4";
    }
    // Each sweep validated now (its config, grid and the CSV it resumes); it runs as a step later.
    for (const SweepCommandOptions& sweep : {decode, spec, short_context, buffer_form}) {
      const auto setup = std::make_shared<SweepSetup>(prepare_sweep(sweep));
      steps.push_back({fmt::format("kvb sweep --config {} --out {}", sweep.config, sweep.out),
                       [sweep, setup] { return run_prepared_sweep(sweep, *setup); }});
    }
    cap.out = (out / "capacity.csv").string();
    results_dir = out.string();
    figures_dir = (out / "figures").string();
    claims_dir = out.string();
  } else {
    CheckGoldenOptions golden;
    if (!fs::is_directory(kGoldenDir))
      throw UsageError(
          fmt::format("{}: not a folder (allowed: the repository's folder of gdn-case files)", kGoldenDir));
    for (const auto& e : fs::directory_iterator(kGoldenDir))
      if (e.path().extension() == ".gdn") golden.files.push_back(e.path().string());
    std::sort(golden.files.begin(), golden.files.end());
    if (golden.files.empty())  // nothing to check would pass as checked
      throw UsageError(fmt::format("{} holds no gdn-case files (allowed: the repository's {}/*.gdn, such as "
                                   "draft4.gdn)",
                                   kGoldenDir, kGoldenDir));
    // Each one readable as a file now, before the first step (check-golden asks again, file by file).
    for (const auto& file : golden.files)
      if (const std::string why = ref::golden_case_unreadable(file); !why.empty()) throw UsageError(why);
    steps.push_back({fmt::format("kvb check-golden {}/*.gdn (float64 reference)", kGoldenDir),
                     [golden] { return run_check_golden(golden); }});
    cap.out = (out / "capacity_model.csv").string();
    cap.budget_gib = kModelBudgetGib;
    cap.no_probe = true;
    // The figures and the claims read the committed CSVs: each validated before anything is drawn or written.
    for (const char* name : kFigureCsvs) {
      const fs::path csv = fs::path("results") / name;
      if (fs::exists(csv)) read_result_csv(csv.string(), result_schemas());
    }
    results_dir = "results";
    figures_dir = out_is_results ? "results/figures" : (out / "figures").string();
    claims_dir = "results";
    skipped = {fmt::format("kvb sweep --config {} (needs a CUDA device; its peer variants too)", kDecodeConfig),
               fmt::format("kvb sweep --config {} (needs a CUDA device)", kSpecConfig),
               fmt::format("kvb sweep --config {} (needs a CUDA device)", kShortContextConfig),
               fmt::format("kvb sweep --config {} (needs a CUDA device)", kBufferFormConfig),
               fmt::format("kvb capacity allocation proof (needs a CUDA device; {} is the model only)", cap.out),
               "GPU kernel golden checks (needs a CUDA device; the float64 reference was checked)"};
  }
  cap.out_flag = "--out-dir";  // reproduce names the capacity CSV's folder, not the file
  check_capacity_command(cap);
  steps.push_back({fmt::format("kvb capacity --config {}{} --out {}{}", cap.config,
                               cap.budget_gib ? fmt::format(" --budget-gib {:g}", *cap.budget_gib) : "", cap.out,
                               cap.no_probe ? " (model only)" : ""),
                   [cap] { return run_capacity_command(cap); }});
  if (o.no_plots) {
    skipped.push_back("figures (--no-plots)");
  } else {
    check_figures_folder(figures_dir, o.force);
    steps.push_back({fmt::format("python3 {} --results-dir {} --out-dir {}", kMakeAll, results_dir, figures_dir),
                     [results_dir, figures_dir, &skipped] { return run_plots(results_dir, figures_dir, skipped); }});
  }
  const fs::path claims_from(claims_dir);
  steps.push_back({gpu ? "claims (this run's CSVs)" : "claims (committed CSVs in results/; no GPU run)", [claims_from] {
                     fmt::print("{}", claims::format_claims(claims::compute_claims(
                                          (claims_from / "decode_latency.csv").string(),
                                          (claims_from / "capacity.csv").string(),
                                          (claims_from / "short_context.csv").string(),
                                          (claims_from / "spec_verify.csv").string(), result_schemas())));
                     return 0;
                   }});

  // 2. The steps, one after another; a signal stops the run between two of them.
  std::vector<std::string> finished, failures;
  size_t next = 0;
  bool part_way = false;  // the signal stopped the step `next` before its end
  for (; next < steps.size(); ++next) {
    if (next > 0) test_stop_point("step");
    if (interrupt_signal()) break;
    heading(steps[next].what);
    const int code = steps[next].run();
    if (code == 2) return 2;  // bad input a step found (a malformed golden case): nothing after it runs
    if (interrupt_signal() && code != 0) {
      part_way = true;
      break;
    }
    finished.push_back(steps[next].what);
    if (code != 0) failures.push_back(fmt::format("{} (exit {})", steps[next].what, code));
  }

  if (!skipped.empty()) fmt::print("\n");
  for (const auto& s : skipped) fmt::print("skipped: {}\n", s);
  for (const auto& f : failures) fmt::print(stderr, "failed: {}\n", f);
  if (next < steps.size()) {
    fmt::print("\nkvb reproduce: stopped by {} between steps\n", signal_name(interrupt_signal()));
    for (const auto& f : finished) fmt::print("finished: {}\n", f);
    if (part_way) fmt::print("stopped:  {} (what it finished is kept)\n", steps[next].what);
    for (size_t i = next + (part_way ? 1 : 0); i < steps.size(); ++i) fmt::print("not run:  {}\n", steps[i].what);
    fmt::print("run the same command again to resume: the sweeps resume their CSVs; files already made need --force\n");
    return interrupt_exit_code();
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace kvb::cli
