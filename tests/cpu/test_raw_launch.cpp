// Host-side choices of the raw decode launcher (kernels/kvbuffer_raw_launch.h), no device needed: the shared memory
// of one block at the sweep's configurations, which sets the blocks per SM, and the 48 KiB rule of
// raw_allow_smem (static bytes count toward the default limit).
#include <gtest/gtest.h>

#include "kernels/kvbuffer_raw_launch.h"

namespace kvb {
namespace {

constexpr size_t kSmemPerSm = 228 * 1024;     // H200 (sm_90): shared memory per SM
constexpr size_t kReservedPerBlock = 1024;    // reserved by the system per resident block
constexpr size_t kMaxPerBlock = 227 * 1024;   // largest opt-in dynamic shared memory per block

size_t blocks_per_sm(size_t smem) { return kSmemPerSm / (smem + kReservedPerBlock); }

// Qwen3-Next TP1 at batch 64 and 256 (64-column slices): the chain kernel keeps as many blocks per SM as the delta
// form (6 at B <= 4, 5 at B = 8 and 16; kernels/kvbuffer_decode.cu holds the slice plus B - 1 fp32 deltas).
TEST(RawDecodeLaunch, ChainKernelBlocksPerSmAtTheSweepConfigurations) {
  if (raw_decode_kernel() != RawDecodeKernel::chain) GTEST_SKIP() << "KVB_RAW_DECODE=gram";
  const GdnShape s{16, 32, 128, 128};
  for (int batch : {64, 256}) {
    EXPECT_EQ(raw_slice_width(batch, s), 64) << "batch " << batch;
    EXPECT_GE(blocks_per_sm(raw_decode_block_smem(s, batch, 2)), 6u) << "batch " << batch;
    EXPECT_GE(blocks_per_sm(raw_decode_block_smem(s, batch, 4)), 6u) << "batch " << batch;
    EXPECT_GE(blocks_per_sm(raw_decode_block_smem(s, batch, 8)), 5u) << "batch " << batch;
    EXPECT_GE(blocks_per_sm(raw_decode_block_smem(s, batch, 16)), 5u) << "batch " << batch;
    EXPECT_GE(blocks_per_sm(raw_decode_block_smem(s, batch, 32)), 4u) << "batch " << batch;
    EXPECT_GE(blocks_per_sm(raw_decode_block_smem(s, batch, 64)), 3u) << "batch " << batch;
  }
}

TEST(RawDecodeLaunch, EveryHeadSizeAndBufferSizeFitsOneBlock) {
  for (int K : {32, 64, 128, 256})
    for (int V : {48, 64, 128})
      for (int batch : {1, 64, 256})
        for (int B = 1; B <= kMaxRawBuffer; ++B) {
          const size_t smem = raw_decode_block_smem(GdnShape{2, 4, K, V}, batch, B);
          EXPECT_GT(smem, 0u);
          EXPECT_LE(smem, kMaxPerBlock) << "K " << K << " V " << V << " batch " << batch << " B " << B;
        }
  EXPECT_EQ(raw_decode_block_smem(GdnShape{2, 4, 96, 128}, 64, 4), 0u);
}

// The default limit is 48 KiB for static and dynamic shared memory together: a kernel with 2 KiB of static arrays
// asking for 47 KiB dynamic needs the attribute raised (the batch 64, B = 4 launch that failed), so the helper must
// call cudaFuncSetAttribute -- here on a null kernel, which the runtime rejects (with or without a device), proving
// the call was made; within the limit it returns success without any call.
TEST(RawDecodeLaunch, SharedMemoryRuleCountsStaticBytes) {
  const void* none = nullptr;
  EXPECT_EQ(raw_allow_smem(none, 46 * 1024, 2 * 1024), cudaSuccess);
  EXPECT_NE(raw_allow_smem(none, 47 * 1024, 2 * 1024), cudaSuccess);
  EXPECT_NE(raw_allow_smem(none, 49 * 1024, 0), cudaSuccess);
}

}  // namespace
}  // namespace kvb
