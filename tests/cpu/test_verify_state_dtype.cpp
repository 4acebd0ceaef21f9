// The state_dtype axis of the spec_verify experiment kind on the CPU: fp32 by default; bf16 taken by kvbuffer_verify
// in the delta form on the tensor-core verify kernel (verify_kernel automatic or tensor_cores, tile auto, head dims
// 128 x 128) and refused otherwise with one-line reasons naming the axis and the allowed values; the axis column sits
// where older spec_verify CSVs held a result column of the same name, so that the committed CSV resumes as fp32 rows;
// VerifyProblem's own refusals (before it touches the device); the verify byte model in bf16; the committed config
// experiments/spec_verify_state_dtype.toml; the element-by-element judge of stored bf16 checkpoints the verify check
// uses (Bf16StateUnits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "byte_model/verify_bytes.h"
#include "harness/workloads/check_support.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/sweep.h"
#include "harness/workloads/verify_problem.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

using test::grid_with;

/// The spec_verify point check of the single point the overrides give.
std::string verify_point_reason(const std::vector<std::string>& sets) {
  const std::vector<Point> points = grid_with("spec_verify", sets);
  EXPECT_EQ(points.size(), 1u);
  return points.empty() ? "no point" : find_experiment_kind("spec_verify").validate(points[0]);
}

TEST(VerifyStateDtypeAxis, DefaultsToFp32AndTakesBf16OnTheTensorCoreKernel) {
  const auto def = grid_with("spec_verify", {"variant=kvbuffer_verify"});
  ASSERT_EQ(def.size(), 1u);
  EXPECT_EQ(def[0].get("state_dtype"), "fp32");
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  const auto points = grid_with("spec_verify", {"variant=kvbuffer_verify", "verify_kernel=automatic,tensor_cores",
                                                "draft_tokens=1,8", "state_dtype=fp32,bf16"});
  ASSERT_EQ(points.size(), 8u);
  for (const Point& p : points) EXPECT_EQ(kind.validate(p), "") << p.label();
  // fp32 keeps every point it had: recurrent verification, the CUDA-core kernel, the raw form.
  for (const Point& p : grid_with("spec_verify", {"variant=recurrent_verify", "state_dtype=fp32"}))
    EXPECT_EQ(kind.validate(p), "") << p.label();
  EXPECT_EQ(verify_point_reason({"variant=kvbuffer_verify", "verify_kernel=cuda_cores", "state_dtype=fp32"}), "");
  EXPECT_EQ(verify_point_reason({"variant=kvbuffer_verify", "buffer_form=raw", "state_dtype=fp32"}), "");
}

TEST(VerifyStateDtypeAxis, StagedKernelTakesBf16CheckpointsUpTo32EntriesASlot) {
  EXPECT_EQ(verify_point_reason({"variant=kvbuffer_verify", "verify_kernel=staged", "state_dtype=bf16",
                                 "buffer_size=16", "draft_tokens=8"}),
            "");
  EXPECT_EQ(verify_point_reason({"variant=kvbuffer_verify", "verify_kernel=staged", "state_dtype=fp32"}),
            "verify_kernel = staged is not supported with state_dtype = fp32 (allowed with staged: state_dtype = "
            "bf16)");
  EXPECT_EQ(verify_point_reason({"variant=kvbuffer_verify", "verify_kernel=staged", "state_dtype=bf16",
                                 "buffer_size=32", "draft_tokens=4"}),
            "verify_kernel = staged is not supported with buffer_size - 1 + draft_tokens = 35 (allowed with staged: at "
            "most 32)");
  EXPECT_EQ(verify_point_reason({"variant=kvbuffer_verify", "verify_kernel=automatic", "state_dtype=bf16",
                                 "buffer_size=32", "draft_tokens=4"}),
            "");  // the tensor-core kernel takes it
}

