// Shared pieces of the GPU tests: skipping without a device (or failing, where every GPU test must run), the verify
// kernels a test runs and their output tolerance, batches of reference tokens on the device, outputs.
#pragma once

#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "harness/measure/device_info.h"
#include "harness/workloads/device_tokens.h"
#include "harness/workloads/problem_setup.h"
#include "core/cuda_check.h"
#include "kernels/gdn_params.h"
#include "reference/gdn_reference.h"
#include "core/tolerances.h"

namespace kvb::test {

/// The environment variable that makes every GPU test run: with KVB_REQUIRE_GPU_TESTS=1 (ci/gpu.sh sets it on its
/// GPU runner) a GPU test that would skip fails instead, so that a runner where the GPU tests cannot run (no device
/// seen, CUPTI refused, another tool attached) does not pass them unseen.
constexpr const char* kRequireGpuTestsEnv = "KVB_REQUIRE_GPU_TESTS";
/// True when KVB_REQUIRE_GPU_TESTS is "1" (read on every call).
inline bool gpu_tests_required() {
  const char* v = std::getenv(kRequireGpuTestsEnv);
  return v && std::strcmp(v, "1") == 0;
}

/// Skips the current GPU test with `reason` (a stream expression), or fails it when gpu_tests_required(). Every skip
/// of a GPU test goes through here (tests/cpu/test_gpu_test_policy.cpp checks the sources).
#define KVB_SKIP_GPU_TEST(reason)                                                                   \
  do {                                                                                              \
    if (::kvb::test::gpu_tests_required()) {                                                        \
      FAIL() << "GPU test skipped although KVB_REQUIRE_GPU_TESTS=1 requires it to run: " << reason; \
    } else {                                                                                        \
      GTEST_SKIP() << reason;                                                                       \
    }                                                                                               \
  } while (0)

/// Skips the current test (with the reason) when no CUDA device is present; fails it then when gpu_tests_required().
#define KVB_REQUIRE_GPU()                                                             \
  do {                                                                                \
    if (!::kvb::cuda_device_present()) KVB_SKIP_GPU_TEST("no CUDA device present"); \
  } while (0)

/// The KVBuffer verify kernels a kernel-level test runs for p: the CUDA-core kernel always, and the tensor-core
/// kernel where it takes p (validate_tensor_core_verify). Tests loop over this list with SCOPED_TRACE(to_string(k)).
inline std::vector<VerifyKernel> verify_kernels_for(const KVBufferVerifyParams& p) {
  std::vector<VerifyKernel> kernels{VerifyKernel::cuda_cores};
  if (validate_tensor_core_verify(p).empty()) kernels.push_back(VerifyKernel::tensor_cores);
  return kernels;
}

/// Tolerance of a verify kernel's draft outputs against the float64 reference (DESIGN.md section 4): tol::kOutputBf16
/// for bf16 outputs, tol::kVerifyOutputFp32 for fp32 outputs, from either kernel.
inline double verify_output_tol(VerifyKernel, OutputDtype d) { return tol::verify_output(d); }

inline std::vector<double> to_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }
using kvb::to_bf16;  // harness/workloads/device_tokens.h
inline std::vector<float> to_float(const std::vector<double>& x) { return {x.begin(), x.end()}; }

/// Per-step errors of a run of decode steps or verify rounds (o and states, checkpoints or entries, relative to the
/// reference).
struct RunErrors {
  std::vector<double> o, state;
  bool outputs_written = true;
  double max_o() const { return o.empty() ? 0 : *std::max_element(o.begin(), o.end()); }
  double max_state() const { return state.empty() ? 0 : *std::max_element(state.begin(), state.end()); }
  /// Mean error over steps [a, b).
  static double mean(const std::vector<double>& e, size_t a, size_t b) {
    return std::accumulate(e.begin() + a, e.begin() + b, 0.0) / double(b - a);
  }
  /// Largest error over steps [a, b).
  static double peak(const std::vector<double>& e, size_t a, size_t b) {
    return *std::max_element(e.begin() + a, e.begin() + b);
  }
};

/// Token inputs of `tokens` tokens per row whose pointers are set (validate() accepts them, prepared gates) but never
/// read: for validation and describe_*_launch tests that launch nothing.
inline TokenInputs unread_token_inputs(int tokens) {
  TokenInputs in;
  in.q = in.k = in.v = reinterpret_cast<const bf16*>(16);
  in.g = in.beta = reinterpret_cast<const float*>(16);
  in.scale = 1;
  in.tokens = tokens;
  return in;
}
/// A KVBuffer pool of `num_slots` slots whose arrays are set but never read, but for `fill` (host memory of at least
/// num_slots ints: nothing is launched).
inline KVBufferPool unread_pool(int32_t* fill, int num_slots, int capacity, int buffer_size) {
  return KVBufferPool{reinterpret_cast<float*>(16), reinterpret_cast<bf16*>(16), reinterpret_cast<float*>(16),
                      reinterpret_cast<float*>(16), fill, num_slots, capacity, buffer_size};
}

/// KVBuffer verify parameters of `batch` rows with m drafts over a pool of capacity B - 1 + m (the capacity a
/// VerifyProblem gives it), whose pointers are set but never read: for validate(), describe_kvbuffer_verify_launch()
/// and verify_kernels_for(), which launch nothing.
inline KVBufferVerifyParams unread_verify_params(const GdnShape& s, int batch, int m, int buffer_size,
                                                 OutputDtype o_dtype) {
  alignas(16) static int32_t unread[4] = {};
  KVBufferVerifyParams p =
      token_launch<KVBufferVerifyParams>(s, batch, unread_token_inputs(m), unread, unread, o_dtype);
  p.pool = unread_pool(unread, 4, buffer_size - 1 + m, buffer_size);
  p.group_arrivals = unread;
  return p;
}

using kvb::DeviceTokens;  // harness/workloads/device_tokens.h

/// Sets every byte of `b` to 0xff: NaN in fp32 and bf16, so that an element read before it is written, or left
/// unwritten, shows up in a comparison (ref::max_rel_err gives +inf for NaN).
template <typename T>
void poison(const DeviceBuffer<T>& b) {
  KVB_CUDA_CHECK(cudaMemset(b.get(), 0xff, b.bytes()));
}

/// Output rows [N][HV][V] as double; NaN marks unwritten poison.
inline std::vector<double> outputs(const void* o, size_t n, OutputDtype dt) {
  std::vector<double> r(n);
  if (dt == OutputDtype::fp32) {
    const auto h = download(static_cast<const float*>(o), n);
    for (size_t i = 0; i < n; ++i) r[i] = h[i];
  } else {
    const auto h = download(static_cast<const bf16*>(o), n);
    for (size_t i = 0; i < n; ++i) r[i] = __bfloat162float(h[i]);
  }
  return r;
}

inline bool all_finite(const std::vector<double>& x) {
  for (double v : x)
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace kvb::test
