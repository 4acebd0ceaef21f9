// Point accessors of the experiment contract (experiment_kind.h).
#include "harness/sweep/experiment_kind.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace kvb {

const std::string& Point::get(const std::string& axis) const {
  for (const auto& [name, value] : axes)
    if (name == axis) return value;
  throw std::out_of_range("point has no axis '" + axis + "'");
}

std::string nul_escaped(const std::string& text) {
  if (text.find('\0') == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + 8);
  for (const char c : text) {
    if (c == '\0') out += "\\x00";
    else out += c;
  }
  return out;
}

std::string line_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((byte < 0x20 && c != '\t') || byte == 0x7f) out += fmt::format("\\x{:02x}", byte);
    else if (text.compare(i, 2, "\xc2\x85") == 0) out += "\\u0085", i += 1;
    else if (text.compare(i, 3, "\xe2\x80\xa8") == 0) out += "\\u2028", i += 2;
    else if (text.compare(i, 3, "\xe2\x80\xa9") == 0) out += "\\u2029", i += 2;
    else out += c;
  }
  return out;
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

bool parse_integer(const std::string& text, long long& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end == text.c_str() + text.size();
}

bool integer_text(const std::string& text) {
  const size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  return text.size() > sign && text.find_first_not_of("0123456789", sign) == std::string::npos;
}

std::string AxisSpec::refusal(const std::string& value) const {
  const std::string reason = check(value);
  if (reason.empty()) return reason;
  // A value the check would take but for white space before or after it (a config's "staged ", a CSV cell's " 64")
  // is refused as such: the check's own reason would call a listed value unknown.
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  const auto first = std::find_if_not(value.begin(), value.end(), space);
  const auto last = std::find_if_not(value.rbegin(), value.rend(), space).base();
  if (first < last && (first != value.begin() || last != value.end()) && check(std::string(first, last)).empty())
    return name + " = '" + shown_value(value) + "' has white space around it" +
           (check.allowed.empty() ? "" : " (allowed: " + check.allowed + ")");
  if (reason.find(name) != std::string::npos) return reason;
  return "axis " + name + " = '" + shown_value(value) + "': " + reason;
}

long long Point::get_int(const std::string& axis) const {
  const std::string& value = get(axis);
  long long parsed = 0;
  if (!parse_integer(value, parsed)) throw UsageError(axis + " = '" + shown_value(value) + "' is not an integer");
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
