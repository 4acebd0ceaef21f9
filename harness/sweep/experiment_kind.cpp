// Point accessors of the experiment contract (experiment_kind.h).
#include "harness/sweep/experiment_kind.h"

#include <algorithm>

#include <cerrno>
#include <cstdlib>

namespace kvb {

const std::string& Point::get(const std::string& axis) const {
  for (const auto& [name, value] : axes)
    if (name == axis) return value;
  throw std::out_of_range("point has no axis '" + axis + "'");
}

std::string shown_value(const std::string& value) {
  // Characters are UTF-8 code points: counted by their lead bytes, cut only before one.
  const auto lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  const size_t chars = size_t(std::count_if(value.begin(), value.end(), lead));
  if (chars <= 80) return value;
  size_t cut = 0;
  for (size_t seen = 0; cut < value.size(); ++cut)
    if (lead(value[cut]) && seen++ == 72) break;
  return value.substr(0, cut) + "... (" + std::to_string(chars) + " characters)";
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
