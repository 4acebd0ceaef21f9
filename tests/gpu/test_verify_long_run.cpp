// KVBuffer verify + accept over hundreds of speculative rounds at the Qwen3-Next shape (H = 16, HV = 32, K = V = 128),
// one test per draft count, against the float64 reference: every round's outputs and buffer entries, every checkpoint
// a due row's fold writes, and every slot's materialised state now and then; the state error must not grow
// (DESIGN.md section 4: 2e-5 after any number of steps, no growing trend).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/tolerances.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/kvbuffer_rig.h"

namespace kvb {
namespace {

using test::KVBufferRig;

constexpr int kSlots = 4;
constexpr int kBufferSize = 8;
constexpr int kRounds = 256;
constexpr int kStateCheckEvery = 64;  ///< rounds between checks of every slot's materialised state

/// Drafts slot `slot` accepts in round `round`: slot 0 every draft (so its buffer is due, and folded, every
/// ceil(B / m) rounds), the others stepping through 0..m at strides 1, 3, 5.
int accepted_at(int slot, int round, int m) { return slot == 0 ? m : (round * (2 * slot - 1) + slot) % (m + 1); }

/// The rows of round `round`: every slot, rotated by the round; odd rounds put padding rows in front up to
/// `padded_rows`, so that the launch takes the production batch's whole-head blocks.
std::vector<int32_t> round_rows(int round, int padded_rows) {
  std::vector<int32_t> rows(round % 2 == 1 ? padded_rows - kSlots : 0, -1);
  for (int i = 0; i < kSlots; ++i) rows.push_back((i + round) % kSlots);
  return rows;
}

class KVBufferVerifyLongRunGpu : public ::testing::TestWithParam<int> {};

TEST_P(KVBufferVerifyLongRunGpu, HundredsOfRoundsMatchReferenceWithoutGrowingError) {
  KVB_REQUIRE_GPU();
  const int m = GetParam(), B = kBufferSize;
  const GdnShape s{16, 32, 128, 128};
  const int padded_rows = std::max(test::whole_head_rows(s), kSlots + 1);
  for (const VerifyKernel k :
       test::verify_kernels_for(test::unread_verify_params(s, kSlots, m, B, OutputDtype::fp32))) {
    SCOPED_TRACE(test::verify_case(k, B, m));
    KVBufferRig rig(s, kSlots, B, 7000 + m, m, padded_rows);
    rig.decode_to_positions({0, 2, 5, B - 1});
    test::RunErrors err;  // per round: the larger of its delta and folded-checkpoint errors
    int folded = 0;
    for (int round = 0; round < kRounds; ++round) {
      const std::vector<int32_t> rows = round_rows(round, padded_rows);
      std::vector<int32_t> acc(rows.size(), 0);
      for (size_t r = 0; r < rows.size(); ++r)
        if (rows[r] >= 0) acc[r] = accepted_at(rows[r], round, m);
      test::RoundLaunch launch;
      launch.kernel = k;
      launch.o_dtype = (round / 2) % 2 == 1 ? OutputDtype::bf16 : OutputDtype::fp32;  // with and without padding
      launch.materialised_states = false;
      SCOPED_TRACE(fmt::format("round {} ({} rows, {} outputs)", round, rows.size(), to_string(launch.o_dtype)));
      test::RoundErrors e;
      test::verify_accept_round(rig, rows, m, acc, launch, &e);
      if ((round + 1) % kStateCheckEvery == 0) {
        EXPECT_LE(rig.state_err(), tol::kStateFp32) << "materialised states after the round";
      }
      if (::testing::Test::HasFailure()) return;  // the first failing round says it all
      err.state.push_back(e.state());
      folded += e.folded;
    }
    EXPECT_GE(folded, kRounds / B - 1) << "slot 0, accepting every draft, is due every ceil(B / m) rounds";
    EXPECT_GT(err.max_state(), 0.0);
    const size_t q = kRounds / 4;
    const double first = test::RunErrors::peak(err.state, 0, q);
    const double last = test::RunErrors::peak(err.state, 3 * q, kRounds);
    EXPECT_LE(last, 3 * first + 1e-7) << "the state error grows: largest " << first << " in the first quarter of the "
                                      << "rounds, " << last << " in the last";
    RecordProperty(std::string("max_state_err_") + to_string(k), fmt::format("{:.3g}", err.max_state()));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDraftCount, KVBufferVerifyLongRunGpu, ::testing::Range(1, kMaxDraftTokens + 1),
                         [](const ::testing::TestParamInfo<int>& info) { return "m" + std::to_string(info.param); });

}  // namespace
}  // namespace kvb
