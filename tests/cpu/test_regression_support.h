// Test support for compare, shard, merge and the kinds' axes: grids of experiment kinds (from --set overrides or a
// config file) and synthetic result CSVs whose latencies follow a closed form the tests recompute.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/kinds/registry.h"
#include "harness/sweep/config.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/grid.h"

namespace kvb::test {

/// The grid of kind `kind_name` with its default axes and the given `--set` overrides ("axis=v1,v2"). Throws
/// UsageError from resolve_axes on a bad value.
inline std::vector<Point> grid_with(const std::string& kind_name, const std::vector<std::string>& sets) {
  const ExperimentKind& kind = find_experiment_kind(kind_name);
  const SweepConfig c =
      parse_sweep_config("[experiment]\nname = \"v\"\nkind = \"" + kind_name + "\"\n", "v.toml");
  std::vector<AxisValues> overrides;
  for (const std::string& set : sets) overrides.push_back(parse_axis_override(set));
  return make_grid(kind, resolve_axes(kind, c, overrides));
}

/// The grid of the config file at `path` for kind `kind_name` (a committed experiments/*.toml).
inline std::vector<Point> config_grid(const std::string& kind_name, const std::string& path) {
  const ExperimentKind& kind = find_experiment_kind(kind_name);
  return make_grid(kind, resolve_axes(kind, load_sweep_config(path), {}));
}

/// The decode kind's grid of variant x batch x buffer_size (recurrent points have no buffer size).
inline std::vector<Point> decode_grid(const ExperimentKind& kind, const std::string& batches,
                                      const std::string& buffer_sizes) {
  const SweepConfig c = parse_sweep_config(
      "[experiment]\nname = \"synthetic\"\n[axes]\nvariant = [\"recurrent\", "
      "\"kvbuffer\"]\nbatch = [" +
          batches + "]\nbuffer_size = [" + buffer_sizes + "]\n",
      "synthetic.toml");
  return make_grid(kind, resolve_axes(kind, c, {}));
}

/// A point's synthetic baseline median latency in microseconds.
inline double synthetic_median_us(const Point& p) {
  const double buffer = p.get("buffer_size").empty() ? 1.0 : double(p.get_int("buffer_size"));
  return 8.0 + 0.25 * double(p.get_int("batch")) * (1.0 + 2.0 / buffer);
}

/// One synthetic row's latency, status and GPU.
struct SyntheticRow {
  double median = 0, p10 = 0, p90 = 0;
  std::string status = "ok";
  std::string gpu = "NVIDIA H200";
};

/// A result table of `kind` (csv_columns) with one row per point; `row(i, point)` gives its values, other result
/// columns stay empty.
inline CsvTable synthetic_table(const ExperimentKind& kind, const std::string& experiment,
                                const std::vector<Point>& points,
                                const std::function<SyntheticRow(size_t, const Point&)>& row) {
  CsvTable t;
  t.header = csv_columns(kind);
  for (size_t i = 0; i < points.size(); ++i) {
    const SyntheticRow r = row(i, points[i]);
    std::vector<std::string> fields;
    for (const auto& col : t.header) {
      std::string v;
      if (col == "experiment")
        v = experiment;
      else if (col == "latency_us_median")
        v = std::to_string(r.median);
      else if (col == "latency_us_p10")
        v = std::to_string(r.p10);
      else if (col == "latency_us_p90")
        v = std::to_string(r.p90);
      else if (col == "status")
        v = r.status;
      else if (col == "gpu")
        v = r.gpu;
      else
        for (const auto& [axis, value] : points[i].axes)
          if (axis == col) v = value;
      fields.push_back(v);
    }
    t.rows.push_back(fields);
  }
  return t;
}

/// Rows whose p10 and p90 lie `spread` (a fraction) either side of `scale` times the synthetic median.
inline std::function<SyntheticRow(size_t, const Point&)> scaled(double scale, double spread) {
  return [scale, spread](size_t, const Point& p) {
    const double m = scale * synthetic_median_us(p);
    return SyntheticRow{m, m * (1.0 - spread), m * (1.0 + spread)};
  };
}

}  // namespace kvb::test
