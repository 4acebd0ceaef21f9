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

namespace {

/// Bytes of the UTF-8 character at value[i]: a well-formed sequence (Unicode's table of well-formed byte sequences)
/// counts as one character, each byte of an ill-formed one (a stray continuation byte, a cut or overlong sequence) as
/// one of its own, as a decoder that escapes undecodable bytes (Python's surrogateescape) counts them.
size_t utf8_character_bytes(const std::string& value, size_t i) {
  const auto byte = [&](size_t k) { return k < value.size() ? static_cast<unsigned char>(value[k]) : 0u; };
  const unsigned b = byte(i);
  size_t len = 1;
  unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) len = 2;
  else if (b >= 0xE0 && b <= 0xEF) len = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
  else if (b >= 0xF0 && b <= 0xF4) len = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
  if (len == 1) return 1;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 1;
  for (size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 1;
  return len;
}

}  // namespace

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
    else if (byte >= 0x80 && utf8_character_bytes(text, i) == 1) out += fmt::format("\\x{:02x}", byte);  // no UTF-8
    else if (byte >= 0x80) {
      const size_t n = utf8_character_bytes(text, i);
      out.append(text, i, n);
      i += n - 1;
    } else out += c;
  }
  return out;
}

namespace {

/// Bytes of the character at text[i] of line_escaped text: an escape it writes (\n, \r, \xNN, \uNNNN) or a UTF-8
/// character (utf8_character_bytes).
size_t escaped_character_bytes(const std::string& text, size_t i) {
  const auto hex = [&](size_t from, size_t n) {
    if (from + n > text.size()) return false;
    for (size_t k = from; k < from + n; ++k)
      if (!std::isxdigit(static_cast<unsigned char>(text[k]))) return false;
    return true;
  };
  if (text[i] == '\\' && i + 1 < text.size()) {
    const char e = text[i + 1];
    if (e == 'n' || e == 'r') return 2;
    if (e == 'x' && hex(i + 2, 2)) return 4;
    if (e == 'u' && hex(i + 2, 4)) return 6;
  }
  return utf8_character_bytes(text, i);
}

/// `value` whole up to 80 characters, else its first 72 and how many it has; `bytes(value, i)`: the bytes of the
/// character at value[i].
std::string shortened(const std::string& value, size_t (*bytes)(const std::string&, size_t)) {
  size_t chars = 0, cut = value.size();
  for (size_t i = 0; i < value.size(); i += bytes(value, i)) {
    if (chars == 72) cut = i;
    ++chars;
  }
  if (chars <= 80) return value;
  return value.substr(0, cut) + "... (" + std::to_string(chars) + " characters)";
}

}  // namespace

std::string shown_value(const std::string& value) { return shortened(value, utf8_character_bytes); }

size_t character_count(const std::string& text) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); i += utf8_character_bytes(text, i)) ++chars;
  return chars;
}

std::string shown_escaped_value(const std::string& text) { return shortened(text, escaped_character_bytes); }

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
