// `kvb reproduce`: runs the experiments the paper's figures need (on a GPU), or what needs none (the float64
// reference's golden checks and the capacity model), then the figures (plots/make_all.py) and the claims table
// (harness/reports/claims.h). Must run from the repository root (it reads experiments/, tests/data/golden/, plots/).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/measure/device_info.h"
#include "harness/reports/claims.h"
#include "harness/sweep/experiment_kind.h"

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

/// `s` in single quotes for /bin/sh.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (const char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

/// Exit status of a shell command (-1 when it did not exit normally).
int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

void step(const std::string& what) { fmt::print("\n== {}\n", what); std::fflush(stdout); }

/// Records a step's exit code; a non-zero one marks the run failed.
void record(const std::string& what, int code, std::vector<std::string>& failures) {
  if (code != 0) failures.push_back(fmt::format("{} (exit {})", what, code));
}

/// Runs plots/make_all.py on results_dir into figures_dir; returns its exit status, or 0 after printing a skip line
/// when python3 cannot import matplotlib.
int run_plots(const std::string& results_dir, const std::string& figures_dir, std::vector<std::string>& skipped) {
  if (shell("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) {
    skipped.push_back("figures (python3 cannot import matplotlib: python3 -m pip install -r plots/requirements.txt)");
    return 0;
  }
  step(fmt::format("python3 {} --results-dir {} --out-dir {}", kMakeAll, results_dir, figures_dir));
  return shell(fmt::format("python3 {} --results-dir {} --out-dir {}", kMakeAll, sh_quote(results_dir),
                           sh_quote(figures_dir)));
}

}  // namespace

