// CUDA-event timing of work enqueued on a stream: the one event timer behind every measured time (sweep points,
// kvb_bench, the bandwidth measurement).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace kvb {

/// Owning pair of CUDA events (created once, reused for every timing). Not copyable.
class EventTimer {
 public:
  /// Creates the events on the current device; throws CudaError.
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  /// Milliseconds between an event recorded before `enqueue(stream)` and one after it (synchronises on the second;
  /// CUDA events resolve about 0.5 us). Throws CudaError; exceptions from `enqueue` propagate.
  float ms(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue);

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

/// Elapsed milliseconds of `enqueue(stream)` with a timer of its own (EventTimer::ms). Throws CudaError.
double time_ms(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue);

}  // namespace kvb
