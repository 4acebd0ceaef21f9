// `kvb sweep`: validate everything, check for a GPU and the peers, measure the device, run the grid (commands.h).
#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "harness/cli/build_info.h"
#include "harness/cli/commands.h"
#include "harness/cli/sweep_setup.h"
#include "harness/kinds/peer_point.h"
#include "harness/kinds/peer_variants.h"
#include "harness/kinds/registry.h"
#include "harness/measure/bandwidth.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/config.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/shard.h"
#include "harness/sweep/sweep.h"

namespace kvb::cli {

namespace {

/// The first of `kind`'s axes that `reason` names as "AXIS = ..." (a whole word before " = "), or "".
std::string first_axis_named(const ExperimentKind& kind, const std::string& reason) {
  const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = reason.find(" = "); at != std::string::npos; at = reason.find(" = ", at + 1)) {
    size_t begin = at;
    while (begin > 0 && word_char(reason[begin - 1])) --begin;
    const std::string word = reason.substr(begin, at - begin);
    for (const AxisSpec& axis : kind.axes)
      if (axis.name == word) return word;
  }
  return "";
}

}  // namespace

ConfigGrid load_config_grid(const std::string& config_path, const std::vector<std::string>& sets) {
  ConfigGrid g;
  g.config = load_sweep_config(config_path);
  try {
    g.kind = &find_experiment_kind(g.config.kind);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: experiment.kind: {}", config_path, e.what()));
  }
  std::vector<AxisValues> overrides;
  for (const auto& set : sets) overrides.push_back(parse_axis_override(set));
  const auto axes = resolve_axes(*g.kind, g.config, overrides);
  // Errors about the grid name the config and the overrides; a refused point, the line of the first axis its reason
  // names ("AXIS = ...") where the file gave that axis (and no --set replaced it).
  const auto source = [&](const std::string& axis) {
    std::string s = config_path;
    const bool overridden = std::any_of(overrides.begin(), overrides.end(), [&](const AxisValues& o) {
      return o.first == axis;
    });
    for (size_t a = 0; a < g.config.axes.size() && !overridden; ++a)
      if (g.config.axes[a].first == axis && a < g.config.axis_lines.size() && g.config.axis_lines[a] > 0)
        s += ":" + std::to_string(g.config.axis_lines[a]);
    for (const auto& set : sets) s += " --set " + shown_value(set);
    return s;
  };
  try {
    g.grid = make_grid(*g.kind, axes);
  } catch (const UsageError& e) {  // a grid too large
    throw UsageError(fmt::format("{}: {}", source(""), e.what()));
  }
  const PointRefusal refused = first_refused_point(*g.kind, g.grid);
  if (refused.point)
    throw UsageError(fmt::format("{}: point {}: {}", source(first_axis_named(*g.kind, refused.reason)),
                                 refused.point->label(), refused.reason));
  return g;
}

SweepSetup prepare_sweep(const SweepCommandOptions& options) {
  SweepSetup s;
  ConfigGrid g = load_config_grid(options.config, options.sets);
  s.config = std::move(g.config);
  s.kind = g.kind;
  s.grid = std::move(g.grid);
  if (s.grid.empty()) throw UsageError(fmt::format("{}: the grid has no points", options.config));
  if (options.l2 == "hot")
    for (const Point& p : s.grid)
      if (p.get("launch") == "pdl")
        throw UsageError(fmt::format("--l2 hot: every layer shares one set of pools, and launch = pdl needs each "
                                     "layer on its own (point {}; allowed with --l2 hot: --set launch=plain)",
                                     p.label()));
  if (!options.shard.empty()) s.shard = parse_shard(options.shard);
  s.points = shard_points(s.grid, s.shard);
  if (!options.devices.empty() && options.dry_run)
    throw UsageError(
        "--devices: cannot be combined with --dry-run (list one worker's points with --dry-run --shard K/N)");
  if (!options.devices.empty() && options.device_given)
    throw UsageError("--devices: cannot be combined with --device (give the devices as --devices 0,1,... or all)");
  if (!options.devices.empty())  // its form, and the worker shards a listed set makes, before looking for a GPU
    check_worker_shards(s.shard, parse_device_list(options.devices, -1).size(), options.devices);

  // Without --out: the config's experiment.out, else results/NAME.csv (a shard: the same stem, .shardK-of-N.csv).
  const std::string stem = s.config.out.empty() ? "results/" + s.config.name
                                                : s.config.out.substr(0, s.config.out.size() - 4);
  if (!options.out.empty()) s.out = options.out;
  else if (options.shard.empty()) s.out = stem + ".csv";
  else s.out = stem + ".shard" + s.shard.tag() + ".csv";
  // Errors about the output name what gave its path: --out, or the config's experiment.out.
  const std::string out_flag =
      options.out.empty() && !s.config.out.empty() ? options.config + ": experiment.out" : "--out";
  check_outputs({{s.out, out_flag, Existing::resume}}, {{options.config, "--config"}});
  s.existing = load_resume_table(*s.kind, s.out, out_flag);
  require_resume_experiment(s.existing, s.config.name, s.out, out_flag);
  report_rows_outside_grid(stderr, rows_outside_grid(*s.kind, s.config.name, s.grid, s.existing), s.out);
  return s;
}

bool sweep_gpu_present() {
  if (cuda_device_count() > 0) return true;
  fmt::print(stderr,
             "kvb sweep: no CUDA device found; the sweep needs a GPU (kvb info, kvb check-golden and --dry-run "
             "work without one)\n");
  return false;
}

