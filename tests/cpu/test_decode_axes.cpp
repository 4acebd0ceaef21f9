// The decode experiment kind's launch axis on the CPU: plain and pdl resolve, other values name the axis, and the
// kind's point check refuses pdl where no kernel takes it (the raw buffer form) with a one-line reason.
#include <gtest/gtest.h>

#include <string>

#include "test_regression_support.h"

namespace kvb {
namespace {

/// The decode grid with the default axes and the given `--set` overrides; throws UsageError from resolve_axes.
std::vector<Point> decode_grid(const std::vector<std::string>& sets) { return test::grid_with("decode", sets); }

TEST(DecodeLaunchAxis, DefaultsToPlainAndTakesPdl) {
  const auto def = decode_grid({"variant=recurrent"});
  ASSERT_EQ(def.size(), 1u);
  EXPECT_EQ(def[0].get("launch"), "plain");
  const auto both = decode_grid({"variant=recurrent,kvbuffer", "launch=plain,pdl"});
  ASSERT_EQ(both.size(), 4u);
  const ExperimentKind& kind = find_experiment_kind("decode");
  for (const Point& p : both) EXPECT_EQ(kind.validate(p), "") << p.label();
}

TEST(DecodeLaunchAxis, BadValueNamesTheAxis) {
  try {
    decode_grid({"launch=fast"});
    FAIL() << "launch=fast resolved";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("launch"), std::string::npos) << m;
    EXPECT_NE(m.find("pdl"), std::string::npos) << m;  // lists the allowed values
  }
}

TEST(DecodeLaunchAxis, RawFormRefusesPdl) {
  const ExperimentKind& kind = find_experiment_kind("decode");
  const auto pts = decode_grid({"variant=kvbuffer", "buffer_form=raw", "launch=plain,pdl", "buffer_size=8"});
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

}  // namespace
}  // namespace kvb
