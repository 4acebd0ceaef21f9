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

}  // namespace
}  // namespace kvb
