// `kvb capacity`: the largest number of concurrent requests a memory budget holds for recurrent and KVBuffer decode
// and verification, modelled (harness/kinds/capacity_model.h) and, on a GPU, proved by allocation
// (harness/kinds/capacity_probe.h). Writes results/capacity.csv (commands.h).
#include <CLI/CLI.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/kinds/capacity_config.h"
#include "harness/kinds/capacity_model.h"
#include "harness/kinds/capacity_probe.h"
#include "harness/kinds/capacity_table.h"
#include "harness/cli/cli_checks.h"
#include "harness/cli/commands.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/shard.h"

namespace kvb::cli {
namespace {

constexpr double kGiB = double(int64_t(1) << 30);

bool row_passed(const std::string& status) {
  return status == "ok" || status == capacity::kStatusNoGpu || status == capacity::kStatusNoProbe ||
         status.rfind(capacity::kStatusNoKernel, 0) == 0;
}

/// The settings: defaults, then the config, then the flags given. Throws UsageError naming the flag or field.
capacity::CapacitySettings resolve_settings(const CapacityCommandOptions& o) {
  capacity::CapacitySettings s;
  if (!o.config.empty()) capacity::load_capacity_config(o.config, s);
  if (o.budget_gib) s.budget_gib = *o.budget_gib;
  if (o.reserve_gib) s.reserve_gib = *o.reserve_gib;
  if (o.layers) s.model.layers = *o.layers;
  if (o.heads_qk) s.model.shape.heads_qk = *o.heads_qk;
  if (o.heads_v) s.model.shape.heads_v = *o.heads_v;
  if (o.head_dim_k) s.model.shape.head_dim_k = *o.head_dim_k;
  if (o.head_dim_v) s.model.shape.head_dim_v = *o.head_dim_v;
  if (o.conv_state) s.model.conv_state = true;
  if (o.buffer_sizes)
    s.buffer_sizes = capacity::parse_int_list(*o.buffer_sizes, "--buffer-sizes", 1, capacity::kMaxBufferEntries);
  if (o.draft_tokens)
    s.draft_tokens = capacity::parse_int_list(*o.draft_tokens, "--draft-tokens", 1, capacity::kMaxDrafts);
  if (o.state_dtypes) s.state_dtypes = capacity::parse_state_dtype_list(*o.state_dtypes, "--state-dtypes");
  capacity::validate_settings(s);
  return s;
}

}  // namespace

CLI::App* add_capacity_command(CLI::App& app, CapacityCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "capacity", "largest number of concurrent requests a memory budget holds, recurrent and KVBuffer, decode and "
                  "m-draft verification; proved by allocation on a GPU");
  // An empty value is refused rather than read as 0 or as "not given" (an empty --out would write the default file
  // under results/).
  cmd->add_option_function<double>("--budget-gib", [&o](const double& v) { o.budget_gib = v; },
                                   "memory budget in GiB (default: the GPU's free memory less --reserve-gib; "
                                   "required without a GPU)")
      ->check(number_in(0.0, 1.0e6, "GiB", true));
  cmd->add_option_function<double>("--reserve-gib", [&o](const double& v) { o.reserve_gib = v; },
                                   "GiB of free memory left out of the default budget (default 4)")
      ->check(number_in(0.0, 1.0e6, "GiB"));
  cmd->add_option_function<int>("--layers", [&o](const int& v) { o.layers = v; }, "GDN layers (default 36)")
      ->check(integer_in(1, 10000));
  cmd->add_option_function<int>("--heads-qk", [&o](const int& v) { o.heads_qk = v; }, "key heads H (default 16)")
      ->check(integer_in(1, 256));
  cmd->add_option_function<int>("--heads-v", [&o](const int& v) { o.heads_v = v; }, "value heads HV (default 32)")
      ->check(integer_in(1, 256));
  cmd->add_option_function<int>("--head-dim-k", [&o](const int& v) { o.head_dim_k = v; },
                                "K: 32, 64, 128 or 256 (default 128)")
      ->check(integer_in(32, 256));
  cmd->add_option_function<int>("--head-dim-v", [&o](const int& v) { o.head_dim_v = v; },
                                "V: a multiple of 4 from 4 to 1024 (default 128)")
      ->check(integer_in(4, 1024));
  cmd->add_option_function<std::string>("--buffer-sizes", [&o](const std::string& v) { o.buffer_sizes = v; },
                                        "KVBuffer sizes B, comma-separated (default 1,2,4,8,16)");
  cmd->add_option_function<std::string>("--draft-tokens", [&o](const std::string& v) { o.draft_tokens = v; },
                                        "draft tokens m, comma-separated, 1 to 8 (default 1,2,4,8)");
  cmd->add_option_function<std::string>("--state-dtypes", [&o](const std::string& v) { o.state_dtypes = v; },
                                        "element types of the stored states (recurrent states, intermediate states, "
                                        "checkpoints), comma-separated: fp32, bf16 (default fp32,bf16)");
  cmd->add_option("--config", o.config, "capacity config, experiments/capacity.toml (flags override it)")
      ->check(non_empty("a TOML file such as experiments/capacity.toml"));
  cmd->add_option("--out", o.out,
                  "result CSV (default results/capacity.csv with the allocation proof, results/capacity_model.csv "
                  "for a model-only run; written atomically; an existing file needs --force)")
      ->check(non_empty("a file path"));
  cmd->add_flag("--force", o.force, "replace --out when it exists");
  cmd->add_flag("--no-probe", o.no_probe, "model only, even on a GPU");
  cmd->add_flag_function("--conv-state", [&o](int64_t) { o.conv_state = true; },
                         "count the short-convolution state in the per-request bytes (default: own column only)");
  cmd->add_option("--device", o.device, "CUDA device index")->check(integer_in(0, kMaxDeviceIndex));
  return cmd;
}

