// The KVBuffer verify launcher's whole grid against the float64 reference at a production batch: the Qwen3-Next
// shape (H = 16, HV = 32, K = V = 128) with enough rows for whole value heads, every draft count (one test each) and
// buffer sizes 1 to 16 and 32, so that every kernel variant the launcher picks (keys staged in shared memory, packed
// draft rows, keys read from the pool; kernels/kvbuffer_verify.cu, launch_verify_tile) meets rows at every buffer
// position and due rows that it folds.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kvbuffer_rig.h"

namespace kvb {
namespace {

using test::KVBufferRig;

/// Buffer sizes of the grid.
std::vector<int> grid_buffer_sizes() {
  std::vector<int> b(16);
  std::iota(b.begin(), b.end(), 1);
  b.push_back(32);
  return b;
}

class VerifyLaunchGridGpu : public ::testing::TestWithParam<int> {};

// Row r sits at buffer position B - 1 - (r mod B): every position, the fullest rows first. Round 0 accepts
// m - (r mod (m + 1)) drafts of row r (every count from m down to 0), so row 0 and the other full rows reach B or
// more entries: due. Round 1 folds them and accepts r + 1 mod (m + 1). Outputs alternate between bf16 and fp32 by
// round, starting from bf16 at even B, so that both output types meet folding rounds.
TEST_P(VerifyLaunchGridGpu, EveryBufferSizeMatchesReferenceAtAProductionBatch) {
  KVB_REQUIRE_GPU();
  const int m = GetParam();
  const GdnShape s{16, 32, 128, 128};
  for (const int B : grid_buffer_sizes()) {
    const int rows = std::max(test::whole_head_rows(s), B);  // at least one row at every buffer position
    KVBufferVerifyParams probe = test::unread_verify_params(s, rows, m, B, OutputDtype::bf16);
    for (const VerifyKernel k : test::verify_kernels_for(probe)) {
      probe.kernel = k;
      KVBufferVerifyLaunch d;
      ASSERT_EQ(describe_kvbuffer_verify_launch(probe, d), cudaSuccess) << test::verify_case(k, B, m);
      SCOPED_TRACE(test::verify_case(k, B, m) + ", " + std::to_string(rows) + " rows, " + test::launch_words(d));
      if (k == VerifyKernel::cuda_cores) {
        ASSERT_GE(d.smem_bytes, size_t(128) * 128 * sizeof(float)) << "not a whole-head launch";
      }
      KVBufferRig rig(s, rows, B, 20000 + 100 * m + B, m, rows);
      std::vector<int> positions(rows);
      for (int r = 0; r < rows; ++r) positions[r] = B - 1 - r % B;
      rig.decode_to_positions(positions);
      std::vector<int32_t> slots(rows);
      std::iota(slots.begin(), slots.end(), 0);
      for (int round = 0; round < 2; ++round) {
        std::vector<int32_t> acc(rows);
        for (int r = 0; r < rows; ++r) acc[r] = round == 0 ? m - r % (m + 1) : (r + 1) % (m + 1);
        test::RoundLaunch launch;
        launch.kernel = k;
        launch.o_dtype = (B + round) % 2 == 0 ? OutputDtype::bf16 : OutputDtype::fp32;
        launch.materialised_states = false;  // the folded checkpoints and every entry are checked instead
        SCOPED_TRACE(fmt::format("round {} ({} outputs)", round, to_string(launch.o_dtype)));
        test::RoundErrors e;
        test::verify_accept_round(rig, slots, m, acc, launch, &e);
        if (round == 1) {
          EXPECT_GT(e.folded, 0) << "round 0 left row 0 due: round 1 must fold it";
        }
        if (::testing::Test::HasFailure()) return;  // one failing case at a time
      }
      EXPECT_LE(rig.checkpoints_err(), tol::kStateFp32) << "checkpoints after both rounds (a fold changes a due row's)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDraftCount, VerifyLaunchGridGpu, ::testing::Range(1, kMaxDraftTokens + 1),
                         [](const ::testing::TestParamInfo<int>& info) { return "m" + std::to_string(info.param); });

}  // namespace
}  // namespace kvb
