// The short_context experiment kind on the CPU: the committed config's grid, axis validation, the memory-per-request
// columns, and the byte model of stateless decode and prefill (harness/kinds/short_context_runner.h,
// byte_model/byte_model.h, experiments/short_context.toml).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/kinds/registry.h"
#include "harness/kinds/short_context_runner.h"
#include "harness/sweep/config.h"
#include "harness/sweep/grid.h"
#include "byte_model/byte_model.h"

namespace kvb {
namespace {

TEST(ShortContextConfig, GridHasOneRecurrentRowPerBatchAndEveryKVBufferPoint) {
  const ExperimentKind& kind = find_experiment_kind("short_context");
  const SweepConfig c = load_sweep_config(std::string(KVB_SOURCE_DIR) + "/experiments/short_context.toml");
  EXPECT_EQ(c.kind, "short_context");
  const std::vector<Point> points = make_grid(kind, resolve_axes(kind, c, {}));
  // 15 context lengths (1 .. 4096 and the materialising 15, 63) x 2 batches x 2 buffer sizes for KVBuffer; recurrent
  // once per batch.
  ASSERT_EQ(points.size(), 2u + 15 * 2 * 2);
  int recurrent = 0, stateless = 0;
  for (const Point& p : points) {
    const bool kvb = p.get("variant") == "kvbuffer";
    EXPECT_EQ(p.get("context_len").empty(), !kvb) << p.label();
    EXPECT_EQ(p.get("buffer_size").empty(), !kvb) << p.label();
    EXPECT_EQ(p.get("layers"), "36");
    EXPECT_EQ(kind.validate(p), "") << p.label();
    if (!kvb) ++recurrent;
    else if (p.get_int("context_len") < p.get_int("buffer_size")) ++stateless;
  }
  EXPECT_EQ(recurrent, 2);
  EXPECT_EQ(stateless, 2 * (5 + 8));  // B = 16: L = 1 .. 8, 15; B = 64: L = 1 .. 32, 63; per batch
  for (const char* col : {"stateless", "state_bytes_per_request", "buffer_bytes_per_request", "latency_us_median"})
    EXPECT_NE(std::find(kind.result_columns.begin(), kind.result_columns.end(), col), kind.result_columns.end()) << col;
}

TEST(ShortContextConfig, BadContextLengthsNameTheAxis) {
  const ExperimentKind& kind = find_experiment_kind("short_context");
  const SweepConfig c = parse_sweep_config("[experiment]\nname = \"s\"\nkind = \"short_context\"\n", "s.toml");
  for (const char* set : {"context_len=0", "context_len=65537", "context_len=x"}) {
    try {
      resolve_axes(kind, c, {parse_axis_override(set)});
      ADD_FAILURE() << set << " was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("context_len"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(resolve_axes(kind, c, {parse_axis_override("context_len=1,65536")}));
}

TEST(ShortContextMemory, PerRequestBytesOverAllLayers) {
  const GdnShape s;  // Qwen3-Next TP1
  EXPECT_DOUBLE_EQ(state_bytes_per_request(s, 36, false), 36.0 * 2 * 1024 * 1024);  // 72 MiB
  EXPECT_DOUBLE_EQ(state_bytes_per_request(s, 36, true), 0.0);
  const double entry = 16 * 128 * 2 + 32 * 128 * 4 + 32 * 4;
  EXPECT_DOUBLE_EQ(buffer_bytes_per_request(s, 36, 16), 36.0 * 15 * entry);
  EXPECT_DOUBLE_EQ(buffer_bytes_per_request(s, 36, 1), 36.0 * 1 * entry);
  EXPECT_DOUBLE_EQ(buffer_bytes_per_request(s, 36, 0), 0.0);
}

TEST(ShortContextBytes, StatelessDecodeReadsOnlyItsBuffer) {
  const GdnShape s;
  const double entry = kvbuffer_entry_bytes(s), state = double(s.state_bytes());
  const ByteCount io = decode_io_bytes(s, 64, OutputDtype::bf16);
  for (int n : {0, 1, 7, 14}) {
    const ByteCount b = kvbuffer_stateless_decode_bytes(s, 64, 16, n, OutputDtype::bf16);
    EXPECT_DOUBLE_EQ(b.read, io.read + 64 * (n * entry + 9)) << n;  // no checkpoint
    EXPECT_DOUBLE_EQ(b.write, io.write + 64 * entry) << n;
    // Against the stateful step at the same position: exactly the checkpoint read less (plus 5 index bytes).
    const ByteCount full = kvbuffer_decode_bytes(s, 64, 16, n, OutputDtype::bf16);
    EXPECT_DOUBLE_EQ(full.read - b.read, 64 * (state - 5)) << n;
  }
  // The flush step materialises the state: written, not read.
  const ByteCount f = kvbuffer_stateless_decode_bytes(s, 64, 16, 15, OutputDtype::bf16);
  EXPECT_DOUBLE_EQ(f.write, io.write + 64 * state);
  EXPECT_DOUBLE_EQ(f.read, io.read + 64 * (15 * entry + 9));
  // At Qwen3-Next shapes a full 63-entry buffer is still under half the recurrent step's bytes.
  EXPECT_LT(kvbuffer_stateless_decode_bytes(s, 64, 64, 62, OutputDtype::bf16).total(),
            0.5 * recurrent_decode_bytes(s, 64, OutputDtype::bf16).total());
}

TEST(ShortContextBytes, PrefillWritesEntriesOrTheMaterialisedState) {
  const GdnShape s;
  const ByteCount io = token_io_bytes(s, 8 * 5, OutputDtype::fp32);
  const ByteCount b = kvbuffer_prefill_bytes(s, 8, 5, 16, OutputDtype::fp32);
  EXPECT_DOUBLE_EQ(b.read, io.read + 8 * 12 + gate_param_bytes(s));
  EXPECT_DOUBLE_EQ(b.write, io.write + 8 * 5 * kvbuffer_entry_bytes(s));
  const ByteCount t = kvbuffer_prefill_bytes(s, 8, 16, 16, OutputDtype::fp32);
  EXPECT_DOUBLE_EQ(t.write, token_io_bytes(s, 8 * 16, OutputDtype::fp32).write + 8 * double(s.state_bytes()));
}

}  // namespace
}  // namespace kvb
