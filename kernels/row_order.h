// The order in which a KVBuffer launch's blocks take the batch rows (KVBufferDecodeParams::row_order,
// KVBufferVerifyParams::row_order). A due row (one whose blocks fold its buffer into the checkpoint: a decode step
// that fills the buffer, a verify after a commit that filled it) costs its blocks the checkpoint's bytes once more and
// a longer chain of products; blocks start in linear index order, so a due row that falls in the launch's last wave
// trails it. The order spreads the due rows evenly over the positions before the last wave (over every position when
// they are more) and keeps the other rows in batch order around them.
#pragma once

#include <cstdint>

#include "core/gdn_shape.h"

namespace kvb {

/// Positions the due rows spread over: all but the last wave's `wave_rows`, at least `due_rows`, at most `batch`.
KVB_HOST_DEVICE inline int64_t due_span(int64_t due_rows, int64_t batch, int64_t wave_rows) {
  const int64_t span = batch - (wave_rows > 0 ? wave_rows : 0);
  return span < due_rows ? due_rows : span > batch ? batch : span;
}

/// Due positions at or before position p: the due rows of rank k take floor(k span / due_rows).
KVB_HOST_DEVICE inline int64_t due_at_or_before(int64_t p, int64_t due_rows, int64_t span) {
  if (due_rows == 0) return 0;
  if (p >= span) return due_rows;
  const int64_t c = ((p + 1) * due_rows + span - 1) / span;
  return c < due_rows ? c : due_rows;
}

/// The position (0 .. batch - 1) of a row in the order: `rank` is its rank among the due rows (due) or among the
/// others (not due), in batch order; `due_rows` of `batch` rows are due; `wave_rows` rows make one wave of the launch.
/// A permutation of the rows for every rank assignment.
KVB_HOST_DEVICE inline int64_t row_position(bool due, int64_t rank, int64_t due_rows, int64_t batch,
                                            int64_t wave_rows) {
  const int64_t span = due_span(due_rows, batch, wave_rows);
  if (due) return rank * span / due_rows;
  // The rank-th position no due row takes: the smallest p with (p + 1) - due_at_or_before(p) = rank + 1.
  int64_t lo = rank, hi = batch - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (mid + 1 - due_at_or_before(mid, due_rows, span) >= rank + 1) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

}  // namespace kvb