TEST(VerifyStateDtypeAxis, RefusesBf16WhereNoVerifyKernelTakesItInOneLine) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"variant=recurrent_verify", "state_dtype=bf16"},
       "state_dtype = bf16 is not supported by variant recurrent_verify (allowed with it: fp32; bf16 with "
       "kvbuffer_verify)"},
      {{"variant=kvbuffer_verify", "buffer_form=raw", "state_dtype=bf16"},
       "state_dtype = bf16 is not supported with buffer_form = raw (allowed with raw: fp32)"},
      {{"variant=kvbuffer_verify", "verify_kernel=cuda_cores", "state_dtype=bf16"},
       "state_dtype = bf16 is not supported with verify_kernel = cuda_cores (allowed with cuda_cores: fp32; bf16 with "
       "automatic, tensor_cores and staged)"},
      {{"variant=kvbuffer_verify", "tile=128x256", "state_dtype=bf16"},
       "state_dtype = bf16 is not supported with tile = 128x256: the verify kernels that take bf16 checkpoints "
       "(tensor_cores, staged) have one block shape each (allowed with bf16: tile = auto)"},
      {{"variant=kvbuffer_verify", "head_dim_v=64", "state_dtype=bf16"},
       "state_dtype = bf16 is not supported with head_dim_k x head_dim_v = 128 x 64: the verify kernels that take "
       "bf16 checkpoints (tensor_cores, staged) refuse them (allowed with bf16: 128 x 128; other head dims: fp32)"},
  };
  for (const auto& [sets, want] : cases) {
    const std::string e = verify_point_reason(sets);
    EXPECT_EQ(e, want);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // A whole sweep with one refused point is refused before anything runs, naming the point.
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  try {
    validate_points(kind, grid_with("spec_verify", {"variant=recurrent_verify,kvbuffer_verify", "state_dtype=bf16"}));
    FAIL() << "a recurrent_verify bf16 point was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("variant=recurrent_verify"), std::string::npos) << e.what();
  }
}

// Where the column sits (after seed, before output_dtype, as the result column did): StateDtypeAxis.
TEST(VerifyStateDtypeAxis, ColumnStaysWhereTheResultColumnWasAndTheCommittedCsvResumesAsFp32) {
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  EXPECT_EQ(std::count(kind.result_columns.begin(), kind.result_columns.end(), "state_dtype"), 0);

  const std::string csv = std::string(KVB_SOURCE_DIR) + "/results/spec_verify.csv";
  const CsvTable t = load_resume_table(kind, csv);
  EXPECT_EQ(t.header, csv_columns(kind));  // the file's header, unchanged
  const size_t dtype = size_t(std::find(t.header.begin(), t.header.end(), "state_dtype") - t.header.begin());
  for (const auto& row : t.rows) EXPECT_EQ(row[dtype], "fp32");
  // Every point of the committed config (fp32 by default) is one of the file's rows: a resumed sweep reruns none.
  const auto grid = test::config_grid("spec_verify", std::string(KVB_SOURCE_DIR) + "/experiments/spec_verify.toml");
  const std::vector<bool> done = finished_points(kind, "spec_verify", grid, t);
  EXPECT_EQ(std::count(done.begin(), done.end(), true), std::ptrdiff_t(grid.size()));
}

TEST(VerifyStateDtypeConfig, OneRunComparesBothDtypesOfKVBufferVerify) {
  const std::vector<Point> grid = test::config_grid(
      "spec_verify", std::string(KVB_SOURCE_DIR) + "/experiments/spec_verify_state_dtype.toml");
  ASSERT_EQ(grid.size(), 32u);  // batch 64, 256 x m = 1, 2, 4, 8 x B = 8, 16 x fp32, bf16
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  EXPECT_NO_THROW(validate_points(kind, grid));
  int bf16 = 0;
  for (const Point& p : grid) {
    EXPECT_EQ(p.get("variant"), "kvbuffer_verify");
    EXPECT_EQ(p.get("accepted"), "all");
    EXPECT_EQ(p.get("launch"), "plain");
    EXPECT_EQ(p.get("buffer_form"), "delta");
    bf16 += p.get("state_dtype") == "bf16";
  }
  EXPECT_EQ(bf16, 16);
}

/// A VerifyConfig that VerifyProblem refuses before it allocates anything (bf16 where no kernel takes it).
VerifyConfig refused_config(VerifyVariant variant, BufferForm form) {
  VerifyConfig c;
  c.variant = variant;
  c.form = form;
  c.shape = GdnShape{16, 32, 128, 128};
  c.batch = 4;
  c.draft_tokens = 2;
  c.buffer_size = 8;
  c.layers = 2;
  c.state_dtype = StateDtype::bf16;
  return c;
}

