// The one CUDA error-check macro of the project, the RAII owners of device memory and streams, and host <-> device
// copies.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kvb {

/// A failed CUDA runtime call: what() holds "file:line: expr: cudaGetErrorString(code)".
struct CudaError : std::runtime_error {
  cudaError_t code;
  CudaError(cudaError_t c, const std::string& what) : std::runtime_error(what), code(c) {}
};

/// Throws CudaError for `code`. The runtime's last-error slot is read (and so cleared) first: a failure that is not
/// sticky must not resurface from the next, unrelated cudaGetLastError() (for example after the next launch).
[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + expr + ": " +
                            cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

}  // namespace kvb

/// Checks a cudaError_t-returning expression; throws kvb::CudaError on failure.
#define KVB_CUDA_CHECK(expr)                                                            \
  do {                                                                                  \
    const cudaError_t kvb_err_ = (expr);                                                \
    if (kvb_err_ != cudaSuccess) ::kvb::throw_cuda_error(kvb_err_, #expr, __FILE__, __LINE__); \
  } while (0)

namespace kvb {

/// Owning device allocation of `count` elements of T (cudaMalloc; freed on destruction). Move-only.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count_) KVB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count_ * sizeof(T)));
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  void reset() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

/// A device copy of host vector `h` (h.size() elements of T; synchronous cudaMemcpy). Throws kvb::CudaError.
template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& h) {
  DeviceBuffer<T> d(h.size());
  if (!h.empty()) KVB_CUDA_CHECK(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

/// A host copy of the `n` elements of T at device pointer `p` (synchronous cudaMemcpy). Throws kvb::CudaError.
template <typename T>
std::vector<T> download(const T* p, size_t n) {
  std::vector<T> h(n);
  if (n) KVB_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace kvb

namespace kvb {

/// Owning non-blocking CUDA stream. Move-only.
class CudaStream {
 public:
  CudaStream() { KVB_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~CudaStream() {
    if (s_) cudaStreamDestroy(s_);
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  CudaStream(CudaStream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace kvb
