// The state_dtype axis of the decode and short_context experiment kinds on the CPU: fp32 by default, bf16 taken by
// recurrent and KVBuffer decode (delta form), refused with a one-line reason naming the axis for the peers and the raw
// buffer form, bad values listing the allowed ones; the axis column sits where older CSVs held a result column of the
// same name, so their header is unchanged (spec_verify's bad values and column too).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/sweep/csv.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

TEST(StateDtypeAxis, DefaultsToFp32AndTakesBf16ForRecurrentAndKVBuffer) {
  for (const char* kind_name : {"decode", "short_context"}) {
    SCOPED_TRACE(kind_name);
    const ExperimentKind& kind = find_experiment_kind(kind_name);
    const auto def = test::grid_with(kind_name, {"variant=recurrent"});
    ASSERT_EQ(def.size(), 1u);
    EXPECT_EQ(def[0].get("state_dtype"), "fp32");
    const auto both = test::grid_with(kind_name, {"variant=recurrent,kvbuffer", "state_dtype=fp32,bf16"});
    ASSERT_EQ(both.size(), 4u);
    for (const Point& p : both) EXPECT_EQ(kind.validate(p), "") << p.label();
  }
}

TEST(StateDtypeAxis, BadValueListsTheAllowedOnes) {
  for (const char* kind : {"decode", "short_context", "spec_verify"}) {
    try {
      test::grid_with(kind, {"state_dtype=fp16"});
      FAIL() << kind << ": state_dtype=fp16 resolved";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("state_dtype"), std::string::npos) << kind << ": " << m;
      EXPECT_NE(m.find("fp32, bf16"), std::string::npos) << kind << ": " << m;
    }
  }
}

TEST(StateDtypeAxis, PeersAndTheRawFormRefuseBf16) {
  const ExperimentKind& kind = find_experiment_kind("decode");
  for (const Point& p : test::grid_with("decode", {"variant=fla_recurrent", "state_dtype=fp32,bf16"})) {
    const std::string e = kind.validate(p);
    if (p.get("state_dtype") == "fp32") {
      EXPECT_EQ(e, "") << p.label();
    } else {
      EXPECT_NE(e.find("state_dtype = bf16 is not supported by variant fla_recurrent"), std::string::npos) << e;
      EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
  }
  for (const Point& p :
       test::grid_with("decode", {"variant=kvbuffer", "buffer_form=raw", "buffer_size=8", "state_dtype=bf16"})) {
    const std::string e = kind.validate(p);
    EXPECT_NE(e.find("state_dtype = bf16 is not supported with buffer_form = raw"), std::string::npos) << e;
  }
}

TEST(StateDtypeAxis, ColumnFollowsTheModelAxesBeforeTheResults) {
  for (const char* kind_name : {"decode", "short_context", "spec_verify"}) {
    SCOPED_TRACE(kind_name);
    const std::vector<std::string> cols = csv_columns(find_experiment_kind(kind_name));
    const auto at = std::find(cols.begin(), cols.end(), "state_dtype");
    ASSERT_NE(at, cols.end());
    ASSERT_NE(at, cols.begin());
    EXPECT_EQ(*(at - 1), "seed");
    ASSERT_NE(at + 1, cols.end());
    // spec_verify: then delta_dtype, the axis added after it.
    const bool verify = std::string(kind_name) == "spec_verify";
    EXPECT_EQ(*(at + 1), verify ? "delta_dtype" : "output_dtype");
    if (verify) {
      ASSERT_NE(at + 2, cols.end());
      EXPECT_EQ(*(at + 2), "output_dtype");
    }
  }
}

}  // namespace
}  // namespace kvb
