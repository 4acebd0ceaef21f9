// `kvb sweep`: validate everything, check for a GPU, measure the device, run the grid (commands.h).
#include <fmt/format.h>

#include "harness/cli/build_info.h"
#include "harness/cli/commands.h"
#include "harness/device/bandwidth.h"
#include "harness/device/device_info.h"
#include "harness/sweep/config.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/sweep.h"

namespace kvb::cli {

int run_sweep_command(const SweepCommandOptions& options) {
  // 1. Config, overrides, grid and output: every check before anything runs or is written.
  const SweepConfig config = load_sweep_config(options.config);
  const ExperimentKind* kind = nullptr;
  try {
    kind = &find_experiment_kind(config.kind);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: experiment.kind: {}", options.config, e.what()));
  }
  std::vector<AxisValues> overrides;
  for (const auto& s : options.sets) overrides.push_back(parse_axis_override(s));
  const auto axes = resolve_axes(*kind, config, overrides);
  const std::vector<Point> points = make_grid(*kind, axes);
  validate_points(*kind, points);
  if (points.empty()) throw UsageError(fmt::format("{}: the grid has no points", options.config));

  const std::string out = options.out.empty() ? "results/" + config.name + ".csv" : options.out;
  check_output_writable(out);
  const CsvTable existing = load_resume_table(*kind, out);

  if (options.dry_run) {
    const std::vector<bool> done = finished_points(*kind, config.name, points, existing);
    size_t n_done = 0;
    for (bool d : done) n_done += d;
    fmt::print("kvb sweep --dry-run: experiment {} (kind {}), {} points, {} already in {}\n", config.name,
               kind->name, points.size(), n_done, out);
    for (size_t i = 0; i < points.size(); ++i)
      fmt::print("[{}/{}] {}{}\n", i + 1, points.size(), points[i].label(), done[i] ? "  (done)" : "");
    return 0;
  }

  // 2. A GPU.
  const int count = cuda_device_count();
  if (count == 0) {
    fmt::print(stderr,
               "kvb sweep: no CUDA device found; the sweep needs a GPU (kvb info, kvb check-golden and --dry-run "
               "work without one)\n");
    return 2;
  }
  if (options.device < 0 || options.device >= count)
    throw UsageError(fmt::format("--device {}: there are {} CUDA devices (allowed: 0..{})", options.device, count,
                                 count - 1));

  // 3. Device facts, bandwidth once per sweep, run options.
  const DeviceInfo info = query_device_info(options.device);
  SweepContext ctx;
  ctx.device = options.device;
  ctx.gpu = info.name;
  ctx.driver = info.driver_label();
  ctx.cuda = info.cuda_runtime;
  ctx.git_sha = build_git_sha();
  ctx.l2_mode = options.l2;
  ctx.cupti = !options.no_cupti;
  if (config.timing.min_samples) ctx.min_samples = *config.timing.min_samples;
  if (config.timing.max_seconds_per_point) ctx.max_seconds_per_point = *config.timing.max_seconds_per_point;
  if (config.timing.target_noise_pct) ctx.target_noise_pct = *config.timing.target_noise_pct;
  if (options.min_samples) ctx.min_samples = *options.min_samples;
  if (options.max_seconds) ctx.max_seconds_per_point = *options.max_seconds;
  fmt::print(stderr, "kvb sweep: GPU {} {} ({} SMs, L2 {:.0f} MiB, {:.1f} GiB), driver {}, CUDA {}, git {}\n",
             info.index, info.name, info.sm_count, double(info.l2_bytes) / (1 << 20),
             double(info.memory_bytes) / (1 << 30), ctx.driver, ctx.cuda, ctx.git_sha);
  ctx.copy_gbps = measure_copy_gbps(options.device);
  ctx.read_gbps = measure_read_gbps(options.device);
  fmt::print(stderr,
             "kvb sweep: measured copy {:.1f} GB/s (read + write), read {:.1f} GB/s; L2 {}, CUPTI {}; {} points "
             "-> {}\n",
             ctx.copy_gbps, ctx.read_gbps, ctx.l2_mode, ctx.cupti ? "on" : "off", points.size(), out);

  // 4. Run.
  kvb::SweepOptions run_options;
  run_options.experiment = config.name;
  run_options.out_path = out;
  const SweepSummary summary = run_sweep(*kind, points, ctx, run_options);
  return summary.failed ? 1 : 0;
}

}  // namespace kvb::cli
