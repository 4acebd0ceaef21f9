// NVTX3 ranges in the project's domain "kvb", so that nsys and `ncu --nvtx --nvtx-include "kvb@..."` can select a
// sweep point or one of its phases (check, warm-up, timing, profile). Costs a few loads when no tool is attached.
#pragma once

#include <string>

namespace kvb {

/// Name of the NVTX domain every ScopedRange is pushed into.
inline constexpr const char* kNvtxDomain = "kvb";

/// Pushes an NVTX range named `name` in domain "kvb" on construction and pops it on destruction (same thread).
/// Ranges nest: a sweep point's range holds its "check", "warmup", "timing" and "profile" ranges. Not copyable or
/// movable, so a push is always matched by exactly one pop.
class ScopedRange {
 public:
  explicit ScopedRange(const std::string& name);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
  ScopedRange(ScopedRange&&) = delete;
  ScopedRange& operator=(ScopedRange&&) = delete;
};

}  // namespace kvb
