// Timing and profiling of whole model steps replayed as a CUDA graph (DESIGN.md section 4): the warm-up, the samples
// of whole buffer cycles, the cold-L2 rotation, and one CUPTI range for the DRAM bytes. What every experiment kind
// and kvb_bench time with.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "harness/measure/cuda_graph.h"
#include "harness/measure/cupti_range_profiler.h"
#include "harness/measure/gpu_clock.h"
#include "harness/measure/sampling.h"

namespace kvb {

class L2Flusher;

/// Warm-up and sample length of time_model_steps (the peer runner, peers/protocol.py, is handed the same numbers):
/// at least kWarmupCycles whole cycles and kMinWarmupMs of warm-up (memory a previous point freed keeps DRAM busy for
/// a few milliseconds); samples of whole cycles lasting at least kMinSampleMs (CUDA-event resolution is about 0.5 us).
inline constexpr int kWarmupCycles = 3;
inline constexpr double kMinWarmupMs = 100.0;
inline constexpr double kMinSampleMs = 2.0;

/// Copies of a model's pools (groups) a step rotates through so that no state is still in L2 when its layer comes
/// round again: ceil(3 x L2 / step_state_bytes) clamped to [1, 16]. Throws CudaError when the device's L2 size cannot
/// be read.
int cold_l2_groups(double step_state_bytes, int device);

/// How replays of one model step were timed.
struct StepTiming {
  SampleStats stats;         ///< microseconds per layer-step
  int steps_per_sample = 0;  ///< model steps per sample (a whole number of cycles)
  ClockSample clock_before;  ///< SM clock after warm-up, before the first sample
};

/// Warms up and samples replays of `graph` on CUDA device `device` (one model step per launch of `layer_steps`
/// layer-steps): warm-up of whole cycles of `cycle` steps for at least kWarmupCycles cycles and kMinWarmupMs (memory
/// a previous point freed keeps DRAM busy for a few milliseconds); then samples of a whole number of cycles lasting
/// at least kMinSampleMs (CUDA-event resolution is about 0.5 us). Before each sample, untimed: `before_sample(stream)`
/// when given, then `flusher->flush` when a flusher is given (cold L2). The SM clock is read after every sample
/// (sample_sm_clock): a sample the GPU ran throttled is discarded and the next one waits for the clock (sample_until,
/// the rule's min_clock_fraction). NVTX ranges "warm-up" and "timing". Throws CudaError, or std::runtime_error when
/// the clock does not recover (sample_until).
StepTiming time_model_steps(int device, const CudaGraph& graph, cudaStream_t stream, int cycle, int layer_steps,
                            const SamplingRule& rule, L2Flusher* flusher,
                            const std::function<void(cudaStream_t)>& before_sample = {});

/// CUPTI DRAM bytes of `steps` replays of `graph` on `device`, each CUPTI pass preceded by `before_pass(stream)` and
/// a stream synchronisation (profile_range). With `cupti` false nothing runs and the status says
/// "skipped (--no-cupti)". Throws CudaError.
RangeMeasurement profile_model_steps(int device, bool cupti, const CudaGraph& graph, cudaStream_t stream, int steps,
                                     const std::function<void(cudaStream_t)>& before_pass);

}  // namespace kvb
