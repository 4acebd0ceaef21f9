// Cartesian product, non-applying axes and duplicate removal (grid.h).
#include "harness/sweep/grid.h"

#include <set>

#include <fmt/format.h>

namespace kvb {

std::vector<Point> make_grid(const ExperimentKind& kind, const std::vector<AxisValues>& axes) {
  std::vector<Point> points;
  for (const auto& axis : axes)
    if (axis.second.empty()) return points;
  // The Cartesian product's size before duplicates go: a grid past kMaxGridPoints is a typing slip, not a sweep.
  double product = 1;
  for (const auto& axis : axes) product *= double(axis.second.size());
  if (product > double(kMaxGridPoints))
    throw UsageError(fmt::format("the grid has {:.0f} points before duplicates are removed (allowed: at most {}); "
                                 "split it with fewer axis values per run",
                                 product, kMaxGridPoints));

  std::set<std::vector<std::pair<std::string, std::string>>> seen;
  std::vector<size_t> index(axes.size(), 0);
  while (true) {
    Point p;
    std::string variant;
    for (size_t a = 0; a < axes.size(); ++a) {
      p.axes.emplace_back(axes[a].first, axes[a].second[index[a]]);
      if (axes[a].first == "variant") variant = axes[a].second[index[a]];
    }
    if (kind.applies)
      for (auto& [name, value] : p.axes)
        if (name != "variant" && !kind.applies(variant, name)) value.clear();
    if (seen.insert(p.axes).second) points.push_back(std::move(p));

    // Odometer step: the last axis varies fastest.
    size_t a = axes.size();
    while (a > 0) {
      --a;
      if (++index[a] < axes[a].second.size()) break;
      index[a] = 0;
      if (a == 0) return points;
    }
    if (axes.empty()) return points;
  }
}

PointRefusal first_refused_point(const ExperimentKind& kind, const std::vector<Point>& points) {
  if (kind.validate)
    for (const auto& p : points)
      if (std::string reason = kind.validate(p); !reason.empty()) return {&p, std::move(reason)};
  return {};
}

void validate_points(const ExperimentKind& kind, const std::vector<Point>& points) {
  const PointRefusal r = first_refused_point(kind, points);
  if (r.point) throw UsageError(fmt::format("point {}: {}", r.point->label(), r.reason));
}

}  // namespace kvb
