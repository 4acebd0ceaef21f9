// Float64 reference of stateless short contexts (DESIGN.md section 3): kvbuffer_prefill's triangular solve from a
// zero state, then stateless decode steps across the first flush, against recurrent decoding from a zero state.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/gdn_reference.h"
#include "reference/qwen3_next_inputs.h"

namespace kvb::ref {
namespace {

constexpr double kExact = 1e-12;  // both float64

GdnShape small_shape() { return GdnShape{2, 4, 32, 48}; }

std::vector<TokenPrepared> prepared(const GdnShape& s, const GateParams& p, int n, std::mt19937_64& rng) {
  std::vector<TokenPrepared> out;
  for (const TokenRaw& t : draw_tokens(s, n, rng)) out.push_back(prepare_token(s, t, p));
  return out;
}

// Every prompt length L = 1 .. B: the prefill's outputs and state equal recurrent decoding of the prompt from zero;
// then decode steps on the stateless slot stay equal across the flush that materialises its state (and one more).
TEST(StatelessPrefill, MatchesRecurrentFromZeroForEveryPromptLengthAndAcrossTheFlush) {
  const GdnShape s = small_shape();
  const size_t head_out = size_t(s.heads_v) * s.head_dim_v;
  for (int B : {1, 2, 5, 16, 64}) {
    Qwen3NextInputs in(s, 300 + B);
    const GateParams p = in.gate_params();
    for (int L = 1; L <= B; ++L) {
      const std::vector<TokenPrepared> prompt = prepared(s, p, L, in.rng());
      std::vector<double> rec(size_t(s.state_elems()), 0.0), o_rec, o_pre, o_kvb;
      KVBufferSlot slot;
      kvbuffer_prefill(s, B, prompt, slot, o_pre);
      ASSERT_EQ(o_pre.size(), size_t(L) * head_out);
      ASSERT_EQ(slot.checkpoint.empty(), L < B) << "B " << B << " L " << L << ": state materialised only at L = B";
      ASSERT_EQ(int(slot.entries.size()), L < B ? L : 0);
      for (int t = 0; t < L; ++t) {
        recurrent_decode(s, prompt[t], rec, o_rec);
        const std::vector<double> got(o_pre.begin() + t * head_out, o_pre.begin() + (t + 1) * head_out);
        ASSERT_LE(max_rel_err(o_rec, got, s.heads_v), kExact) << "B " << B << " L " << L << " token " << t;
      }
      ASSERT_LE(max_rel_err(rec, kvbuffer_state(s, slot), s.heads_v), kExact) << "B " << B << " L " << L;
      // Decode: the first flush comes after B - L more tokens (at once for L = B); go two tokens past the next one.
      const int steps = (L < B ? B - L : B) + 2;
      for (const TokenPrepared& t : prepared(s, p, steps, in.rng())) {
        const bool stateless_before = slot.checkpoint.empty();
        recurrent_decode(s, t, rec, o_rec);
        kvbuffer_decode(s, B, t, slot, o_kvb);
        if (stateless_before && !slot.checkpoint.empty()) {
          EXPECT_TRUE(slot.entries.empty()) << "materialised by a flush";
        }
        ASSERT_LE(max_rel_err(o_rec, o_kvb, s.heads_v), kExact) << "B " << B << " L " << L;
        ASSERT_LE(max_rel_err(rec, kvbuffer_state(s, slot), s.heads_v), kExact) << "B " << B << " L " << L;
      }
      EXPECT_FALSE(slot.checkpoint.empty()) << "B " << B << " L " << L << ": no flush happened";
    }
  }
}

// The prefill's outputs are not the trivial ones: outputs differ token to token and from v (the solve is exercised).
TEST(StatelessPrefill, OutputsAreNonTrivial) {
  const GdnShape s = small_shape();
  Qwen3NextInputs in(s, 8);
  const GateParams p = in.gate_params();
  KVBufferSlot slot;
  std::vector<double> o;
  kvbuffer_prefill(s, 8, prepared(s, p, 6, in.rng()), slot, o);
  double norm = 0;
  for (double x : o) norm += x * x;
  EXPECT_GT(norm, 1e-3);
  for (const BufferEntry& e : slot.entries) {
    double u2 = 0;
    for (double x : e.u) u2 += x * x;
    EXPECT_GT(u2, 1e-3);
  }
}

TEST(StatelessPrefill, RejectsBadPromptsAndSlots) {
  const GdnShape s = small_shape();
  Qwen3NextInputs in(s, 9);
  const GateParams p = in.gate_params();
  std::vector<double> o;
  KVBufferSlot empty;
  EXPECT_THROW(kvbuffer_prefill(s, 4, {}, empty, o), std::invalid_argument);
  EXPECT_THROW(kvbuffer_prefill(s, 4, prepared(s, p, 5, in.rng()), empty, o), std::invalid_argument);
  KVBufferSlot stateful{in.state(), {}};
  EXPECT_THROW(kvbuffer_prefill(s, 4, prepared(s, p, 2, in.rng()), stateful, o), std::invalid_argument);
  KVBufferSlot holding;
  kvbuffer_prefill(s, 4, prepared(s, p, 2, in.rng()), holding, o);
  EXPECT_THROW(kvbuffer_prefill(s, 4, prepared(s, p, 1, in.rng()), holding, o), std::invalid_argument);
}

// A standalone flush of a stateless slot materialises its state from zero.
TEST(StatelessFlush, MaterialisesFromZero) {
  const GdnShape s = small_shape();
  Qwen3NextInputs in(s, 10);
  const GateParams p = in.gate_params();
  std::vector<double> rec(size_t(s.state_elems()), 0.0), o;
  KVBufferSlot slot;
  const std::vector<TokenPrepared> prompt = prepared(s, p, 3, in.rng());
  kvbuffer_prefill(s, 8, prompt, slot, o);
  for (const TokenPrepared& t : prompt) recurrent_decode(s, t, rec, o);
  kvbuffer_flush(s, slot);
  EXPECT_TRUE(slot.entries.empty());
  ASSERT_EQ(slot.checkpoint.size(), size_t(s.state_elems()));
  EXPECT_LE(max_rel_err(rec, slot.checkpoint, s.heads_v), kExact);
}

}  // namespace
}  // namespace kvb::ref
