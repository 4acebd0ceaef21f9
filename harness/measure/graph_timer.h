// CUDA-graph capture and event timing of repeated samples (DESIGN.md section 4: warm up, repeat, median and spread).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

namespace kvb {

/// An instantiated CUDA graph captured from the work a callable enqueues on a stream. Move-only RAII.
class CudaGraph {
 public:
  /// Captures `enqueue(stream)` (stream capture, global mode). Throws CudaError when capture or instantiation fails.
  static CudaGraph capture(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue);
  CudaGraph() = default;
  CudaGraph(CudaGraph&& o) noexcept;
  CudaGraph& operator=(CudaGraph&& o) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();
  /// Launches the graph on `stream`; throws CudaError.
  void launch(cudaStream_t stream) const;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

/// Median and spread of timed samples.
struct SampleStats {
  double median = 0, p10 = 0, p90 = 0;  ///< per-sample values (the caller's unit)
  double noise_pct = 0;                 ///< (p90 - p10) / (2 median) * 100
  int samples = 0;
  std::string stop;                     ///< "noise" (spread under target) or "time" (time limit reached)
};

/// Percentile q in [0, 1] of values (linear interpolation between order statistics). Empty input gives NaN.
double percentile(std::vector<double> values, double q);
/// Median, p10, p90 and noise of `values`.
SampleStats summarize(const std::vector<double>& values);

/// Rules for how long to sample one point.
struct SamplingRule {
  int min_samples = 10;
  int max_samples = 1000;
  double max_seconds = 3.0;       ///< wall-clock limit on sampling (after min_samples are taken)
  double target_noise_pct = 1.0;  ///< stop once noise_pct falls under this
};

/// Calls `sample()` (returns one sample's value, e.g. microseconds per layer-step) until the rule stops it.
SampleStats sample_until(const std::function<double()>& sample, const SamplingRule& rule);

/// Elapsed milliseconds of `enqueue(stream)` between two events on the stream (synchronises). Throws CudaError.
double time_ms(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue);

}  // namespace kvb
