// Validators for experiment axes: each returns "" or a one-line reason naming the axis and the allowed values.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kvb {

/// An integer in [lo, hi].
std::function<std::string(const std::string&)> int_axis(const std::string& name, long long lo, long long hi);
/// An integer from a fixed set.
std::function<std::string(const std::string&)> int_set_axis(const std::string& name, const std::vector<long long>& allowed);
/// One of the given words.
std::function<std::string(const std::string&)> word_axis(const std::string& name, const std::vector<std::string>& allowed);

}  // namespace kvb
