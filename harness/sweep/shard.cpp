// --shard and --devices parsing and the split of a grid (shard.h).
#include "harness/sweep/shard.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace kvb {
namespace {

/// A decimal integer written as every integer flag takes it (integer_text: an optional sign, ASCII digits), or -1:
/// not one, or negative, or past what a long long holds.
long long parse_count(const std::string& s) {
  long long v = -1;
  return integer_text(s) && parse_integer(s, v) && v >= 0 ? v : -1;
}

}  // namespace

std::string Shard::tag() const { return fmt::format("{}-of-{}", index, count); }

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const long long i = slash == std::string::npos ? -1 : parse_count(text.substr(0, slash));
  const long long n = slash == std::string::npos ? -1 : parse_count(text.substr(slash + 1));
  if (i < 0 || n < 1 || n > kMaxShards || i >= n)
    throw UsageError(
        fmt::format("--shard '{}': expected I/N with integers 0 <= I < N, 1 <= N <= {} (for example "
                    "0/4 ... 3/4)",
                    text, kMaxShards));
  return Shard{int(i), int(n)};
}

std::vector<Point> shard_points(const std::vector<Point>& points, const Shard& shard) {
  std::vector<Point> out;
  for (size_t i = 0; i < points.size(); ++i)
    if (shard.holds(i)) out.push_back(points[i]);
  return out;
}

Shard sub_shard(const Shard& outer, int worker, int workers) {
  return Shard{outer.index + outer.count * worker, outer.count * workers};
}

void check_worker_shards(const Shard& outer, size_t workers, const std::string& devices_text) {
  const long long total = (long long)outer.count * (long long)workers;
  if (total > kMaxShards)
    throw UsageError(fmt::format("--shard {}/{} with --devices {}: {} shards x {} devices make {} worker shards "
                                 "(allowed: at most {})",
                                 outer.index, outer.count, devices_text, outer.count, workers, total, kMaxShards));
}

std::vector<int> parse_device_list(const std::string& text, int device_count) {
  const bool known = device_count >= 0;  // else: the form only, before the devices are counted
  const std::string allowed =
      !known             ? fmt::format("allowed: all, or distinct device indices in 0..{}, comma-separated", kMaxDeviceIndex)
      : device_count > 0 ? fmt::format("allowed: all, or distinct indices in 0..{}, comma-separated", device_count - 1)
                         : std::string("there is no CUDA device");
  std::vector<int> devices;
  if (text == "all") {
    for (int d = 0; d < device_count; ++d) devices.push_back(d);
    if (!known) return devices;
  } else {
    size_t start = 0;
    while (true) {
      const auto comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const long long d = parse_count(item);
      if (!integer_text(item))
        throw UsageError(fmt::format("--devices '{}': '{}' is not a device index ({})", text, item, allowed));
      if (d < 0 || d > kMaxDeviceIndex)
        throw UsageError(fmt::format("--devices '{}': {} is out of range ({})", text, item, allowed));
      if (known && d >= device_count)
        throw UsageError(
            fmt::format("--devices '{}': '{}' is not a device of this machine ({})", text, item, allowed));
      if (std::find(devices.begin(), devices.end(), int(d)) != devices.end())
        throw UsageError(fmt::format("--devices '{}': device {} is listed twice ({})", text, d, allowed));
      devices.push_back(int(d));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (devices.empty()) throw UsageError(fmt::format("--devices '{}': no devices ({})", text, allowed));
  return devices;
}

}  // namespace kvb
