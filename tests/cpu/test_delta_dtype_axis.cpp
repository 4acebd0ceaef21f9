// The delta_dtype axis of the spec_verify kind on the CPU (harness/kinds/runner_support.h): fp32 by default and for
// recurrent verification (the axis does not apply), bf16 taken by kvbuffer_verify in the delta form with bf16
// checkpoints on the staged kernel and refused elsewhere with a one-line reason naming the axis; the entry_dtypes
// column and the byte model follow it; the kernels other than the staged verify refuse a pool of bf16 deltas.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "byte_model/byte_model.h"
#include "byte_model/verify_bytes.h"
#include "harness/kinds/entry_dtypes.h"
#include "harness/kinds/registry.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/entry_dtypes.h"
#include "harness/sweep/result_csv.h"
#include "kernels/gdn_params.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

const std::string kBf16Verify = "variant=kvbuffer_verify";

/// The one refusal of a spec_verify point set by `sets` (a test failure unless exactly one point resolves).
std::string refusal(const std::vector<std::string>& sets) {
  const auto pts = test::grid_with("spec_verify", sets);
  EXPECT_EQ(pts.size(), 1u);
  return pts.empty() ? "" : find_experiment_kind("spec_verify").validate(pts[0]);
}

TEST(DeltaDtypeAxis, DefaultsToFp32AndTakesBf16OnTheStagedKernel) {
  const auto def = test::grid_with("spec_verify", {kBf16Verify});
  ASSERT_EQ(def.size(), 1u);
  EXPECT_EQ(def[0].get("delta_dtype"), "fp32");
  for (const char* kernel : {"automatic", "staged"})
    for (const char* m : {"1", "4", "8"})
      EXPECT_EQ(refusal({kBf16Verify, "state_dtype=bf16", "delta_dtype=bf16", "buffer_size=16",
                         std::string("draft_tokens=") + m, std::string("verify_kernel=") + kernel}),
                "")
          << kernel << " m=" << m;
  // Recurrent verification buffers nothing: the axis does not apply and its points collapse to one.
  EXPECT_EQ(test::grid_with("spec_verify", {"variant=recurrent_verify", "delta_dtype=fp32,bf16"}).size(), 1u);
}