namespace {

int dry_run(const SweepSetup& s) {
  const std::vector<bool> done = finished_points(*s.kind, s.config.name, s.points, s.existing);
  size_t n_done = 0;
  for (bool d : done) n_done += d;
  const std::string shard_note =
      s.shard.count > 1 ? fmt::format(" (shard {}/{} of {} points)", s.shard.index, s.shard.count, s.grid.size()) : "";
  fmt::print("kvb sweep --dry-run: experiment {} (kind {}), {} points{}, {} already in {}\n", s.config.name,
             s.kind->name, s.points.size(), shard_note, n_done, s.out);
  size_t k = 0;
  for (size_t i = 0; i < s.grid.size(); ++i) {
    if (!s.shard.holds(i)) continue;
    fmt::print("[{}/{}] {}{}\n", i + 1, s.grid.size(), s.grid[i].label(), done[k++] ? "  (done)" : "");
  }
  return 0;
}

/// A shard without points (more shards than points): its file holds the header only, so that merge sees every shard.
int empty_shard(const SweepSetup& s) {
  if (!std::filesystem::exists(s.out)) write_file_atomic(s.out, csv_line(csv_columns(*s.kind)));
  fmt::print(stderr, "kvb sweep: shard {}/{} of a grid of {} points holds no points; {} has the header only\n",
             s.shard.index, s.shard.count, s.grid.size(), s.out);
  return 0;
}

}  // namespace

size_t skip_unavailable_peers(SweepSetup& s, int device) {
  std::vector<std::string> variants;  // the peer variants of the points, in order of appearance
  for (const Point& p : s.points) {
    const std::string& v = p.get("variant");
    if (is_peer_variant(v) && std::find(variants.begin(), variants.end(), v) == variants.end()) variants.push_back(v);
  }
  if (variants.empty()) return 0;
  const auto probes = probe_peers(default_peer_runner(), variants, device);
  size_t skipped = 0;
  for (const auto& v : variants) {
    const PeerProbe& probe = probes.at(v);
    const auto of_v = [&](const Point& p) { return p.get("variant") == v; };
    if (probe.ok) {
      fmt::print(stderr, "kvb sweep: peer {}: {}\n", v, probe.text);
      continue;
    }
    const auto n = size_t(std::count_if(s.points.begin(), s.points.end(), of_v));
    s.points.erase(std::remove_if(s.points.begin(), s.points.end(), of_v), s.points.end());
    fmt::print(stderr, "kvb sweep: skipped {} point{} of peer {}: {}\n", n, n == 1 ? "" : "s", v, probe.text);
    skipped += n;
  }
  return skipped;
}

int run_sweep_command(const SweepCommandOptions& options) {
  // 1. Config, overrides, grid, shard and output: every check before anything runs or is written.
  return run_prepared_sweep(options, prepare_sweep(options));
}

int run_prepared_sweep(const SweepCommandOptions& options, SweepSetup setup) {
  if (options.dry_run) return dry_run(setup);
  // A shard without points, or every point already measured (an interrupted run's rerun after it finished):
  // nothing to run, no GPU needed.
  if (setup.points.empty() && options.devices.empty()) return empty_shard(setup);
  if (!setup.points.empty()) {
    const std::vector<bool> done = finished_points(*setup.kind, setup.config.name, setup.points, setup.existing);
    // With --devices, part files an interrupted run left are recovered (and checked) by the run, not skipped.
    const bool parts_left = !options.devices.empty() && std::filesystem::exists(setup.out + ".parts");
    if (!parts_left && std::all_of(done.begin(), done.end(), [](bool d) { return d; })) {
      fmt::print(stderr, "kvb sweep: {} of this run {} already in {}; nothing to do\n",
                 done.size() == 1 ? std::string("the 1 point") : fmt::format("all {} points", done.size()),
                 done.size() == 1 ? "is" : "are", shown_escaped_value(line_escaped(setup.out)));
      return 0;
    }
  }

  // 2. A GPU (several with --devices), and the peers that can run on it.
  if (!sweep_gpu_present()) return 2;
  const int count = cuda_device_count();
  if (options.devices.empty() && (options.device < 0 || options.device >= count))
    throw UsageError(fmt::format("--device {}: there are {} CUDA devices (allowed: 0..{})", options.device, count,
                                 count - 1));
  const int probe_device = options.devices.empty() ? options.device : parse_device_list(options.devices, count)[0];
  const bool had_points = !setup.points.empty();
  if (skip_unavailable_peers(setup, probe_device) && setup.points.empty() && had_points) {
    fmt::print(stderr, "kvb sweep: every point of this run was skipped; nothing to measure\n");
    return 0;
  }
  if (!options.devices.empty()) return run_sweep_on_devices(options, setup);

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
  const TimingConfig& timing = setup.config.timing;
  if (timing.min_samples) ctx.min_samples = *timing.min_samples;
  if (timing.max_seconds_per_point) ctx.max_seconds_per_point = *timing.max_seconds_per_point;
  if (timing.target_noise_pct) ctx.target_noise_pct = *timing.target_noise_pct;
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
             ctx.copy_gbps, ctx.read_gbps, ctx.l2_mode, ctx.cupti ? "on" : "off", setup.points.size(), setup.out);

  // 4. Run.
  kvb::SweepOptions run_options;
  run_options.experiment = setup.config.name;
  run_options.out_path = setup.out;
  const SweepSummary summary = run_sweep(*setup.kind, setup.points, ctx, run_options);
  if (summary.signal) return 128 + summary.signal;
  return summary.failed ? 1 : 0;
}

}  // namespace kvb::cli
