// The spec_verify experiment kind on the CPU: its axes and their validation (the buffer_form axis and the raw form's
// buffer limit included), the accepted-count draw, the byte-model sums over a batch in delta and raw form, and the
// committed configs' grids (harness/kinds/verify_runner.h, verify_accepted.h, verify_bytes.h,
// experiments/spec_verify.toml, experiments/buffer_form_verify.toml).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "harness/kinds/registry.h"
#include "harness/workloads/verify_accepted.h"
#include "byte_model/verify_bytes.h"
#include "harness/sweep/config.h"
#include "harness/sweep/grid.h"
#include "byte_model/byte_model_raw.h"
#include "kernels/kvbuffer_raw_params.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

using test::grid_with;

/// `p` with axis `axis` set to `value`.
Point with_axis(Point p, const std::string& axis, const std::string& value) {
  for (auto& [name, v] : p.axes)
    if (name == axis) v = value;
  return p;
}

/// Resolves the spec_verify axes with one `--set` override; returns the UsageError's message ("" when none).
std::string override_error(const std::string& set) {
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  const SweepConfig c = parse_sweep_config("[experiment]\nname = \"v\"\nkind = \"spec_verify\"\n", "v.toml");
  try {
    resolve_axes(kind, c, {parse_axis_override(set)});
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(SpecVerifyAxes, GoodValuesResolve) {
  for (const char* set : {"variant=recurrent_verify,kvbuffer_verify", "draft_tokens=1,8", "accepted=all,none,0.7",
                          "accepted=0.01,0.99", "buffer_size=1,64", "phase=aligned", "batch=1,4096",
                          "buffer_form=delta,raw"})
    EXPECT_EQ(override_error(set), "") << set;
}

TEST(SpecVerifyAxes, BadValuesNameTheAxis) {
  const std::pair<const char*, const char*> bad[] = {
      {"variant=recurrent", "variant"}, {"draft_tokens=0", "draft_tokens"}, {"draft_tokens=9", "draft_tokens"},
      {"accepted=0", "accepted"},       {"accepted=1", "accepted"},         {"accepted=1.5", "accepted"},
      {"accepted=-0.2", "accepted"},    {"accepted=some", "accepted"},      {"accepted=0.5x", "accepted"},
      {"buffer_size=0", "buffer_size"}, {"buffer_size=65", "buffer_size"},  {"phase=random", "phase"},
      {"buffer_form=rawish", "buffer_form"}, {"buffer_form=Raw", "buffer_form"},
  };
  for (const auto& [set, axis] : bad) {
    const std::string e = override_error(set);
    EXPECT_NE(e.find(axis), std::string::npos) << set << " -> '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_NE(override_error("accepted=2").find("all, none"), std::string::npos);  // lists the allowed values
}

TEST(SpecVerifyAxes, ParseAcceptedThrowsNamingTheAxis) {
  EXPECT_EQ(parse_accepted("all").kind, AcceptedSpec::Kind::all);
  EXPECT_EQ(parse_accepted("none").kind, AcceptedSpec::Kind::none);
  const AcceptedSpec r = parse_accepted("0.25");
  EXPECT_EQ(r.kind, AcceptedSpec::Kind::rate);
  EXPECT_DOUBLE_EQ(r.rate, 0.25);
  for (const char* v : {"", "1", "0", "nan", "inf", "ALL"}) {
    try {
      parse_accepted(v);
      ADD_FAILURE() << "accepted = '" << v << "' was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("accepted"), std::string::npos) << e.what();
    }
  }
}

TEST(SpecVerifyAxes, RecurrentPointsHaveNoBufferSizeOrPhase) {
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  const SweepConfig c = load_sweep_config(std::string(KVB_SOURCE_DIR) + "/experiments/spec_verify.toml");
  EXPECT_EQ(c.kind, "spec_verify");
  const std::vector<Point> points = make_grid(kind, resolve_axes(kind, c, {}));
  // 2 batches x 4 draft counts x 2 acceptances x 2 launches: once for recurrent, once per buffer size (3) for
  // KVBuffer.
  ASSERT_EQ(points.size(), 2u * 4 * 2 * 2 * (1 + 3));
  for (const Point& p : points) {
    const bool kvb = p.get("variant") == "kvbuffer_verify";
    EXPECT_EQ(p.get("buffer_size").empty(), !kvb) << p.label();
    EXPECT_EQ(p.get("phase").empty(), !kvb) << p.label();
    EXPECT_EQ(p.get("buffer_form"), kvb ? "delta" : "") << p.label();
    EXPECT_EQ(p.get("layers"), "36");
    EXPECT_EQ(kind.validate(p), "") << p.label();
  }
}

TEST(SpecVerifyAxes, BufferFormFollowsBufferSizeAndSkipsRecurrent) {
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  std::vector<std::string> names;
  for (const AxisSpec& a : kind.axes) names.push_back(a.name);
  const auto at = [&](const char* n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  EXPECT_EQ(at("buffer_form"), at("buffer_size") + 1);
  EXPECT_EQ(std::find(kind.result_columns.begin(), kind.result_columns.end(), "buffer_form"),
            kind.result_columns.end());
  EXPECT_FALSE(kind.applies("recurrent_verify", "buffer_form"));
  EXPECT_TRUE(kind.applies("kvbuffer_verify", "buffer_form"));

  // One recurrent point (no buffer, so no form), one KVBuffer point per form; the default form is delta.
  const std::vector<Point> points =
      grid_with("spec_verify", {"variant=recurrent_verify,kvbuffer_verify", "buffer_form=delta,raw"});
  ASSERT_EQ(points.size(), 3u);
  std::vector<std::string> forms;
  for (const Point& p : points) {
    EXPECT_EQ(kind.validate(p), "") << p.label();
    if (p.get("variant") == "recurrent_verify") {
      EXPECT_EQ(p.get("buffer_form"), "") << p.label();
    } else {
      forms.push_back(p.get("buffer_form"));
    }
  }
  EXPECT_EQ(forms, (std::vector<std::string>{"delta", "raw"}));
  for (const Point& p : grid_with("spec_verify", {"variant=kvbuffer_verify"})) EXPECT_EQ(p.get("buffer_form"), "delta");
  for (const Point& p : grid_with("spec_verify", {"buffer_form=raw"}))
    EXPECT_EQ(p.label().find("buffer_form=raw") != std::string::npos, p.get("variant") == "kvbuffer_verify");
}

TEST(SpecVerifyAxes, RawBufferBeyondTheRawLimitIsRejectedInOneLine) {
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  const std::string limit = "buffer_size=" + std::to_string(kMaxRawBuffer);
  const std::vector<Point> points = grid_with("spec_verify", {"variant=kvbuffer_verify", "buffer_form=delta,raw", limit});
  ASSERT_EQ(points.size(), 2u);
  for (const Point& p : points) EXPECT_EQ(kind.validate(p), "") << p.label();  // the limit itself is fine
  const std::string over = std::to_string(kMaxRawBuffer + 1);
  const Point raw = with_axis(points[1], "buffer_size", over);
  ASSERT_EQ(raw.get("buffer_form"), "raw");
  const std::string e = kind.validate(raw);
  EXPECT_EQ(e, "buffer_size = " + over + " is out of range for buffer_form raw (allowed: 1 to " +
                   std::to_string(kMaxRawBuffer) + ")");
  EXPECT_EQ(kind.validate(with_axis(points[0], "buffer_size", over)), "");  // the delta form has no such limit
  // The decode kind shares the check (its buffer_size axis reaches beyond the raw limit).
  const ExperimentKind& decode = find_experiment_kind("decode");
  const std::vector<Point> dp =
      grid_with("decode", {"variant=kvbuffer", "buffer_form=delta,raw", "buffer_size=" + over});
  ASSERT_EQ(dp.size(), 2u);
  EXPECT_EQ(decode.validate(dp[0]), "");
  EXPECT_EQ(decode.validate(dp[1]), e);
}

TEST(SpecVerifyAxes, BufferFormConfigComparesBothFormsOfKVBufferOnly) {
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  const SweepConfig c = load_sweep_config(std::string(KVB_SOURCE_DIR) + "/experiments/buffer_form_verify.toml");
  EXPECT_EQ(c.kind, "spec_verify");
  const std::vector<Point> points = make_grid(kind, resolve_axes(kind, c, {}));
  // 2 forms x 2 batches x 3 draft counts x 2 acceptances x 2 buffer sizes, all KVBuffer.
  ASSERT_EQ(points.size(), 2u * 2 * 3 * 2 * 2);
  int raw = 0;
  for (const Point& p : points) {
    EXPECT_EQ(p.get("variant"), "kvbuffer_verify");
    EXPECT_EQ(p.get("phase"), "staggered");
    EXPECT_EQ(p.get("layers"), "36");
    EXPECT_LE(p.get_int("buffer_size"), kMaxRawBuffer);
    EXPECT_EQ(kind.validate(p), "") << p.label();
    raw += p.get("buffer_form") == "raw";
  }
  EXPECT_EQ(raw, 24);
}

// Every axis states its allowed values on its own, so that an empty --set value is refused with them (the accepted
// axis, whose values are not a range or a list of words, as much as the others).
TEST(SpecVerifyAxes, EmptyValueNamesTheAllowedValuesOfEveryAxis) {
  for (const AxisSpec& a : find_experiment_kind("spec_verify").axes) {
    ASSERT_TRUE(a.check) << a.name;
    EXPECT_FALSE(a.check.allowed.empty()) << a.name;
    EXPECT_NE(a.check("").find("(allowed: " + a.check.allowed + ")"), std::string::npos) << a.name;
    try {
      grid_with("spec_verify", {a.name + "="});
      FAIL() << a.name << "= resolved";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "--set " + a.name + ": empty value (allowed: " + a.check.allowed + ")");
    }
  }
}

TEST(SpecVerifyAccepted, AllAndNone) {
  EXPECT_EQ(draw_accepted(parse_accepted("all"), 5, 3, 1), (std::vector<int32_t>{3, 3, 3, 3, 3}));
  EXPECT_EQ(draw_accepted(parse_accepted("none"), 4, 8, 1), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_TRUE(draw_accepted(parse_accepted("all"), 0, 3, 1).empty());
  EXPECT_THROW(draw_accepted(parse_accepted("all"), 4, 0, 1), std::invalid_argument);
}

TEST(SpecVerifyAccepted, RateIsDeterministicPerSeedAndBounded) {
  const AcceptedSpec r = parse_accepted("0.7");
  const std::vector<int32_t> a = draw_accepted(r, 256, 4, 42);
  EXPECT_EQ(a, draw_accepted(r, 256, 4, 42));
  EXPECT_NE(a, draw_accepted(r, 256, 4, 43));
  for (int32_t n : a) {
    EXPECT_GE(n, 0);
    EXPECT_LE(n, 4);
  }
  // Within a batch the counts differ: some rows reject the first draft, some accept all four.
  EXPECT_NE(std::find(a.begin(), a.end(), 0), a.end());
  EXPECT_NE(std::find(a.begin(), a.end(), 4), a.end());
}

TEST(SpecVerifyAccepted, RateFollowsTheTruncatedGeometricLaw) {
  // P(a = k) = r^k (1 - r) for k < m, P(a = m) = r^m; mean r (1 - r^m) / (1 - r).
  const double rate = 0.7;
  const int m = 3, rows = 200000;
  const std::vector<int32_t> a = draw_accepted(parse_accepted("0.7"), rows, m, 7);
  std::vector<double> freq(m + 1, 0.0);
  for (int32_t n : a) freq[n] += 1.0 / rows;
  for (int k = 0; k <= m; ++k) {
    const double p = k < m ? std::pow(rate, k) * (1 - rate) : std::pow(rate, m);
    EXPECT_NEAR(freq[k], p, 5 * std::sqrt(p * (1 - p) / rows)) << "k = " << k;
  }
  const double mean = std::accumulate(a.begin(), a.end(), 0.0) / rows;
  EXPECT_NEAR(mean, rate * (1 - std::pow(rate, m)) / (1 - rate), 0.01);
}

/// A tiny shape whose byte counts are easy to follow by hand: H = 1, HV = 2, K = V = 4.
/// State 2*4*4*4 = 128 B; buffered entry 1*4*2 + 2*4*4 + 2*4 = 48 B; one token's inputs q, k 8 + 8, v 16, a, b 4 + 4
/// = 40 B read and its bf16 output 16 B written; gate parameters 2*2*4 = 16 B per launch.
VerifyBatch tiny_batch(bool kvbuffer) {
  VerifyBatch b;
  b.shape.heads_qk = 1;
  b.shape.heads_v = 2;
  b.shape.head_dim_k = 4;
  b.shape.head_dim_v = 4;
  b.kvbuffer = kvbuffer;
  b.draft_tokens = 2;
  b.o_dtype = OutputDtype::bf16;
  return b;
}

TEST(SpecVerifyBytes, RecurrentSumsByHand) {
  VerifyBatch b = tiny_batch(false);
  b.accepted = {2, 0};
  // Verify: 2 rows x 2 tokens x 40 + 2 x (state 128 + slot 4) + gates 16 read; 2 x 2 x 16 outputs + 2 x 2 x 128
  // intermediate states written.
  const ByteCount v = verify_layer_step_bytes(b);
  EXPECT_DOUBLE_EQ(v.read, 160 + 264 + 16);
  EXPECT_DOUBLE_EQ(v.write, 64 + 512);
  // Accept: row 0 (a = 2) reads slot + count and one state, writes one state; row 1 (a = 0) reads slot + count.
  const ByteCount va = verify_accept_layer_step_bytes(b, 3);
  EXPECT_DOUBLE_EQ(va.read, 440 + (8 + 128) + 8);
  EXPECT_DOUBLE_EQ(va.write, 576 + 128);
}

/// Verify + accept bytes of batch b over one step equal step 1's hand count, and over two steps the two steps'
/// mean; returns the two-step count.
ByteCount expect_two_step_bytes(const VerifyBatch& b, double step1_read, double step1_write, double step2_read,
                                double step2_write) {
  const ByteCount one = verify_accept_layer_step_bytes(b, 1);
  EXPECT_DOUBLE_EQ(one.read, step1_read);
  EXPECT_DOUBLE_EQ(one.write, step1_write);
  const ByteCount two = verify_accept_layer_step_bytes(b, 2);
  EXPECT_DOUBLE_EQ(two.read, (step1_read + step2_read) / 2);
  EXPECT_DOUBLE_EQ(two.write, (step1_write + step2_write) / 2);
  return two;
}

TEST(SpecVerifyBytes, KVBufferSumsByHandOverSteps) {
  VerifyBatch b = tiny_batch(true);
  b.buffer_size = 3;
  b.layers = 4;
  b.fill = {0, 2};
  b.accepted = {1, 2};
  // Verify of a row holding n entries: 2 x 40 + checkpoint 128 + n x 48 + slot, fill 8 read; 2 x 16 outputs + the 2
  // drafts' entries 2 x 48 written; a due row (n >= 3) also writes its checkpoint 128 and reads and writes its
  // arrival counter (4). Fills {0, 2}: read 16 + 216 + 312, written 2 x 128.
  const ByteCount v = verify_layer_step_bytes(b);
  EXPECT_DOUBLE_EQ(v.read, 544);
  EXPECT_DOUBLE_EQ(v.write, 256);
  // Step 1, fills {0, 2}: verify as above, no accept launch, the commit 2 x 12 / 4 read, 2 x 4 / 4 written. Fills
  // become {1, 4}: row 1 is due. Step 2: verify 16 + 264 + (216 + 192 + 4) read, 256 + 128 + 4 written; the commit.
  const double step1_read = 544 + 6, step1_write = 256 + 2;
  const double step2_read = 692 + 6, step2_write = 388 + 2;
  expect_two_step_bytes(b, step1_read, step1_write, step2_read, step2_write);
}

TEST(SpecVerifyBytes, RawFormSumsByHandOverSteps) {
  VerifyBatch b = tiny_batch(true);
  b.form = BufferForm::raw;
  b.buffer_size = 3;
  b.layers = 4;
  b.fill = {0, 2};
  b.accepted = {1, 2};
  // Raw entry: key 1*4*2 + value 2*4*2 + a, b 2*2*2 = 32 B.
  ASSERT_DOUBLE_EQ(raw_entry_bytes(b.shape), 32);
  // Raw verify of a row holding n entries: 2 x 40 + checkpoint 128 + n x 32 + slot, fill 8 read; only the 2 x 16
  // outputs written (no deltas). Fills {0, 2}: read 16 + 216 + 280, written 2 x 32.
  const ByteCount v = verify_layer_step_bytes(b);
  EXPECT_DOUBLE_EQ(v.read, 512);
  EXPECT_DOUBLE_EQ(v.write, 64);
  // Step 1, fills {0, 2}: row 0 appends 1 raw entry (12 + 32 read, 32 written); row 1 overflows (2 + 2 >= 3) and
  // folds: 12 + 128 + 4 x 32 read, 128 written; advance 2 x 12 / 4 read, 2 x 4 / 4 written. Fills become {1, 0}.
  // Step 2, fills {1, 0}: verify 16 + 248 + 216 read, 64 written; row 0 appends 1 (44 read, 32 written), row 1
  // appends 2 (12 + 64 read, 64 written); the advance again.
  const double step1_read = 512 + 44 + 268 + 6, step1_write = 64 + 32 + 128 + 2;
  const double step2_read = 480 + 44 + 76 + 6, step2_write = 64 + 32 + 64 + 2;
  const ByteCount two = expect_two_step_bytes(b, step1_read, step1_write, step2_read, step2_write);
  // The same batch in delta form moves more bytes: fp32 deltas stored, and written by verify.
  b.form = BufferForm::delta;
  EXPECT_GT(verify_accept_layer_step_bytes(b, 2).total(), two.total());
}

TEST(SpecVerifyBytes, FillEvolutionAndBadInput) {
  EXPECT_EQ(fill_after_accept(0, 0, 4), 0);
  EXPECT_EQ(fill_after_accept(1, 2, 4), 3);
  EXPECT_EQ(fill_after_accept(3, 1, 4), 0);  // fills the buffer: flushed
  EXPECT_EQ(fill_after_accept(3, 8, 4), 0);  // overflows mid-way: flushed
  EXPECT_EQ(fill_after_commit(1, 2, 4), 3);
  EXPECT_EQ(fill_after_commit(3, 1, 4), 4);  // reaches B: due, folded by the next verify
  EXPECT_EQ(fill_after_commit(3, 4, 4), 7);  // up to B - 1 + m
  EXPECT_EQ(fill_after_commit(6, 2, 4), 2);  // a due row starts again after its fold
  EXPECT_EQ(fill_after(BufferForm::raw, 3, 1, 4), 0);
  EXPECT_EQ(fill_after(BufferForm::delta, 3, 1, 4), 4);
  VerifyBatch b = tiny_batch(true);
  b.buffer_size = 3;
  b.fill = {0};
  b.accepted = {1, 1};
  EXPECT_THROW(verify_layer_step_bytes(b), std::invalid_argument);
  b.fill = {0, 1};
  EXPECT_THROW(verify_accept_layer_step_bytes(b, 0), std::invalid_argument);
  b.accepted = {1, 3};  // m = 2
  EXPECT_THROW(verify_layer_step_bytes(b), std::invalid_argument);
  b.accepted = {1, -1};
  EXPECT_THROW(verify_accept_layer_step_bytes(b, 1), std::invalid_argument);
  b.accepted = {1, 1};
  b.fill = {0, 5};  // B - 1 + m = 4
  EXPECT_THROW(verify_layer_step_bytes(b), std::invalid_argument);
  b.fill = {0, 4};
  EXPECT_NO_THROW(verify_layer_step_bytes(b));
  b.form = BufferForm::raw;  // raw positions stay below B = 3
  EXPECT_THROW(verify_layer_step_bytes(b), std::invalid_argument);
}

}  // namespace
}  // namespace kvb
