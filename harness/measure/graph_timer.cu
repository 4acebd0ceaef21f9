#include "harness/measure/graph_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "core/cuda_check.h"

namespace kvb {

CudaGraph CudaGraph::capture(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue) {
  CudaGraph g;
  KVB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  try {
    enqueue(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  KVB_CUDA_CHECK(cudaStreamEndCapture(stream, &g.graph_));
  KVB_CUDA_CHECK(cudaGraphInstantiate(&g.exec_, g.graph_, 0));
  return g;
}

CudaGraph::CudaGraph(CudaGraph&& o) noexcept
    : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& o) noexcept {
  if (this != &o) {
    this->~CudaGraph();
    graph_ = std::exchange(o.graph_, nullptr);
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

CudaGraph::~CudaGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

void CudaGraph::launch(cudaStream_t stream) const { KVB_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

SampleStats summarize(const std::vector<double>& values) {
  SampleStats s;
  s.samples = int(values.size());
  s.median = percentile(values, 0.5);
  s.p10 = percentile(values, 0.1);
  s.p90 = percentile(values, 0.9);
  s.noise_pct = s.median > 0 ? (s.p90 - s.p10) / (2 * s.median) * 100 : 0;
  return s;
}

SampleStats sample_until(const std::function<double()>& sample, const SamplingRule& rule) {
  std::vector<double> values;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    values.push_back(sample());
    const int n = int(values.size());
    if (n < rule.min_samples) continue;
    const SampleStats s = summarize(values);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s.noise_pct <= rule.target_noise_pct) return SampleStats{s.median, s.p10, s.p90, s.noise_pct, n, "noise"};
    if (elapsed >= rule.max_seconds || n >= rule.max_samples)
      return SampleStats{s.median, s.p10, s.p90, s.noise_pct, n, "time"};
  }
}

double time_ms(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue) {
  cudaEvent_t start = nullptr, stop = nullptr;
  KVB_CUDA_CHECK(cudaEventCreate(&start));
  KVB_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = 0;
  try {
    KVB_CUDA_CHECK(cudaEventRecord(start, stream));
    enqueue(stream);
    KVB_CUDA_CHECK(cudaEventRecord(stop, stream));
    KVB_CUDA_CHECK(cudaEventSynchronize(stop));
    KVB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

}  // namespace kvb
