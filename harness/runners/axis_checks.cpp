#include "harness/runners/axis_checks.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kvb {
namespace {
bool parse_int(const std::string& s, long long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(s.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}
}  // namespace

std::function<std::string(const std::string&)> int_axis(const std::string& name, long long lo, long long hi) {
  return [=](const std::string& v) -> std::string {
    long long x = 0;
    if (!parse_int(v, x))
      return fmt::format("{} = '{}' is not an integer (allowed: integers {} to {})", name, v, lo, hi);
    if (x < lo || x > hi) return fmt::format("{} = '{}' is out of range (allowed: integers {} to {})", name, v, lo, hi);
    return "";
  };
}

std::function<std::string(const std::string&)> int_set_axis(const std::string& name, const std::vector<long long>& allowed) {
  return [=](const std::string& v) -> std::string {
    long long x = 0;
    if (!parse_int(v, x) || std::find(allowed.begin(), allowed.end(), x) == allowed.end())
      return fmt::format("{} = '{}' is not supported (allowed: {})", name, v, fmt::join(allowed, ", "));
    return "";
  };
}

std::function<std::string(const std::string&)> word_axis(const std::string& name, const std::vector<std::string>& allowed) {
  return [=](const std::string& v) -> std::string {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      return fmt::format("{} = '{}' is not known (allowed: {})", name, v, fmt::join(allowed, ", "));
    return "";
  };
}

}  // namespace kvb
