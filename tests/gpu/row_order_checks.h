// What the GPU tests check of a row order written on the device (KVBufferDecodeParams::row_order,
// KVBufferVerifyParams::row_order; kernels/row_order.h), shared by the decode and verify workload tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gdn_params.h"
#include "kernels/row_order.h"

namespace kvb::test {

/// Expects `order` to be a permutation of the rows 0 .. N - 1, each position carrying its row's slot (`slots[row]`)
/// and that slot's fill (`fill[slot]`), and every due row (due(fill[slot]) true) to sit before
/// due_span(due rows, N, wave_rows). `where` names the case in failure messages. Returns the number of due rows.
template <class Due>
int expect_spread_order(const std::vector<OrderedRow>& order, const std::vector<int32_t>& slots,
                        const std::vector<int32_t>& fill, int wave_rows, Due due, const std::string& where) {
  const int N = int(order.size());
  int due_rows = 0;
  for (int r = 0; r < N; ++r) due_rows += due(fill[slots[r]]) ? 1 : 0;
  std::vector<int> seen(N, 0);
  for (int pos = 0; pos < N; ++pos) {
    const int row = order[pos].row;
    if (row < 0 || row >= N) {
      ADD_FAILURE() << where << ": position " << pos << " holds row " << row;
      continue;
    }
    ++seen[row];
    EXPECT_EQ(order[pos].slot, slots[row]) << where;
    EXPECT_EQ(order[pos].fill, fill[order[pos].slot]) << where;
    if (due(fill[order[pos].slot])) {
      EXPECT_LT(pos, due_span(due_rows, N, wave_rows)) << where << ", row " << row;
    }
  }
  for (int r = 0; r < N; ++r) EXPECT_EQ(seen[r], 1) << where << ", row " << r;
  return due_rows;
}

}  // namespace kvb::test
