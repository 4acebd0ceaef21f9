#include "harness/measure/point_profiler.h"

#include <cstdio>
#include <map>
#include <memory>

namespace kvb {

namespace {
std::map<int, std::unique_ptr<RangeProfilerOrStatus>>& sessions() {
  static std::map<int, std::unique_ptr<RangeProfilerOrStatus>> s;
  return s;
}
}  // namespace

void release_profile_sessions() { sessions().clear(); }

RangeMeasurement profile_range(int device, const std::function<void()>& work,
                               const std::function<void()>& before_pass) {
  auto& session = sessions()[device];
  if (!session) {
    RangeProfilerOptions options;
    options.cuda_device = device;
    session = std::make_unique<RangeProfilerOrStatus>(RangeProfiler::create(options));
    if (!session->status.ok())
      std::fprintf(stderr, "kvb: CUPTI cannot profile device %d (%s; %s): rows carry latency only\n", device,
                   session->status.reason.c_str(), session->status.detail.c_str());
  }
  if (!session->profiler) {
    RangeMeasurement m;
    m.status = session->status;
    return m;
  }
  return session->profiler->measure(work, before_pass);
}

}  // namespace kvb
