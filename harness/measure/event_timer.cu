#include "harness/measure/event_timer.h"

#include "core/cuda_check.h"

namespace kvb {

EventTimer::EventTimer() {
  KVB_CUDA_CHECK(cudaEventCreate(&start_));
  try {
    KVB_CUDA_CHECK(cudaEventCreate(&stop_));
  } catch (...) {
    cudaEventDestroy(start_);
    throw;
  }
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

float EventTimer::ms(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue) {
  KVB_CUDA_CHECK(cudaEventRecord(start_, stream));
  enqueue(stream);
  KVB_CUDA_CHECK(cudaEventRecord(stop_, stream));
  KVB_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  KVB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

double time_ms(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue) {
  EventTimer timer;
  return timer.ms(stream, enqueue);
}

}  // namespace kvb
