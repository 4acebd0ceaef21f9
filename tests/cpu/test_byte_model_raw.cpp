// The raw-form byte model (byte_model/byte_model_raw.h) against hand-computed values, and the memory a raw buffer of 64
// entries holds per request against the fp32 state.
#include <gtest/gtest.h>

#include "byte_model/byte_model_raw.h"

namespace kvb {
namespace {

GdnShape qwen3_next() { return GdnShape{16, 32, 128, 128}; }

TEST(ByteModelRaw, EntryAndMemoryPerRequest) {
  // Key 16*128*2 = 4096, value 32*128*2 = 8192, a and b 2*32*2 = 128 -> 12416 (delta form: 20608).
  EXPECT_DOUBLE_EQ(raw_entry_bytes(qwen3_next()), 12416.0);
  EXPECT_DOUBLE_EQ(raw_entry_bytes(GdnShape{2, 4, 64, 48}), 2 * 64 * 2 + 4 * 48 * 2 + 2 * 4 * 2);
  // L = 64: 794,624 B against the 2,097,152 B fp32 state: at most half (0.379).
  const GdnShape s = qwen3_next();
  EXPECT_DOUBLE_EQ(raw_buffer_bytes(s, 64), 794624.0);
  EXPECT_LE(raw_buffer_bytes(s, 64) / double(s.state_bytes()), 0.5);
  EXPECT_NEAR(raw_buffer_bytes(s, 64) / double(s.state_bytes()), 0.3789, 1e-4);
}

TEST(ByteModelRaw, DecodeStepsAndCycle) {
  const GdnShape s = qwen3_next();
  const ByteCount io = decode_io_bytes(s, 8, OutputDtype::bf16);
  const ByteCount a = kvbuffer_raw_decode_bytes(s, 8, 16, 5, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(a.read, io.read + 8.0 * (2097152 + 5 * 12416 + 4));
  EXPECT_DOUBLE_EQ(a.write, io.write + 8.0 * 12416);
  const ByteCount f = kvbuffer_raw_decode_bytes(s, 8, 16, 15, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(f.read, io.read + 8.0 * (2097152 + 15 * 12416 + 4));
  EXPECT_DOUBLE_EQ(f.write, io.write + 8.0 * 2097152);
  const ByteCount c = kvbuffer_raw_decode_cycle_bytes(s, 8, 4, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(c.read, io.read + 8.0 * (2097152 + 1.5 * 12416 + 4));
  EXPECT_DOUBLE_EQ(c.write, io.write + 8.0 * (2097152 + 3 * 12416) / 4);
  // Fewer bytes than the delta form whenever entries are read or written.
  EXPECT_LT(kvbuffer_raw_decode_cycle_bytes(s, 8, 16, OutputDtype::bf16).total(),
            kvbuffer_decode_cycle_bytes(s, 8, 16, OutputDtype::bf16).total());
}

TEST(ByteModelRaw, VerifyAndAccept) {
  const GdnShape s = qwen3_next();
  const ByteCount io = token_io_bytes(s, 4, OutputDtype::bf16);
  const ByteCount v = kvbuffer_raw_verify_bytes(s, 3, 4, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(v.read, io.read + 2097152 + 3 * 12416 + 8);
  EXPECT_DOUBLE_EQ(v.write, io.write);  // no deltas written
  EXPECT_DOUBLE_EQ(kvbuffer_raw_accept_bytes(s, 3, 0, 8).total(), 12.0);
  const ByteCount app = kvbuffer_raw_accept_bytes(s, 3, 2, 8);
  EXPECT_DOUBLE_EQ(app.read, 12 + 2 * 12416.0);
  EXPECT_DOUBLE_EQ(app.write, 2 * 12416.0);
  const ByteCount fold = kvbuffer_raw_accept_bytes(s, 6, 3, 8);
  EXPECT_DOUBLE_EQ(fold.read, 12 + 2097152 + 9 * 12416.0);
  EXPECT_DOUBLE_EQ(fold.write, 2097152.0);
}

}  // namespace
}  // namespace kvb
