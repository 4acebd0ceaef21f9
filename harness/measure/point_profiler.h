// The CUPTI session that sweep runners share: created on first use for a device, kept for the whole sweep (create()
// costs about 0.25 s). When CUPTI cannot profile here, one warning on stderr and every later point gets the reason.
#pragma once

#include <functional>
#include <string>

#include "harness/measure/cupti_range_profiler.h"

namespace kvb {

/// Measures `work` (one user range, every CUPTI pass preceded by `before_pass`) with the process-wide profiler of
/// `device`. Never throws for CUPTI failures: the measurement's status says why (cupti_status column). Exceptions
/// from `work` or `before_pass` propagate.
RangeMeasurement profile_range(int device, const std::function<void()>& work,
                               const std::function<void()>& before_pass);

/// Ends every session profile_range() opened (CUPTI allows one profiler per process: call this before creating
/// another RangeProfiler in the same process, as tests do).
void release_profile_sessions();

}  // namespace kvb
