// Validators for experiment axes (AxisCheck): each gives "" or a one-line reason naming the axis and the allowed
// values, which it also states on its own (AxisCheck::allowed).
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/experiment_kind.h"

namespace kvb {

/// An integer in [lo, hi].
AxisCheck int_axis(const std::string& name, long long lo, long long hi);
/// An integer from a fixed set.
AxisCheck int_set_axis(const std::string& name, const std::vector<long long>& allowed);
/// One of the given words.
AxisCheck word_axis(const std::string& name, const std::vector<std::string>& allowed);

}  // namespace kvb
