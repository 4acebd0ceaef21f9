// Float64 reference with stored states in bf16 (StateDtype): rounding where a kernel stores, and only there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "reference/bf16.h"
#include "reference/gdn_reference.h"
#include "reference/qwen3_next_inputs.h"
#include "reference_test_support.h"

namespace kvb::ref {
namespace {

GdnShape test_shape() { return GdnShape{2, 4, 32, 48}; }

/// Seeded inputs at the test shape, and a start state as a bf16 pool holds it.
struct Bf16Start {
  GdnShape s = test_shape();
  Qwen3NextInputs in;
  GateParams p;
  std::vector<double> state;
  explicit Bf16Start(uint64_t seed) : in(s, seed), p(in.gate_params()), state(in.state()) {
    round_stored_state(state, StateDtype::bf16);
  }
  std::vector<TokenPrepared> tokens(int n) { return prepared_tokens(s, p, n, in.rng()); }
};

bool all_bf16(const std::vector<double>& x) {
  for (double v : x)
    if (v != round_to_bf16(v)) return false;
  return true;
}

TEST(StateDtype, NamesAndBytes) {
  const GdnShape s{16, 32, 128, 128};
  EXPECT_EQ(s.state_bytes(StateDtype::fp32), s.state_bytes());
  EXPECT_EQ(s.state_bytes(StateDtype::bf16), s.state_bytes() / 2);
  EXPECT_EQ(state_elem_bytes(StateDtype::bf16), 2);
  EXPECT_STREQ(to_string(StateDtype::bf16), "bf16");
  EXPECT_STREQ(to_string(StateDtype::fp32), "fp32");
}

// One token: the output comes from the unrounded state, the stored state is that state rounded element by element.
TEST(StoredState, RecurrentDecodeRoundsOnlyWhatItStores) {
  Bf16Start x(71);
  const GdnShape s = x.s;
  const std::vector<double> start = x.state;
  const TokenPrepared t = x.tokens(1)[0];
  std::vector<double> wide = start, narrow = start, o_wide, o_narrow;
  recurrent_decode(s, t, wide, o_wide);
  recurrent_decode(s, t, narrow, o_narrow, StateDtype::bf16);
  EXPECT_EQ(o_wide, o_narrow);
  ASSERT_TRUE(all_bf16(narrow));
  std::vector<double> rounded = wide;
  round_stored_state(rounded, StateDtype::bf16);
  EXPECT_EQ(narrow, rounded);
  EXPECT_NE(narrow, wide);
}

// Recurrent verify chains its drafts unrounded and stores each intermediate state rounded.
TEST(StoredState, RecurrentVerifyStoresRoundedIntermediates) {
  Bf16Start x(72);
  const GdnShape s = x.s;
  const std::vector<double> start = x.state;
  const std::vector<TokenPrepared> drafts = x.tokens(4);
  std::vector<double> o_wide, o_narrow, mid_wide, mid_narrow;
  recurrent_verify(s, drafts, start, o_wide, mid_wide);
  recurrent_verify(s, drafts, start, o_narrow, mid_narrow, StateDtype::bf16);
  EXPECT_EQ(o_wide, o_narrow);
  round_stored_state(mid_wide, StateDtype::bf16);
  EXPECT_EQ(mid_wide, mid_narrow);
}

// KVBuffer rounds its checkpoint at each flush and nowhere else: between flushes the slot's checkpoint is the last
// flush's, rounded; a due slot's verify serves its drafts from the unrounded fold and stores it rounded.
TEST(StoredState, KVBufferRoundsTheCheckpointAtEachFlush) {
  Bf16Start x(73);
  const GdnShape s = x.s;
  const std::vector<double> start = x.state;
  const int B = 4;
  const std::vector<TokenPrepared> tokens = x.tokens(3 * B);
  KVBufferSlot wide{start, {}}, narrow{start, {}};
  std::vector<double> o_wide, o_narrow;
  for (int i = 0; i < 3 * B; ++i) {
    kvbuffer_decode(s, B, tokens[i], narrow, o_narrow, StateDtype::bf16);
    ASSERT_TRUE(all_bf16(narrow.checkpoint)) << "step " << i;
    if (i < B) {  // up to and including the first flush both slots decode from the same checkpoint
      kvbuffer_decode(s, B, tokens[i], wide, o_wide);
      EXPECT_EQ(o_wide, o_narrow) << "step " << i;
    }
  }
  std::vector<double> rounded = wide.checkpoint;
  round_stored_state(rounded, StateDtype::bf16);
  EXPECT_NE(wide.checkpoint, rounded);

  // Verify on a due slot (B entries after an accept of every draft).
  KVBufferSlot due_wide{narrow.checkpoint, {}}, due_narrow{narrow.checkpoint, {}};
  const std::vector<TokenPrepared> more = x.tokens(B + 2);
  std::vector<BufferEntry> entries;
  std::vector<double> o;
  for (KVBufferSlot* slot : {&due_wide, &due_narrow}) {
    for (int i = 0; i < B - 1; ++i) kvbuffer_decode(s, B, more[i], *slot, o);
    kvbuffer_verify(s, B, {more[B - 1]}, *slot, o, entries);
    kvbuffer_accept(s, B, entries, 1, *slot);
    ASSERT_EQ(int(slot->entries.size()), B);
  }
  const std::vector<TokenPrepared> drafts{more[B], more[B + 1]};
  std::vector<BufferEntry> e_wide, e_narrow;
  std::vector<double> v_wide, v_narrow;
  kvbuffer_verify(s, B, drafts, due_wide, v_wide, e_wide);
  kvbuffer_verify(s, B, drafts, due_narrow, v_narrow, e_narrow, StateDtype::bf16);
  EXPECT_EQ(v_wide, v_narrow);
  ASSERT_EQ(e_wide.size(), e_narrow.size());
  for (size_t i = 0; i < e_wide.size(); ++i) EXPECT_EQ(e_wide[i].u, e_narrow[i].u);
  round_stored_state(due_wide.checkpoint, StateDtype::bf16);
  EXPECT_EQ(due_wide.checkpoint, due_narrow.checkpoint);
}

// bf16 states drift from the fp32 run; KVBuffer rounds its state once every B tokens where recurrent decoding rounds
// it every token. Over 512 tokens both stay within a few bf16 roundings of the head's largest state element, and the
// drift is reported.
TEST(StoredState, Bf16DriftOver512Tokens) {
  Bf16Start x(74);
  const GdnShape s = x.s;
  const std::vector<double> start = x.state;
  const int B = 16, T = 512;
  const std::vector<TokenPrepared> tokens = x.tokens(T);
  std::vector<double> exact = start, rec = start, o_exact, o_rec, o_kvb;
  KVBufferSlot slot{start, {}};
  double worst_rec = 0, worst_kvb = 0;
  for (int i = 0; i < T; ++i) {
    recurrent_decode(s, tokens[i], exact, o_exact);
    recurrent_decode(s, tokens[i], rec, o_rec, StateDtype::bf16);
    kvbuffer_decode(s, B, tokens[i], slot, o_kvb, StateDtype::bf16);
    worst_rec = std::max(worst_rec, max_rel_err(exact, rec, s.heads_v));
    worst_kvb = std::max(worst_kvb, max_rel_err(exact, kvbuffer_state(s, slot), s.heads_v));
  }
  EXPECT_GT(worst_rec, 0.0);
  EXPECT_GT(worst_kvb, 0.0);
  EXPECT_LT(worst_rec, 5e-2);
  EXPECT_LT(worst_kvb, 5e-2);
  std::printf("  bf16 stored state over %d tokens, state max_rel_err: recurrent %.3e, kvbuffer (B %d) %.3e\n", T,
              worst_rec, B, worst_kvb);
}

}  // namespace
}  // namespace kvb::ref
