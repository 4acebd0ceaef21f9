// The tile of a launch as a visible parameter: TileShape's text form, each launcher family's explicit tiles and their
// checks, and the `tile` axis of the decode and spec_verify kinds (auto by default, refused where the variant's
// launcher does not take it, read as auto in a CSV written before the column existed).
#include <gtest/gtest.h>

#include <string>

#include "harness/kinds/registry.h"
#include "harness/kinds/runner_support.h"
#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_raw_launch.h"
#include "test_regression_support.h"

namespace kvb {
namespace {

TEST(TileShape, TextFormRoundTrips) {
  TileShape t;
  EXPECT_TRUE(parse_tile("auto", t));
  EXPECT_TRUE(t.is_auto());
  EXPECT_EQ(to_string(t), "auto");
  ASSERT_TRUE(parse_tile("64x128", t));
  EXPECT_EQ(t, (TileShape{64, 128}));
  EXPECT_EQ(to_string(t), "64x128");
  for (const char* bad : {"", "64", "64x", "x128", "064x128", "64x128 ", "64X128", "0x128", "-64x128", "Auto"}) {
    TileShape u{32, 128};
    EXPECT_FALSE(parse_tile(bad, u)) << bad;
    EXPECT_EQ(u, (TileShape{32, 128})) << bad;  // unchanged
  }
}

TEST(TileShape, FamiliesTakeTheirOwnTilesAtHeadDim128) {
  const GdnShape qwen;  // Qwen3-Next TP1: K = V = 128
  EXPECT_EQ(validate_tile({}, recurrent_decode_tiles(), qwen, "recurrent decode"), "");
  for (const TileShape& t : recurrent_decode_tiles())
    EXPECT_EQ(validate_tile(t, recurrent_decode_tiles(), qwen, "recurrent decode"), "") << to_string(t);
  const std::string e = validate_tile({64, 128}, recurrent_decode_tiles(), qwen, "recurrent decode");
  EXPECT_NE(e.find("tile = 64x128"), std::string::npos) << e;
  EXPECT_NE(e.find("allowed: auto, 32x128"), std::string::npos) << e;
  GdnShape k64 = qwen;
  k64.head_dim_k = 64;
  EXPECT_NE(validate_tile({64, 128}, kvbuffer_verify_tiles(), k64, "kvbuffer verify").find("head_dim_k = 128"),
            std::string::npos);
  EXPECT_EQ(validate_tile({}, kvbuffer_verify_tiles(), k64, "kvbuffer verify"), "");
}

TEST(TileShape, RawFormTakesWidthsThatDivideTheHead) {
  GdnShape s;
  for (const TileShape& t : raw_tiles()) {
    EXPECT_EQ(validate_raw_tile(t, s), "") << to_string(t);
    EXPECT_EQ(raw_slice_width(4096, s, t), t.columns);
  }
  EXPECT_NE(validate_raw_tile({64, 256}, s), "");
  s.head_dim_k = 256;  // at most 32 columns
  EXPECT_NE(validate_raw_tile({64, 128}, s), "");
  EXPECT_EQ(validate_raw_tile({32, 128}, s), "");
  s.head_dim_k = 128;
  s.head_dim_v = 48;  // 16 divides it, 32 does not
  EXPECT_EQ(validate_raw_tile({16, 128}, s), "");
  EXPECT_NE(validate_raw_tile({32, 128}, s), "");
}

TEST(TileAxis, DefaultsToAutoAndTakesTheVariantsTiles) {
  for (const char* kind : {"decode", "spec_verify"}) {
    SCOPED_TRACE(kind);
    const auto def = test::grid_with(kind, {});
    ASSERT_FALSE(def.empty());
    for (const Point& p : def) EXPECT_EQ(p.get("tile"), "auto") << p.label();
  }
  const ExperimentKind& decode = find_experiment_kind("decode");
  for (const Point& p :
       test::grid_with("decode", {"variant=recurrent", "tile=auto,32x128,64x256,128x128,128x256,128x512"}))
    EXPECT_EQ(decode.validate(p), "") << p.label();
  for (const Point& p :
       test::grid_with("decode", {"variant=kvbuffer", "buffer_size=8", "tile=32x128,64x128,64x256,128x128,128x256"}))
    EXPECT_EQ(decode.validate(p), "") << p.label();
  for (const Point& p : test::grid_with("decode", {"variant=kvbuffer", "buffer_size=8", "buffer_form=raw",
                                                   "tile=16x128,32x128,64x128"}))
    EXPECT_EQ(decode.validate(p), "") << p.label();
  const ExperimentKind& verify = find_experiment_kind("spec_verify");
  for (const Point& p : test::grid_with("spec_verify", {"variant=recurrent_verify", "tile=64x128,128x256,128x512"}))
    EXPECT_EQ(verify.validate(p), "") << p.label();
  for (const Point& p : test::grid_with("spec_verify", {"variant=kvbuffer_verify", "tile=64x128,128x256"}))
    EXPECT_EQ(verify.validate(p), "") << p.label();
}

TEST(TileAxis, RefusesATileTheVariantsLauncherDoesNotTake) {
  const std::pair<const char*, std::vector<std::string>> bad[] = {
      {"decode", {"variant=recurrent", "tile=64x128"}},                    // a KVBuffer decode tile
      {"decode", {"variant=kvbuffer", "tile=128x512"}},                    // a recurrent decode tile
      {"decode", {"variant=kvbuffer", "buffer_form=raw", "tile=64x256"}},  // not a raw-form tile
      {"decode", {"variant=recurrent", "tile=128x256", "head_dim_k=64"}},  // explicit tiles at K = 128 only
      {"spec_verify", {"variant=kvbuffer_verify", "tile=128x512"}},
      {"spec_verify", {"variant=recurrent_verify", "tile=32x128"}},
  };
  for (const auto& [kind, sets] : bad) {
    const auto points = test::grid_with(kind, sets);
    ASSERT_EQ(points.size(), 1u);
    const std::string e = find_experiment_kind(kind).validate(points[0]);
    EXPECT_NE(e.find("tile"), std::string::npos) << points[0].label() << " -> '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  try {
    test::grid_with("decode", {"tile=7x7"});
    FAIL() << "tile=7x7 resolved";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tile"), std::string::npos) << e.what();
  }
}

TEST(TileAxis, PointTileReadsTheAxis) {
  Point p;
  EXPECT_TRUE(point_tile(p).is_auto());  // a kind without the axis (short_context)
  p.axes = {{"variant", "kvbuffer"}, {"tile", "64x256"}};
  EXPECT_EQ(point_tile(p), (TileShape{64, 256}));
  p.axes = {{"variant", "recurrent"}, {"tile", ""}};
  EXPECT_TRUE(point_tile(p).is_auto());
}

}  // namespace
}  // namespace kvb
