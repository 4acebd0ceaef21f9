#include "harness/measure/step_timing.h"

#include <algorithm>
#include <cmath>

#include "core/cuda_check.h"
#include "harness/measure/event_timer.h"
#include "harness/measure/l2_flush.h"
#include "harness/measure/nvtx.h"
#include "harness/measure/point_profiler.h"

namespace kvb {

int cold_l2_groups(double step_state_bytes, int device) {
  int l2_bytes = 0;
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  return int(std::clamp(std::ceil(3.0 * l2_bytes / step_state_bytes), 1.0, 16.0));
}

StepTiming time_model_steps(int device, const CudaGraph& graph, cudaStream_t stream, int cycle, int layer_steps,
                            const SamplingRule& rule, L2Flusher* flusher,
                            const std::function<void(cudaStream_t)>& before_sample) {
  EventTimer timer;
  auto replay = [&](int steps) {
    return double(timer.ms(stream, [&](cudaStream_t s) {
      for (int i = 0; i < steps; ++i) graph.launch(s);
    }));
  };
  double warm_ms = 0;
  int warm_steps = 0;
  {
    ScopedRange r("warm-up");
    while (warm_steps < kWarmupCycles * cycle || warm_ms < kMinWarmupMs) {
      warm_ms += replay(cycle);
      warm_steps += cycle;
    }
  }
  StepTiming t;
  t.clock_before = sample_sm_clock(device);
  const double step_ms = warm_ms / warm_steps;
  t.steps_per_sample = std::max(1, int(std::ceil(kMinSampleMs / (step_ms * cycle)))) * cycle;
  const double layer_steps_per_sample = double(t.steps_per_sample) * layer_steps;
  ScopedRange r("timing");
  t.stats = sample_until(
      [&] {
        if (before_sample) before_sample(stream);
        if (flusher) flusher->flush(stream);
        return replay(t.steps_per_sample) * 1e3 / layer_steps_per_sample;
      },
      rule, [device] { return sample_sm_clock(device); });
  return t;
}

RangeMeasurement profile_model_steps(int device, bool cupti, const CudaGraph& graph, cudaStream_t stream, int steps,
                                     const std::function<void(cudaStream_t)>& before_pass) {
  RangeMeasurement dram;
  dram.status.reason = "skipped (--no-cupti)";
  if (!cupti) return dram;
  return profile_range(
      device,
      [&] {
        for (int i = 0; i < steps; ++i) graph.launch(stream);
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
      },
      [&] {
        before_pass(stream);
        KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
      });
}

}  // namespace kvb
