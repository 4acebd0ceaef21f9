// Point accessors of the experiment contract (experiment_kind.h).
#include "harness/sweep/experiment_kind.h"

#include <cerrno>
#include <cstdlib>

namespace kvb {

const std::string& Point::get(const std::string& axis) const {
  for (const auto& [name, value] : axes)
    if (name == axis) return value;
  throw std::out_of_range("point has no axis '" + axis + "'");
}

std::string shown_value(const std::string& value) {
  if (value.size() <= 80) return value;
  return value.substr(0, 72) + "... (" + std::to_string(value.size()) + " characters)";
}

long long Point::get_int(const std::string& axis) const {
  const std::string& value = get(axis);
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE)
    throw UsageError(axis + " = '" + shown_value(value) + "' is not an integer");
  return parsed;
}

std::string Point::label() const {
  std::string out;
  for (const auto& [name, value] : axes) {
    if (value.empty()) continue;
    if (!out.empty()) out += ',';
    out += name + '=' + value;
  }
  return out;
}

}  // namespace kvb
