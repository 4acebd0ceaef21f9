// State layout conversion of the reference (kv [HV][K][V] <-> vk [HV][V][K]).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "reference/gdn_reference.h"

namespace kvb::ref {
namespace {

TEST(StateLayoutConversion, KvToVkTransposesEachHeadAndVkToKvInvertsIt) {
  const GdnShape s{1, 2, 3, 5};  // heads_qk, heads_v, head_dim_k, head_dim_v
  const int HV = s.heads_v, K = s.head_dim_k, V = s.head_dim_v;
  std::vector<double> kv(size_t(s.state_elems()));
  for (int h = 0; h < HV; ++h)
    for (int k = 0; k < K; ++k)
      for (int v = 0; v < V; ++v) kv[(size_t(h) * K + k) * V + v] = 100.0 * h + 10.0 * k + v + 0.5;
  const std::vector<double> vk = kv_to_vk(s, kv);
  ASSERT_EQ(vk.size(), kv.size());
  for (int h = 0; h < HV; ++h)
    for (int v = 0; v < V; ++v)
      for (int k = 0; k < K; ++k)
        EXPECT_EQ(vk[(size_t(h) * V + v) * K + k], 100.0 * h + 10.0 * k + v + 0.5) << h << " " << v << " " << k;
  EXPECT_EQ(vk_to_kv(s, vk), kv);
  EXPECT_THROW(kv_to_vk(s, std::vector<double>(kv.size() - 1)), std::invalid_argument);
  EXPECT_THROW(vk_to_kv(s, std::vector<double>(kv.size() + 1)), std::invalid_argument);
}

}  // namespace
}  // namespace kvb::ref
