// GPU test of warp_sum_scatter (kernels/gdn_device.cuh): P values summed over a warp at once, lane l ending with the
// total of value l / (32 / P), against host sums for every P it takes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/gdn_device.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

/// One warp: lane l loads its P values from in[l * P ..], sums them with warp_sum_scatter, writes out[l].
template <int P>
__global__ void warp_sum_scatter_kernel(const float* in, float* out) {
  float v[P];
  for (int i = 0; i < P; ++i) v[i] = in[threadIdx.x * P + i];
  out[threadIdx.x] = dev::warp_sum_scatter<P>(v);
}

template <int P>
void check_warp_sum_scatter() {
  std::mt19937 rng(1234 + P);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> in(32 * P);
  for (float& x : in) x = dist(rng);
  const DeviceBuffer<float> d_in = upload(in);
  DeviceBuffer<float> d_out(32);
  KVB_CUDA_CHECK(cudaMemset(d_out.get(), 0xff, 32 * sizeof(float)));  // NaN poison: every lane must write
  warp_sum_scatter_kernel<P><<<1, 32>>>(d_in.get(), d_out.get());
  KVB_CUDA_CHECK(cudaGetLastError());
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> out = download(d_out.get(), 32);
  for (int lane = 0; lane < 32; ++lane) {
    const int value = lane / (32 / P);
    double sum = 0, mag = 0;
    for (int l = 0; l < 32; ++l) {
      sum += in[l * P + value];
      mag += std::fabs(in[l * P + value]);
    }
    EXPECT_NEAR(out[lane], sum, 1e-6 * mag) << "P = " << P << ", lane " << lane << " (value " << value << ")";
  }
}

TEST(WarpSumScatterGpu, EveryLaneGetsItsValuesTotal) {
  KVB_REQUIRE_GPU();
  check_warp_sum_scatter<1>();
  check_warp_sum_scatter<2>();
  check_warp_sum_scatter<4>();
  check_warp_sum_scatter<8>();
  check_warp_sum_scatter<16>();
  check_warp_sum_scatter<32>();
}

}  // namespace
}  // namespace kvb
