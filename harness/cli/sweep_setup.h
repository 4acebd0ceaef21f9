// What `kvb sweep` resolves before anything runs: config, kind, full grid, shard, output path (shared by the
// one-process sweep in cmd_sweep.cpp and the multi-GPU sweep in cmd_sweep_devices.cpp).
#pragma once

#include <string>
#include <vector>

#include "harness/cli/commands.h"
#include "harness/sweep/config.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/shard.h"

namespace kvb::cli {

/// The grid a sweep config names: what kvb sweep runs and kvb merge --config orders rows by.
struct ConfigGrid {
  SweepConfig config;
  const ExperimentKind* kind = nullptr;
  std::vector<Point> grid;  ///< every point checked (validate_points), in grid order
};

/// Loads the config at `config_path`, finds its kind, applies the --set overrides `sets` and makes the grid, every
/// point checked as a sweep checks it. Throws UsageError naming the config's field, the --set or the point.
ConfigGrid load_config_grid(const std::string& config_path, const std::vector<std::string>& sets);

/// A validated sweep: every check done, nothing written.
struct SweepSetup {
  SweepConfig config;
  const ExperimentKind* kind = nullptr;
  std::vector<Point> grid;    ///< the full grid, in grid order
  Shard shard;                ///< {0, 1} without --shard
  std::vector<Point> points;  ///< the shard's points, in grid order
  std::string out;            ///< --out, else results/NAME.csv (results/NAME.shardI-of-N.csv with --shard)
  CsvTable existing;          ///< the rows already in `out` (load_resume_table: an older header upgraded), read once
};

/// Loads and checks everything (config, kind, overrides, grid, whole-point checks, --shard, --out writable and not
/// the --config, an existing --out validated as a result CSV of the kind). Throws UsageError naming the flag or
/// field.
SweepSetup prepare_sweep(const SweepCommandOptions& options);

/// Runs a sweep prepare_sweep(options) validated (run_sweep_command's steps after the first; the peer variants that
/// cannot run here leave its points with a line each). Exit 0 when every point is ok, 1 when any failed, 128 + the
/// signal when SIGINT or SIGTERM stopped it between points.
int run_prepared_sweep(const SweepCommandOptions& options, SweepSetup setup);

/// Prints the "no CUDA device" message of kvb sweep and returns false when there is no GPU; true otherwise.
bool sweep_gpu_present();

/// Asks the peer runner (harness/kinds/peer_point.h probe_peers) whether the peer variants among s.points can run
/// on CUDA device `device`, and removes the points of those that cannot from s.points (the grid keeps them), with one
/// line on stderr per peer: its versions, or how many points were skipped and why. Returns the points skipped.
size_t skip_unavailable_peers(SweepSetup& s, int device);

/// Runs the sweep with one worker process per device of options.devices and merges their rows into setup.out.
int run_sweep_on_devices(const SweepCommandOptions& options, const SweepSetup& setup);

}  // namespace kvb::cli
