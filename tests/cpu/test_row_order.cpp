// The verify launches' row order (kernels/row_order.h): a permutation of the rows for any set of due rows, the due
// rows spread over the positions before the last wave, the others in batch order.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/row_order.h"

namespace kvb {
namespace {

/// The order row_position gives rows flagged in `due` (the host twin of launch_kvbuffer_order_rows): order[pos] = row.
std::vector<int> order_of(const std::vector<bool>& due, int wave_rows) {
  const int n = int(due.size());
  int due_rows = 0;
  for (bool d : due) due_rows += d;
  std::vector<int> order(n, -1);
  int due_rank = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t pos = row_position(due[i], due[i] ? due_rank : i - due_rank, due_rows, n, wave_rows);
    EXPECT_GE(pos, 0);
    EXPECT_LT(pos, n);
    if (pos >= 0 && pos < n) {
      EXPECT_EQ(order[pos], -1) << "position " << pos << " taken twice";
      order[pos] = i;
    }
    due_rank += due[i];
  }
  return order;
}

TEST(RowOrder, IsAPermutationWithDueRowsBeforeTheLastWave) {
  std::mt19937 rng(7);
  for (int n : {1, 2, 7, 64, 100, 256, 1025}) {
    for (int wave_rows : {0, 1, 33, 64, 2000}) {
      for (double p : {0.0, 0.06, 0.5, 0.9, 1.0}) {
        std::vector<bool> due(n);
        int due_rows = 0;
        for (int i = 0; i < n; ++i) due_rows += due[i] = std::bernoulli_distribution(p)(rng);
        const std::vector<int> order = order_of(due, wave_rows);
        const int64_t span = due_span(due_rows, n, wave_rows);
        int last_other = -1, seen_due = 0;
        for (int pos = 0; pos < n; ++pos) {
          const int row = order[pos];
          ASSERT_GE(row, 0) << "n " << n << " position " << pos << " left empty";
          if (due[row]) {
            EXPECT_LT(pos, span) << "n " << n << " wave " << wave_rows << ": due row " << row << " in the last wave";
            ++seen_due;
          } else {
            EXPECT_GT(row, last_other) << "the other rows keep batch order";
            last_other = row;
          }
        }
        EXPECT_EQ(seen_due, due_rows);
      }
    }
  }
}

TEST(RowOrder, SpreadsDueRowsEvenlyAndLeavesABatchWithoutThemAsItIs) {
  // 64 rows, 33 a wave, rows 3, 19, 35, 51 due: spread over positions 0 .. 30, a quarter apart.
  std::vector<bool> due(64, false);
  for (int r : {3, 19, 35, 51}) due[r] = true;
  const std::vector<int> order = order_of(due, 33);
  EXPECT_EQ(order[0], 3);
  EXPECT_EQ(order[7], 19);
  EXPECT_EQ(order[15], 35);
  EXPECT_EQ(order[23], 51);
  EXPECT_EQ(order[1], 0);
  EXPECT_EQ(order[63], 63);
  const std::vector<int> none = order_of(std::vector<bool>(10, false), 4);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(none[i], i);
}

}  // namespace
}  // namespace kvb
