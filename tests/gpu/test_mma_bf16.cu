// GPU test of the bf16 tensor-core helpers (kernels/mma_tf32.cuh): split_bf16x3 splits fp32 values into three bf16
// parts that sum back to within 2^-24 of each value, and mma_bf16 over those parts (A: 16 x 16 fp32 values split,
// B: 16 x 8 bf16 values, exact) gives the fp32 product A B, against a float64 product on the host, on the fragment
// layouts the header documents.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/mma_tf32.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace kvb {
namespace {

/// One warp: D = C + A B with A (16 x 16, fp32, row-major) split in three bf16 parts (three m16n8k16 products, the
/// small parts first), B (16 x 8, bf16 bits, row-major: B[k][n]), C and D (16 x 8, fp32, row-major); parts[i] gets
/// hi + mid + lo of A's element i as the split left it.
__global__ void mma_bf16_kernel(const float* a, const uint16_t* b, const float* c, float* d, float* parts) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  // Word w of A: rows g (w even) or g + 8, columns 2t, 2t + 1 (w < 2) or 2t + 8, 2t + 9.
  uint32_t hi[4], mid[4], lo[4];
  for (int w = 0; w < 4; ++w) {
    const int r = g + 8 * (w % 2), k = 2 * t + 8 * (w / 2);
    const dev::Bf16x3Word s = dev::split_bf16x3(a[r * 16 + k], a[r * 16 + k + 1]);
    hi[w] = s.hi;
    mid[w] = s.mid;
    lo[w] = s.lo;
    const auto low = [](uint32_t x) { return __uint_as_float(x << 16); };
    const auto high = [](uint32_t x) { return __uint_as_float(x & 0xffff0000u); };
    parts[r * 16 + k] = low(s.hi) + (low(s.mid) + low(s.lo));
    parts[r * 16 + k + 1] = high(s.hi) + (high(s.mid) + high(s.lo));
  }
  const uint32_t b0 = b[(2 * t) * 8 + g] | uint32_t(b[(2 * t + 1) * 8 + g]) << 16;
  const uint32_t b1 = b[(2 * t + 8) * 8 + g] | uint32_t(b[(2 * t + 9) * 8 + g]) << 16;
  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  dev::mma_bf16(acc, lo, b0, b1);
  dev::mma_bf16(acc, mid, b0, b1);
  dev::mma_bf16(acc, hi, b0, b1);
  d[g * 8 + 2 * t] = acc[0];
  d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2];
  d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

uint16_t bf16_bits(float x) {  // x truncated to bf16 (its top 16 bits): an exact bf16 value
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t(u >> 16);
}
float from_bf16_bits(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST(MmaBf16Gpu, SplitAndProductMatchFloat64) {
  KVB_REQUIRE_GPU();
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> a(16 * 16), c(16 * 8);
  std::vector<uint16_t> b(16 * 8);
  for (int i = 0; i < 256; ++i) a[i] = dist(rng) * std::ldexp(1.f, int(rng() % 40) - 20);  // magnitudes 2^-20 .. 2^19
  for (uint16_t& x : b) x = bf16_bits(dist(rng));
  for (float& x : c) x = dist(rng);
  const DeviceBuffer<float> d_a = upload(a), d_c = upload(c);
  const DeviceBuffer<uint16_t> d_b = upload(b);
  DeviceBuffer<float> d_d(16 * 8), d_parts(256);
  KVB_CUDA_CHECK(cudaMemset(d_d.get(), 0xff, 16 * 8 * sizeof(float)));  // NaN poison: every element must be written
  KVB_CUDA_CHECK(cudaMemset(d_parts.get(), 0xff, 256 * sizeof(float)));
  mma_bf16_kernel<<<1, 32>>>(d_a.get(), d_b.get(), d_c.get(), d_d.get(), d_parts.get());
  KVB_CUDA_CHECK(cudaGetLastError());
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> d = download(d_d.get(), 16 * 8), parts = download(d_parts.get(), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_LE(std::fabs(double(parts[i]) - a[i]), std::ldexp(std::fabs(double(a[i])), -24)) << "A element " << i;
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      double want = c[r * 8 + n], mag = std::fabs(want);
      for (int k = 0; k < 16; ++k) {
        const double p = double(a[r * 16 + k]) * from_bf16_bits(b[k * 8 + n]);
        want += p;
        mag += std::fabs(p);
      }
      EXPECT_NEAR(d[r * 8 + n], want, 2e-6 * mag) << "D[" << r << "][" << n << "]";
    }
}

}  // namespace
}  // namespace kvb
