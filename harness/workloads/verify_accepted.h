// The `accepted` axis of the speculative-verification experiment: how many of a row's m draft tokens are accepted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvb {

/// Every draft accepted ("all"), none ("none"), or each draft accepted with probability `rate` in (0, 1), drafts in
/// order, stopping at the first rejection.
struct AcceptedSpec {
  enum class Kind { all, none, rate };
  Kind kind = Kind::all;
  double rate = 0;  ///< Kind::rate only
};

/// The values the `accepted` axis allows, in words.
constexpr const char* kAcceptedAllowed = "all, none, or an acceptance rate strictly between 0 and 1";

/// "" when `value` is "all", "none" or a number strictly between 0 and 1, else a one-line reason naming the axis
/// `accepted` and the allowed values (kAcceptedAllowed).
std::string check_accepted(const std::string& value);

/// Parses an `accepted` value. Throws std::invalid_argument with check_accepted's reason (the sweep checks every
/// axis value with check_accepted before any point runs).
AcceptedSpec parse_accepted(const std::string& value);

/// Accepted drafts a of each of `rows` rows, 0 <= a <= draft_tokens: all -> m, none -> 0; rate r -> draft 1, 2, ...
/// accepted each with probability r until the first rejection (a truncated geometric count, mean
/// r (1 - r^m) / (1 - r)), drawn from std::mt19937_64(seed): the same seed gives the same counts.
/// Throws std::invalid_argument when rows < 0 or draft_tokens < 1.
std::vector<int32_t> draw_accepted(const AcceptedSpec& spec, int rows, int draft_tokens, uint64_t seed);

}  // namespace kvb
