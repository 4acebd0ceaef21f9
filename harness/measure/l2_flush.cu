// L2Flusher: sizes its regions from the device's L2 and evicts with the byte-exact kernels of dram_probe.h.
#include "harness/measure/l2_flush.h"

#include "harness/measure/dram_probe.h"

namespace kvb {
namespace {

/// The regions hold zeros, so the xor of their words is 0 and the read kernels never store to the sink.
constexpr uint32_t kNeverXor = 0xFFFFFFFFu;

}  // namespace

L2Flusher::L2Flusher() {
  int device = 0, l2 = 0;
  KVB_CUDA_CHECK(cudaGetDevice(&device));
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  l2_bytes_ = static_cast<size_t>(l2 > 0 ? l2 : (1 << 20));
  region_bytes_ = ((2 * l2_bytes_ + 15) / 16) * 16;
  const size_t n = region_bytes_ / sizeof(uint4);
  write_region_ = DeviceBuffer<uint4>(n);
  clean_region_ = DeviceBuffer<uint4>(n);
  drain_region_ = DeviceBuffer<uint4>(n);
  sink_ = DeviceBuffer<uint32_t>(1);
  KVB_CUDA_CHECK(cudaMemset(write_region_.get(), 0, region_bytes_));
  KVB_CUDA_CHECK(cudaMemset(clean_region_.get(), 0, region_bytes_));
  KVB_CUDA_CHECK(cudaMemset(drain_region_.get(), 0, region_bytes_));
  KVB_CUDA_CHECK(cudaMemset(sink_.get(), 0, sizeof(uint32_t)));
  flush(nullptr);
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush(cudaStream_t stream) {
  KVB_CUDA_CHECK(launch_fill_probe(write_region_.get(), region_bytes_, 0u, stream));
  KVB_CUDA_CHECK(launch_read_probe(clean_region_.get(), region_bytes_, kNeverXor, sink_.get(), stream));
}

void L2Flusher::drain(cudaStream_t stream) {
  KVB_CUDA_CHECK(launch_read_probe(drain_region_.get(), region_bytes_, kNeverXor, sink_.get(), stream));
}

}  // namespace kvb
