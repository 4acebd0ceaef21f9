#include "harness/kinds/axis_checks.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kvb {

AxisCheck int_axis(const std::string& name, long long lo, long long hi) {
  const std::string words = fmt::format("integers {} to {}", lo, hi);
  return {[=](const std::string& v) -> std::string {
            long long x = 0;
            if (!integer_text(v))
              return fmt::format("{} = '{}' is not an integer (allowed: {})", name, shown_value(v), words);
            if (!parse_integer(v, x) || x < lo || x > hi)
              return fmt::format("{} = '{}' is out of range (allowed: {})", name, shown_value(v), words);
            return "";
          },
          words, "integers", {}, std::to_string(lo), std::to_string(hi)};
}

AxisCheck int_set_axis(const std::string& name, const std::vector<long long>& allowed) {
  const std::string words = fmt::format("{}", fmt::join(allowed, ", "));
  std::vector<std::string> listed;
  for (const long long x : allowed) listed.push_back(std::to_string(x));
  return {[=](const std::string& v) -> std::string {
            long long x = 0;
            if (!parse_integer(v, x) || std::find(allowed.begin(), allowed.end(), x) == allowed.end())
              return fmt::format("{} = '{}' is not supported (allowed: {})", name, shown_value(v), words);
            return "";
          },
          words, "integer_set", listed};
}

AxisCheck word_axis(const std::string& name, const std::vector<std::string>& allowed) {
  const std::string words = fmt::format("{}", fmt::join(allowed, ", "));
  return {[=](const std::string& v) -> std::string {
            if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
              return fmt::format("{} = '{}' is not known (allowed: {})", name, shown_value(v), words);
            return "";
          },
          words, "words", allowed};
}

}  // namespace kvb