/// The message of the std::invalid_argument VerifyProblem throws for `c` ("" when none).
std::string problem_refusal(const VerifyConfig& c) {
  try {
    VerifyProblem p(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(VerifyStateDtypeProblem, RecurrentVerificationAndTheRawFormRefuseBf16) {
  EXPECT_EQ(problem_refusal(refused_config(VerifyVariant::recurrent, BufferForm::delta)),
            "state_dtype = bf16 is not supported by recurrent verification (allowed with it: fp32)");
  EXPECT_EQ(problem_refusal(refused_config(VerifyVariant::kvbuffer, BufferForm::raw)),
            "state_dtype = bf16 with buffer_form raw is not supported (allowed with raw: fp32)");
}

/// The tiny batch of tests/cpu/test_spec_verify.cpp (KVBufferSumsByHandOverSteps): 1 key head, 2 value heads, K = V
/// = 4 (a state 2 x 4 x 4 elements: 128 bytes in fp32, 64 in bf16), m = 2, B = 3, fills {0, 2}, accepted {1, 2}.
VerifyBatch tiny_kvbuffer_batch(StateDtype d) {
  VerifyBatch b;
  b.shape = GdnShape{1, 2, 4, 4};
  b.kvbuffer = true;
  b.draft_tokens = 2;
  b.buffer_size = 3;
  b.layers = 4;
  b.fill = {0, 2};
  b.accepted = {1, 2};
  b.state_dtype = d;
  return b;
}

TEST(VerifyStateDtypeBytes, Bf16CheckpointsHalveTheCheckpointTermsOnly) {
  const VerifyBatch fp32 = tiny_kvbuffer_batch(StateDtype::fp32), bf16 = tiny_kvbuffer_batch(StateDtype::bf16);
  // Verify alone, fills {0, 2}, no row due: each row reads its checkpoint, 64 bytes in bf16 instead of 128.
  const ByteCount v32 = verify_layer_step_bytes(fp32), v16 = verify_layer_step_bytes(bf16);
  EXPECT_DOUBLE_EQ(v32.read, 544);
  EXPECT_DOUBLE_EQ(v32.write, 256);
  EXPECT_DOUBLE_EQ(v16.read, 544 - 2 * 64);
  EXPECT_DOUBLE_EQ(v16.write, 256);
  // Verify + accept over two steps: step 1 as above; step 2 (fills {1, 4}: row 1 due) reads two checkpoints and
  // writes row 1's folded one, each 64 bytes fewer in bf16. Means over the two steps.
  const ByteCount a32 = verify_accept_layer_step_bytes(fp32, 2), a16 = verify_accept_layer_step_bytes(bf16, 2);
  EXPECT_DOUBLE_EQ(a32.read, (550 + 698) / 2.0);
  EXPECT_DOUBLE_EQ(a32.write, (258 + 390) / 2.0);
  EXPECT_DOUBLE_EQ(a16.read, (550 - 128 + 698 - 128) / 2.0);
  EXPECT_DOUBLE_EQ(a16.write, (258 + 390 - 64) / 2.0);
  // The floor follows: fewer bytes, a lower floor at the same bandwidths.
  EXPECT_LT(floor_us(a16, 4000, 5000), floor_us(a32, 4000, 5000));
}

TEST(VerifyStateDtypeBytes, RawFormWithBf16IsRefused) {
  VerifyBatch b = tiny_kvbuffer_batch(StateDtype::bf16);
  b.form = BufferForm::raw;
  b.fill = {0, 1};
  try {
    verify_layer_step_bytes(b);
    FAIL() << "raw form with bf16 checkpoints counted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "VerifyBatch: state_dtype = bf16 with form raw (allowed with raw: fp32)");
  }
}

TEST(Bf16StateUnits, CountsEqualOneUnitAndFurtherPerHead) {
  // Two heads of four elements; head 0's largest reference magnitude is 1, head 1's is 2^-10.
  // One bf16 unit of x in [2^e, 2^(e+1)) is 2^(e - 7).
  const std::vector<double> want = {1.0, 0.5, -0.25, 0.0, std::ldexp(1.0, -10), 0.0, 0.0, 0.0};
  std::vector<double> got = want;
  got[1] = 0.5 + std::ldexp(1.0, -8);    // one unit of 0.5
  got[2] = -0.25 - std::ldexp(1.0, -9);  // one unit of 0.25
  got[3] = 1e-5;                         // left by cancellation: within tol::kStateFp32 of head 0's largest, 1
  got[5] = 3 * std::ldexp(1.0, -17);     // three units of head 1's largest element, 2^-10: further
  Bf16StateUnits u;
  u.add(want, got, 2);
  EXPECT_EQ(u.equal, 4u);
  EXPECT_EQ(u.one, 3u);
  EXPECT_EQ(u.more, 1u);
  EXPECT_EQ(u.compared(), 8u);
  // NaN and infinity are never within a unit; sizes that do not match are refused.
  Bf16StateUnits bad;
  bad.add({1.0, 1.0}, {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}, 1);
  EXPECT_EQ(bad.more, 2u);
  EXPECT_THROW(bad.add({1.0, 2.0}, {1.0}, 1), std::invalid_argument);
  EXPECT_THROW(bad.add({1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}, 2), std::invalid_argument);
}

}  // namespace
}  // namespace kvb
