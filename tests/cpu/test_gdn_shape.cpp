// GdnShape's key head of a value head: the float form the kernels use equals the integer division.
#include <gtest/gtest.h>

#include "core/gdn_shape.h"

namespace kvb {
namespace {

TEST(GdnShapeKeyHead, EqualsTheIntegerDivisionForEveryHeadOfEveryGroup) {
  for (int H : {1, 2, 3, 7, 16, 64, 255})
    for (int group : {1, 2, 3, 4, 5, 8, 16, 33, 64})
      for (int h = 0; h < H * group; ++h) {
        const GdnShape s{H, H * group, 128, 128};
        ASSERT_EQ(s.key_head(h), h / group) << "H=" << H << " group=" << group << " h=" << h;
      }
}

TEST(GdnShapeKeyHead, ExactUpToTheStagedKernelsHeadCountAndBeyond) {
  // Every head of the largest launch the staged kernel takes (2^16 value heads), for the group sizes that divide it,
  // and sampled heads up to 2^22 (the bound GdnShape states).
  for (int group : {1, 2, 4, 8, 64, 1024}) {
    const GdnShape s{(1 << 16) / group, 1 << 16, 128, 128};
    for (int h = 0; h < (1 << 16); ++h) ASSERT_EQ(s.key_head(h), h / group) << "group=" << group << " h=" << h;
  }
  for (int group : {1, 3, 7, 32}) {
    const int H = (1 << 22) / group;
    const GdnShape s{H, H * group, 128, 128};
    for (int h = 0; h < H * group; h += 997) ASSERT_EQ(s.key_head(h), h / group) << "group=" << group << " h=" << h;
    for (int h = H * group - group; h < H * group; ++h) ASSERT_EQ(s.key_head(h), h / group) << "h=" << h;
  }
}

}  // namespace
}  // namespace kvb
