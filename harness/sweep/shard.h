// Splitting a sweep's grid over processes and GPUs: `--shard I/N` (Slurm job arrays, CI matrices) and
// `--devices 0,1,...|all` (one worker process per GPU of one host).
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// The most shards a grid is dealt into (--shard I/N: N; with --devices, N times the devices).
constexpr int kMaxShards = 100000;

/// Shard `index` of `count`: the points of the full grid whose position i (0-based, grid order) has
/// i % count == index. 0 <= index < count; {0, 1} is the whole grid.
struct Shard {
  int index = 0;
  int count = 1;
  /// True when grid position `i` belongs to this shard.
  bool holds(size_t i) const { return i % size_t(count) == size_t(index); }
  /// "I-of-N", as used in default file names (results/NAME.shardI-of-N.csv).
  std::string tag() const;
};

/// Parses "I/N" (decimal integers, 0 <= I < N, 1 <= N <= 100000). Throws UsageError naming --shard and the allowed
/// values.
Shard parse_shard(const std::string& text);

/// The points of `points` (a full grid, in grid order) that `shard` holds, in grid order.
std::vector<Point> shard_points(const std::vector<Point>& points, const Shard& shard);

/// Worker `worker` of `workers` splitting an outer shard further: the shard (outer.index + outer.count * worker) of
/// (outer.count * workers), whose points are exactly the outer shard's points dealt round-robin to the workers.
Shard sub_shard(const Shard& outer, int worker, int workers);

/// Throws UsageError naming --shard and --devices (`devices_text`) when `workers` workers, each taking
/// sub_shard(outer, k, workers), would deal the grid into more than kMaxShards shards.
void check_worker_shards(const Shard& outer, size_t workers, const std::string& devices_text);

/// Largest device index a `--devices` list may name (the --device flags' range).
constexpr int kMaxDeviceIndex = 1023;

/// Parses a `--devices` list: "all" (every one of `device_count` devices) or comma-separated distinct device indices
/// in [0, device_count). device_count < 0 checks the form alone (before the devices are counted, so that bad input
/// is reported even without a GPU) and returns the indices given ("all": none). Throws UsageError naming --devices
/// and the allowed values.
std::vector<int> parse_device_list(const std::string& text, int device_count);

}  // namespace kvb