TEST(DeltaDtypeAxis, RefusesWhatTheStagedKernelCannotTakeNamingTheAxis) {
  struct Case {
    std::vector<std::string> sets;
    const char* says;
  };
  const Case cases[] = {
      {{kBf16Verify, "delta_dtype=bf16"}, "state_dtype = fp32"},
      {{kBf16Verify, "delta_dtype=bf16", "state_dtype=bf16", "buffer_form=raw"}, "raw"},
      {{kBf16Verify, "delta_dtype=bf16", "state_dtype=bf16", "verify_kernel=tensor_cores"},
       "verify_kernel = tensor_cores"},
      {{kBf16Verify, "delta_dtype=bf16", "state_dtype=bf16", "buffer_size=32", "draft_tokens=8"},
       "buffer_size - 1 + draft_tokens = 39"},
  };
  for (const Case& c : cases) {
    const std::string e = refusal(c.sets);
    EXPECT_NE(e.find("delta_dtype = bf16"), std::string::npos) << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
    EXPECT_NE(e.find("allowed"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  try {
    test::grid_with("spec_verify", {"delta_dtype=fp16"});
    FAIL() << "delta_dtype=fp16 resolved";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("delta_dtype"), std::string::npos) << m;
    EXPECT_NE(m.find("fp32, bf16"), std::string::npos) << m;
  }
}

TEST(DeltaDtypeAxis, EntryDtypesStateTheDeltas) {
  EXPECT_EQ(entry_dtypes("kvbuffer_verify", BufferForm::delta, StateDtype::bf16), "k=bf16 u=bf16 g=fp32");
  EXPECT_EQ(entry_dtypes("kvbuffer_verify", BufferForm::delta, StateDtype::fp32), "k=bf16 u=fp32 g=fp32");
  EXPECT_EQ(entry_dtypes("kvbuffer_verify", BufferForm::raw, StateDtype::bf16), "k=bf16 v=bf16 a=bf16 b=bf16");
  EXPECT_EQ(entry_dtypes("recurrent_verify", BufferForm::delta, StateDtype::bf16), "");
  // A CSV row: absent or empty delta_dtype reads fp32.
  EXPECT_EQ(entry_dtypes_of("kvbuffer_verify", "delta", "bf16"), "k=bf16 u=bf16 g=fp32");
  EXPECT_EQ(entry_dtypes_of("kvbuffer_verify", "delta", ""), "k=bf16 u=fp32 g=fp32");
}

TEST(DeltaDtypeAxis, ByteModelCountsTwoBytesADeltaElement) {
  const GdnShape s{16, 32, 128, 128};
  const double vv = double(s.heads_v) * s.head_dim_v;
  EXPECT_DOUBLE_EQ(kvbuffer_entry_bytes(s) - kvbuffer_entry_bytes(s, StateDtype::bf16), 2 * vv);
  const OutputDtype o = OutputDtype::bf16;
  for (int fill : {0, 5, 16}) {  // not due, due (B = 16)
    const ByteCount f = kvbuffer_verify_bytes(s, fill, 4, 16, o, StateDtype::bf16);
    const ByteCount b = kvbuffer_verify_bytes(s, fill, 4, 16, o, StateDtype::bf16, StateDtype::bf16);
    EXPECT_DOUBLE_EQ(f.read - b.read, fill * 2 * vv) << fill;  // the entries read
    EXPECT_DOUBLE_EQ(f.write - b.write, 4 * 2 * vv) << fill;   // the drafts' entries written
  }
  VerifyBatch batch;
  batch.shape = s;
  batch.kvbuffer = true;
  batch.draft_tokens = 4;
  batch.buffer_size = 16;
  batch.state_dtype = StateDtype::bf16;
  batch.fill = {3, 16};
  batch.accepted = {4, 2};
  const ByteCount f = verify_layer_step_bytes(batch);
  batch.delta_dtype = StateDtype::bf16;
  const ByteCount b = verify_layer_step_bytes(batch);
  EXPECT_DOUBLE_EQ(f.read - b.read, (3 + 16) * 2 * vv);
  EXPECT_DOUBLE_EQ(f.write - b.write, 2 * 4 * 2 * vv);
  batch.form = BufferForm::raw;
  batch.state_dtype = StateDtype::fp32;
  batch.fill = {3, 1};
  EXPECT_THROW(verify_layer_step_bytes(batch), std::invalid_argument);
}

// A committed CSV with both delta dtypes: its rows validate; a bf16 row's delta_dtype changed to a value the axis
// refuses is reported as that axis's value (the file's line), not as an entry_dtypes mismatch.
TEST(DeltaDtypeAxis, CsvRowsNameABadDeltaDtypeNotTheirEntries) {
  const std::string path = std::string(KVB_SOURCE_DIR) + "/results/spec_verify_bf16_deltas_h100.csv";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const ExperimentKind& kind = find_experiment_kind("spec_verify");
  const CsvTable good = parse_csv(text.str(), "deltas.csv");
  EXPECT_EQ(validate_result_input(good, result_schemas(), experiment_kinds(), "deltas.csv"), &kind);
  for (const char* bad : {"fp16", ""}) {
    std::string edited = text.str();
    // A bf16-delta row's delta_dtype, output_dtype and entry_dtypes (adjacent columns): the first bf16 is delta_dtype.
    const size_t at = edited.find(",bf16,bf16,k=bf16 u=bf16 g=fp32,");
    ASSERT_NE(at, std::string::npos);
    edited.replace(at + 1, 4, bad);
    try {
      validate_result_input(parse_csv(edited, "deltas.csv"), result_schemas(), experiment_kinds(), "deltas.csv");
      FAIL() << "delta_dtype '" << bad << "' accepted";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("deltas.csv:"), std::string::npos) << m;
      EXPECT_NE(m.find("delta_dtype"), std::string::npos) << m;
      EXPECT_EQ(m.find("entry_dtypes ="), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
}

}  // namespace
}  // namespace kvb
