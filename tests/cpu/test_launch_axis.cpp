// The launch axis of the decode and spec_verify experiment kinds on the CPU: plain and pdl resolve (plain by
// default), other values (and an empty one) name the axis and the allowed values, and each kind's point check refuses pdl where no kernel takes it (the raw
// buffer form) or where no earlier layer's launch precedes it (one layer), with a one-line reason.
#include <gtest/gtest.h>

#include <string>

#include "test_regression_support.h"

namespace kvb {
namespace {

/// An experiment kind with its recurrent and KVBuffer variant names.
struct LaunchKind {
  const char* kind;
  const char* recurrent;
  const char* kvbuffer;
};
constexpr LaunchKind kKinds[] = {{"decode", "recurrent", "kvbuffer"},
                                 {"spec_verify", "recurrent_verify", "kvbuffer_verify"}};

TEST(LaunchAxis, DefaultsToPlainAndTakesPdl) {
  for (const LaunchKind& k : kKinds) {
    SCOPED_TRACE(k.kind);
    const auto def = test::grid_with(k.kind, {std::string("variant=") + k.recurrent});
    ASSERT_EQ(def.size(), 1u);
    EXPECT_EQ(def[0].get("launch"), "plain");
    const auto both =
        test::grid_with(k.kind, {std::string("variant=") + k.recurrent + "," + k.kvbuffer, "launch=plain,pdl"});
    ASSERT_EQ(both.size(), 4u);
    const ExperimentKind& kind = find_experiment_kind(k.kind);
    for (const Point& p : both) EXPECT_EQ(kind.validate(p), "") << p.label();
  }
}

TEST(LaunchAxis, BadValueNamesTheAxis) {
  for (const LaunchKind& k : kKinds) {
    SCOPED_TRACE(k.kind);
    try {
      test::grid_with(k.kind, {"launch=fast"});
      FAIL() << "launch=fast resolved";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("launch"), std::string::npos) << m;
      EXPECT_NE(m.find("pdl"), std::string::npos) << m;  // lists the allowed values
    }
  }
}

TEST(LaunchAxis, EmptyValueListsTheAllowedOnes) {
  for (const LaunchKind& k : kKinds) {
    SCOPED_TRACE(k.kind);
    for (const char* set : {"launch=", "launch=plain,,pdl"}) {
      try {
        test::grid_with(k.kind, {set});
        FAIL() << set << " resolved";
      } catch (const UsageError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("--set launch: empty value (allowed: plain, pdl)"), std::string::npos) << m;
      }
    }
  }
}

TEST(LaunchAxis, RawFormRefusesPdl) {
  for (const LaunchKind& k : kKinds) {
    SCOPED_TRACE(k.kind);
    const ExperimentKind& kind = find_experiment_kind(k.kind);
    const auto pts = test::grid_with(
        k.kind, {std::string("variant=") + k.kvbuffer, "buffer_form=raw", "launch=plain,pdl", "buffer_size=8"});
    ASSERT_EQ(pts.size(), 2u);
    for (const Point& p : pts) {
      const std::string e = kind.validate(p);
      if (p.get("launch") == "plain") {
        EXPECT_EQ(e, "") << p.label();
      } else {
        EXPECT_NE(e.find("launch = pdl"), std::string::npos) << e;
        EXPECT_NE(e.find("buffer_form = raw"), std::string::npos) << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
      }
    }
  }
}

TEST(LaunchAxis, OneLayerRefusesPdl) {
  for (const LaunchKind& k : kKinds) {
    SCOPED_TRACE(k.kind);
    const ExperimentKind& kind = find_experiment_kind(k.kind);
    for (const Point& p : test::grid_with(k.kind, {std::string("variant=") + k.recurrent + "," + k.kvbuffer,
                                                   "launch=plain,pdl", "layers=1"})) {
      const std::string e = kind.validate(p);
      if (p.get("launch") == "plain") {
        EXPECT_EQ(e, "") << p.label();
      } else {
        EXPECT_NE(e.find("layers >= 2"), std::string::npos) << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
      }
    }
  }
}

}  // namespace
}  // namespace kvb