namespace {

/// A capacity run with every check done and nothing written.
struct CapacityRun {
  capacity::CapacitySettings settings;
  bool gpu = false, probe = false;
  std::string out;
};

CapacityRun prepare_capacity(const CapacityCommandOptions& o) {
  CapacityRun r;
  r.settings = resolve_settings(o);
  r.gpu = cuda_device_present();
  r.probe = r.gpu && !o.no_probe;
  r.out = !o.out.empty() ? o.out
          : r.probe      ? std::string("results/capacity.csv")
                         : std::string("results/capacity_model.csv");
  check_outputs({{r.out, o.out_flag, o.force ? Existing::replace : Existing::refuse}}, {{o.config, "--config"}});
  if (!r.gpu && !r.settings.budget_gib)
    throw UsageError("--budget-gib is required without a CUDA device (a number of GiB > 0; there is no free memory "
                     "to read)");
  if (r.gpu && o.device >= cuda_device_count())
    throw UsageError(fmt::format("--device {}: there are {} CUDA devices (allowed: 0..{})", o.device,
                                 cuda_device_count(), cuda_device_count() - 1));
  return r;
}

}  // namespace

void check_capacity_command(const CapacityCommandOptions& o) { prepare_capacity(o); }

int run_capacity_command(const CapacityCommandOptions& o) {
  const CapacityRun run = prepare_capacity(o);
  const capacity::CapacitySettings& s = run.settings;
  const bool gpu = run.gpu, probe = run.probe;
  const std::string& out = run.out;
  const bool use_device = probe || !s.budget_gib;

  std::vector<capacity::CapacityRow> rows;
  for (const capacity::CapacityCase& c : capacity::capacity_cases(s)) {
    capacity::CapacityRow row;
    row.plan = capacity::make_plan(c, s.model);
    rows.push_back(std::move(row));
  }

  std::string gpu_name;
  std::optional<capacity::BudgetBlocker> blocker;
  int64_t budget = s.budget_gib ? int64_t(std::llround(*s.budget_gib * kGiB)) : 0;
  std::string budget_note = s.budget_gib ? fmt::format("{:.3f} GiB (--budget-gib)", *s.budget_gib) : "";
  if (use_device) {
    KVB_CUDA_CHECK(cudaSetDevice(o.device));
    gpu_name = query_device_info(o.device).name;
    if (probe) {
      std::vector<capacity::CapacityPlan> plans;
      for (const auto& r : rows) plans.push_back(r.plan);
      // The budget the probes will hold (without --budget-gib: the free memory less the reserve, read again after
      // the warm-up, which loads kernels and so takes a few MiB).
      const int64_t probe_budget =
          s.budget_gib ? budget : capacity::device_free_bytes() - int64_t(std::llround(s.reserve_gib * kGiB));
      capacity::warm_up(plans, 1, probe_budget);
    }
    if (!s.budget_gib) {
      const int64_t free_now = capacity::device_free_bytes();
      budget = free_now - int64_t(std::llround(s.reserve_gib * kGiB));
      if (budget <= 0)
        throw UsageError(fmt::format("--reserve-gib {}: the device has only {:.3f} GiB free (allowed: less than that)",
                                     s.reserve_gib, double(free_now) / kGiB));
      budget_note = fmt::format("{:.3f} GiB (free memory less {} GiB reserve)", double(budget) / kGiB, s.reserve_gib);
    }
    if (probe) {
      blocker.emplace(budget);
      budget = blocker->budget_bytes();
      budget_note += fmt::format(", held by a blocker: {} bytes free", budget);
    }
  }

  bool all_passed = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    capacity::CapacityRow& row = rows[i];
    row.budget_bytes = budget;
    row.max_requests_model = capacity::max_requests(row.plan, budget);
    if (!probe) {
      row.status = gpu ? capacity::kStatusNoProbe : capacity::kStatusNoGpu;
      continue;
    }
    fmt::print(stderr, "probe {}/{}: {} B={} m={} {}: {} requests\n", i + 1, rows.size(),
               capacity::to_string(row.plan.c.variant), row.plan.c.buffer_size, row.plan.c.draft_tokens,
               to_string(row.plan.c.state_dtype), row.max_requests_model);
    try {
      const capacity::ProbeResult r =
          capacity::probe_capacity(row.plan, budget, row.max_requests_model, 1000 + uint64_t(i));
      row.max_requests_measured = r.measured;
      row.status = r.status;
    } catch (const std::exception& e) {
      row.status = fmt::format("failed: {}", e.what());
    }
    all_passed = all_passed && row_passed(row.status);
  }
  blocker.reset();
  capacity::fill_ratios(rows);

  // The CSV first: what the probe measured is kept whatever becomes of the printed table (a full disk behind stdout).
  write_file_atomic(out, capacity::format_capacity_csv(rows, gpu_name, utc_timestamp()));
  const capacity::ModelShape& m = s.model;
  fmt::print("Serving capacity: {} GDN layers, H = {}, HV = {}, K = {}, V = {}; budget {}; conv state {}\n", m.layers,
             m.shape.heads_qk, m.shape.heads_v, m.shape.head_dim_k, m.shape.head_dim_v, budget_note,
             m.conv_state ? "counted" : "not counted (own column)");
  fmt::print("{}", capacity::format_capacity_table(rows));
  for (const StateDtype d : s.state_dtypes) fmt::print("{}\n", capacity::claim_check_line(rows, d));
  fmt::print("{}\n", capacity::target_check_line(rows));
  if (!probe) fmt::print("model only ({}): no allocation was made\n", gpu ? "--no-probe" : "no GPU");
  fmt::print("wrote {} ({} rows)\n", out, rows.size());
  return all_passed ? 0 : 1;
}

}  // namespace kvb::cli
