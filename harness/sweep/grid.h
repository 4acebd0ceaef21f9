// The sweep grid: the Cartesian product of the resolved axes, as a plain list of points.
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/config.h"
#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// Largest Cartesian product make_grid expands.
constexpr long long kMaxGridPoints = 1000000;

/// Cartesian product of `axes` in their order (the first axis varies slowest). For each point, axes that do not
/// apply to its variant (ExperimentKind::applies with the point's "variant" value, "" when the kind has no variant
/// axis) hold "", and points that thereby repeat an earlier one are dropped; the order of first appearance is kept.
/// Throws UsageError when the product exceeds kMaxGridPoints.
std::vector<Point> make_grid(const ExperimentKind& kind, const std::vector<AxisValues>& axes);

/// The first point ExperimentKind::validate refuses, and its reason (which names the values it refuses as
/// "AXIS = VALUE"); `point` is null when every point is taken.
struct PointRefusal {
  const Point* point = nullptr;
  std::string reason;
};
PointRefusal first_refused_point(const ExperimentKind& kind, const std::vector<Point>& points);

/// Runs ExperimentKind::validate on every point before anything runs. Throws UsageError with the point's label and
/// the reason for the first invalid point.
void validate_points(const ExperimentKind& kind, const std::vector<Point>& points);

}  // namespace kvb
