#include "harness/measure/cuda_graph.h"

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

}  // namespace kvb
