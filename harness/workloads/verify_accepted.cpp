#include "harness/workloads/verify_accepted.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <random>
#include <stdexcept>

#include <fmt/format.h>


namespace kvb {
namespace {

/// The number in `value` when the whole string is one finite decimal number (no leading white space, no hex, no NUL
/// byte: strtod stops at one).
bool parse_number(const std::string& value, double& out) {
  if (value.empty() || std::isspace(static_cast<unsigned char>(value.front())) ||
      value.find_first_of("xX") != std::string::npos)
    return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(value.c_str(), &end);
  return errno == 0 && end == value.c_str() + value.size() && std::isfinite(out);
}

}  // namespace

std::string check_accepted(const std::string& value) {
  double r = 0;
  if (value == "all" || value == "none" || (parse_number(value, r) && r > 0 && r < 1)) return "";
  return fmt::format("accepted = '{}' is not allowed (allowed: {})", value, kAcceptedAllowed);
}

AcceptedSpec parse_accepted(const std::string& value) {
  if (std::string e = check_accepted(value); !e.empty()) throw std::invalid_argument(e);
  AcceptedSpec s;
  if (value == "all") s.kind = AcceptedSpec::Kind::all;
  else if (value == "none") s.kind = AcceptedSpec::Kind::none;
  else {
    s.kind = AcceptedSpec::Kind::rate;
    parse_number(value, s.rate);
  }
  return s;
}

std::vector<int32_t> draw_accepted(const AcceptedSpec& spec, int rows, int draft_tokens, uint64_t seed) {
  if (rows < 0 || draft_tokens < 1)
    throw std::invalid_argument(fmt::format("draw_accepted: rows = {} must be >= 0 and draft_tokens = {} >= 1", rows,
                                            draft_tokens));
  std::vector<int32_t> a(size_t(rows), 0);
  if (spec.kind == AcceptedSpec::Kind::all) a.assign(a.size(), draft_tokens);
  if (spec.kind != AcceptedSpec::Kind::rate) return a;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution accept(spec.rate);
  for (int32_t& n : a)
    while (n < draft_tokens && accept(rng)) ++n;
  return a;
}

}  // namespace kvb
