// The byte model (byte_model/byte_model.h) against hand-computed values for two shapes, and the floor rule.
#include <gtest/gtest.h>

#include "byte_model/byte_model.h"

namespace kvb {
namespace {

GdnShape qwen3_next() { return GdnShape{16, 32, 128, 128}; }
GdnShape small_shape() { return GdnShape{2, 4, 64, 48}; }

TEST(ByteModel, RecurrentDecodeByHand) {
  // Qwen3-Next, 64 rows, bf16 output. State 32*128*128*4 = 2 MiB read and written per row.
  // Per row in: q, k 2*16*128*2 = 8192; v 32*128*2 = 8192; a, b 2*32*2 = 128; slot 4 -> 16516.
  // Out: 32*128*2 = 8192. Per launch: A_log, dt_bias 2*32*4 = 256.
  const ByteCount b = recurrent_decode_bytes(qwen3_next(), 64, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(b.read, 64.0 * (2097152 + 16516) + 256);
  EXPECT_DOUBLE_EQ(b.write, 64.0 * (2097152 + 8192));
  // Small shape, 3 rows, fp32 output: state 4*64*48*4 = 49152; in 2*2*64*2 + 4*48*2 + 2*4*2 + 4 = 512+384+16+4 = 916;
  // out 4*48*4 = 768; gates 2*4*4 = 32.
  const ByteCount s = recurrent_decode_bytes(small_shape(), 3, OutputDtype::fp32);
  EXPECT_DOUBLE_EQ(s.read, 3.0 * (49152 + 916) + 32);
  EXPECT_DOUBLE_EQ(s.write, 3.0 * (49152 + 768));
}

TEST(ByteModel, KVBufferEntryAndSteps) {
  // Entry: keys 16*128*2 = 4096, deltas 32*128*4 = 16384, log-decay 32*4 = 128 -> 20608.
  EXPECT_DOUBLE_EQ(kvbuffer_entry_bytes(qwen3_next()), 20608.0);
  EXPECT_DOUBLE_EQ(kvbuffer_entry_bytes(small_shape()), 2 * 64 * 2 + 4 * 48 * 4 + 4 * 4);
  const GdnShape s = qwen3_next();
  const ByteCount io = decode_io_bytes(s, 8, OutputDtype::bf16);
  // Fill 5 of B = 16: checkpoint + 5 entries + fill read; one entry appended.
  const ByteCount a = kvbuffer_decode_bytes(s, 8, 16, 5, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(a.read, io.read + 8.0 * (2097152 + 5 * 20608 + 4));
  EXPECT_DOUBLE_EQ(a.write, io.write + 8.0 * 20608);
  // Fill 15 of B = 16: the flush writes the checkpoint instead of an entry.
  const ByteCount f = kvbuffer_decode_bytes(s, 8, 16, 15, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(f.read, io.read + 8.0 * (2097152 + 15 * 20608 + 4));
  EXPECT_DOUBLE_EQ(f.write, io.write + 8.0 * 2097152);
  // Cycle mean over B = 4: entries read (0+1+2+3)/4, one checkpoint write and three appends per four steps.
  const ByteCount c = kvbuffer_decode_cycle_bytes(s, 8, 4, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(c.read, io.read + 8.0 * (2097152 + 1.5 * 20608 + 4));
  EXPECT_DOUBLE_EQ(c.write, io.write + 8.0 * (2097152 + 3 * 20608) / 4);
  // B = 1 is the recurrent step plus the fill read.
  const ByteCount one = kvbuffer_decode_cycle_bytes(s, 8, 1, OutputDtype::bf16);
  const ByteCount rec = recurrent_decode_bytes(s, 8, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(one.read, rec.read + 8 * 4);
  EXPECT_DOUBLE_EQ(one.write, rec.write);
  EXPECT_DOUBLE_EQ(kvbuffer_advance_bytes(10).total(), 120.0);
}

TEST(ByteModel, FloorPairsWritesWithReadsAtCopyBandwidth) {
  ByteCount b;
  b.read = 4e9;
  b.write = 1e9;
  // 2e9 paired bytes at 4000 GB/s = 0.5 ms, 3e9 remaining reads at 5000 GB/s = 0.6 ms.
  EXPECT_NEAR(floor_us(b, 4000, 5000), 1100.0, 1e-9);
  b.read = 1e9;
  b.write = 1e9;
  EXPECT_NEAR(floor_us(b, 4000, 5000), 500.0, 1e-9);
}

// bf16 states: every state, checkpoint and intermediate-state term halves, nothing else moves.
TEST(ByteModel, Bf16StatesHalveEveryStateTermOnly) {
  const GdnShape s = qwen3_next();
  const double half = double(s.state_bytes()) / 2;  // 1 MiB
  const auto expect_less = [&](const ByteCount& wide, const ByteCount& narrow, double read, double write,
                               const char* what) {
    EXPECT_DOUBLE_EQ(wide.read - narrow.read, read) << what;
    EXPECT_DOUBLE_EQ(wide.write - narrow.write, write) << what;
  };
  const OutputDtype o = OutputDtype::bf16;
  const StateDtype b16 = StateDtype::bf16;
  expect_less(recurrent_decode_bytes(s, 64, o), recurrent_decode_bytes(s, 64, o, b16), 64 * half, 64 * half,
              "recurrent decode");
  expect_less(kvbuffer_decode_bytes(s, 8, 16, 3, o), kvbuffer_decode_bytes(s, 8, 16, 3, o, b16), 8 * half, 0,
              "kvbuffer decode, appending");
  expect_less(kvbuffer_decode_bytes(s, 8, 16, 15, o), kvbuffer_decode_bytes(s, 8, 16, 15, o, b16), 8 * half,
              8 * half, "kvbuffer decode, flushing");
  expect_less(kvbuffer_decode_cycle_bytes(s, 4, 8, o), kvbuffer_decode_cycle_bytes(s, 4, 8, o, b16), 4 * half,
              4 * half / 8, "kvbuffer decode, cycle");
  expect_less(kvbuffer_stateless_decode_bytes(s, 2, 4, 3, o), kvbuffer_stateless_decode_bytes(s, 2, 4, 3, o, b16), 0,
              2 * half, "stateless flush");
  expect_less(kvbuffer_prefill_bytes(s, 2, 4, 4, o), kvbuffer_prefill_bytes(s, 2, 4, 4, o, b16), 0, 2 * half,
              "prefill to a state");
  expect_less(recurrent_verify_bytes(s, 4, 3, o), recurrent_verify_bytes(s, 4, 3, o, b16), 4 * half, 12 * half,
              "recurrent verify");
  expect_less(recurrent_accept_bytes(s, 2), recurrent_accept_bytes(s, 2, b16), half, half, "recurrent accept");
  expect_less(recurrent_accept_bytes(s, 0), recurrent_accept_bytes(s, 0, b16), 0, 0, "recurrent accept, none");
  expect_less(kvbuffer_verify_bytes(s, 5, 4, 16, o), kvbuffer_verify_bytes(s, 5, 4, 16, o, b16), half, 0,
              "kvbuffer verify");
  expect_less(kvbuffer_verify_bytes(s, 16, 4, 16, o), kvbuffer_verify_bytes(s, 16, 4, 16, o, b16), half, half,
              "kvbuffer verify, due");
}

}  // namespace
}  // namespace kvb
