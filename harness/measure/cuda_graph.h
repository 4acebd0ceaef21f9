// A CUDA graph captured from the work a callable enqueues: how a model step is replayed for timing (DESIGN.md
// section 4: CUDA-graph replay, as serving systems launch decode).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

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

}  // namespace kvb