int run_reproduce_command(const ReproduceOptions& o) {
  for (const char* needed :
       {kDecodeConfig, kSpecConfig, kShortContextConfig, kBufferFormConfig, kCapacityConfig, kGoldenDir, kMakeAll})
    if (!fs::exists(needed))
      throw UsageError(fmt::format("kvb reproduce runs from the repository root: {} not found here", needed));
  if (o.out_dir.empty()) throw UsageError("--out-dir '': allowed: a folder path");
  if (fs::exists(o.out_dir) && !fs::is_directory(o.out_dir))
    throw UsageError(fmt::format("--out-dir {}: exists and is not a folder", o.out_dir));
  const bool gpu = cuda_device_present();
  if (gpu && (o.device < 0 || o.device >= cuda_device_count()))
    throw UsageError(fmt::format("--device {}: there are {} CUDA devices (allowed: 0..{})", o.device,
                                 cuda_device_count(), cuda_device_count() - 1));
  {
    std::error_code mk;
    fs::create_directories(o.out_dir, mk);
    if (mk) throw UsageError(fmt::format("--out-dir {}: cannot create it: {}", o.out_dir, mk.message()));
    if (::access(o.out_dir.c_str(), W_OK | X_OK) != 0)
      throw UsageError(fmt::format("--out-dir {}: the folder is not writable", o.out_dir));
  }
  const fs::path out(o.out_dir);
  std::error_code ec;
  const bool out_is_results = fs::equivalent(out, "results", ec);

  std::vector<std::string> failures, skipped;
  std::string decode_csv, capacity_csv, short_context_csv, spec_verify_csv;
  if (gpu) {
    SweepCommandOptions decode;
    decode.config = kDecodeConfig;
    decode.out = (out / "decode_latency.csv").string();
    decode.device = o.device;
    decode.device_given = true;
    SweepCommandOptions spec = decode;
    spec.config = kSpecConfig;
    spec.out = (out / "spec_verify.csv").string();
    SweepCommandOptions short_context = decode;
    short_context.config = kShortContextConfig;
    short_context.out = (out / "short_context.csv").string();
    SweepCommandOptions buffer_form = decode;
    buffer_form.config = kBufferFormConfig;
    buffer_form.out = (out / "buffer_form.csv").string();
    if (o.quick) {
      decode.sets = {"batch=64,256", "buffer_size=4,8,16"};
      spec.sets = {"batch=64", "draft_tokens=1,4", "accepted=0.7", "buffer_size=8"};
      short_context.sets = {"batch=64", "buffer_size=16", "context_len=1,4,8,16,64"};
      buffer_form.sets = {"batch=64,256", "buffer_size=4,16"};
      decode.max_seconds = spec.max_seconds = short_context.max_seconds = buffer_form.max_seconds = 1.0;
    }
    const std::pair<const char*, const SweepCommandOptions*> sweeps[] = {{"decode sweep", &decode},
                                                                         {"spec_verify sweep", &spec},
                                                                         {"short_context sweep", &short_context},
                                                                         {"buffer_form sweep", &buffer_form}};
    for (const auto& [what, sweep] : sweeps) {
      step(fmt::format("kvb sweep --config {} --out {}", sweep->config, sweep->out));
      record(what, run_sweep_command(*sweep), failures);
    }

    CapacityCommandOptions cap;
    cap.config = kCapacityConfig;
    cap.out = (out / "capacity.csv").string();
    cap.device = o.device;
    if (o.quick) {
      cap.buffer_sizes = "4,8";
      cap.draft_tokens = "4";
    }
    step(fmt::format("kvb capacity --config {} --out {}", cap.config, cap.out));
    record("capacity", run_capacity_command(cap), failures);
    decode_csv = decode.out;
    capacity_csv = cap.out;
    short_context_csv = short_context.out;
    spec_verify_csv = spec.out;
    if (!o.no_plots) record("figures", run_plots(out.string(), (out / "figures").string(), skipped), failures);
  } else {
    CheckGoldenOptions golden;
    for (const auto& e : fs::directory_iterator(kGoldenDir))
      if (e.path().extension() == ".gdn") golden.files.push_back(e.path().string());
    std::sort(golden.files.begin(), golden.files.end());
    step(fmt::format("kvb check-golden {}/*.gdn (float64 reference)", kGoldenDir));
    record("check-golden", run_check_golden(golden), failures);

    CapacityCommandOptions cap;
    cap.config = kCapacityConfig;
    cap.out = (out / "capacity_model.csv").string();
    cap.budget_gib = kModelBudgetGib;
    cap.no_probe = true;
    step(fmt::format("kvb capacity --config {} --budget-gib {:g} --out {} (model only)", cap.config,
                     kModelBudgetGib, cap.out));
    record("capacity model", run_capacity_command(cap), failures);

    if (!o.no_plots)
      record("figures",
             run_plots("results", out_is_results ? "results/figures" : (out / "figures").string(), skipped),
             failures);
    skipped.insert(skipped.begin(),
                   {fmt::format("kvb sweep --config {} (needs a CUDA device; its peer variants too)", kDecodeConfig),
                    fmt::format("kvb sweep --config {} (needs a CUDA device)", kSpecConfig),
                    fmt::format("kvb sweep --config {} (needs a CUDA device)", kShortContextConfig),
                    fmt::format("kvb sweep --config {} (needs a CUDA device)", kBufferFormConfig),
                    fmt::format("kvb capacity allocation proof (needs a CUDA device; {} is the model only)", cap.out),
                    "GPU kernel golden checks (needs a CUDA device; the float64 reference was checked)"});
    decode_csv = "results/decode_latency.csv";
    capacity_csv = "results/capacity.csv";
    short_context_csv = "results/short_context.csv";
    spec_verify_csv = "results/spec_verify.csv";
  }
  if (o.no_plots) skipped.push_back("figures (--no-plots)");

  step(gpu ? "claims (this run's CSVs)" : "claims (committed CSVs in results/; no GPU run)");
  fmt::print("{}", claims::format_claims(
                       claims::compute_claims(decode_csv, capacity_csv, short_context_csv, spec_verify_csv)));
  if (!skipped.empty()) fmt::print("\n");
  for (const auto& s : skipped) fmt::print("skipped: {}\n", s);
  for (const auto& f : failures) fmt::print(stderr, "failed: {}\n", f);
  return failures.empty() ? 0 : 1;
}

}  // namespace kvb::cli
