// Test support for compare, shard, merge and the kinds' axes: grids of experiment kinds (from --set overrides or a
// config file) and synthetic result CSVs whose latencies follow a closed form the tests recompute.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/kinds/registry.h"
#include "harness/sweep/config.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/grid.h"
#include "harness/sweep/result_csv.h"

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

/// `partial` (a table with some of a kind's columns, as the claims tests build them) as a whole result CSV of
/// `kind` (a schema of result_schemas(): "decode", "spec_verify", "short_context", "capacity"), every column filled
/// as kvb writes it: from `partial` where it has the column; an axis the kind applies to the row's variant its
/// default; a latency its group's median, else the row's first latency median (every ok row holds all its
/// latencies); anything else empty.
inline CsvTable as_result_table(const CsvTable& partial, const std::string& kind) {
  const auto& schemas = result_schemas();
  const auto schema = std::find_if(schemas.begin(), schemas.end(), [&](const CsvSchema& s) { return s.kind == kind; });
  if (schema == schemas.end()) throw std::invalid_argument("no result schema " + kind);
  const ExperimentKind* k = kind == "capacity" ? nullptr : &find_experiment_kind(kind);
  const auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  CsvTable t;
  t.header = schema->columns;
  for (const auto& row : partial.rows) {
    const auto get = [&](const std::string& name) -> std::optional<std::string> {
      const auto at = std::find(partial.header.begin(), partial.header.end(), name);
      if (at == partial.header.end()) return std::nullopt;
      return row[size_t(at - partial.header.begin())];
    };
    std::optional<std::string> any_median;
    for (size_t i = 0; i < partial.header.size() && !any_median; ++i)
      if (ends_with(partial.header[i], "_us_median") && !row[i].empty()) any_median = row[i];
    std::vector<std::string> full;
    for (const auto& c : t.header) {
      std::string v;
      if (const auto given = get(c)) {
        v = *given;
      } else if (k && std::any_of(k->axes.begin(), k->axes.end(), [&](const AxisSpec& a) { return a.name == c; })) {
        const AxisSpec& a =
            *std::find_if(k->axes.begin(), k->axes.end(), [&](const AxisSpec& x) { return x.name == c; });
        if (!k->applies || k->applies(get("variant").value_or(""), c)) v = a.defaults.front();
      } else if (ends_with(c, "_us_median") || ends_with(c, "_us_p10") || ends_with(c, "_us_p90")) {
        const std::string group = c.substr(0, c.rfind('_'));
        v = get(group + "_median").value_or(any_median.value_or(""));
      }
      full.push_back(v);
    }
    t.rows.push_back(std::move(full));
  }
  return t;
}

}  // namespace kvb::test
