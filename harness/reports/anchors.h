// The anchors: measurements of other projects' kernels on an H200 that the claims set this project's results against
// (results/anchors.csv, which plots/anchors.py reads too; docs/MEASURING.md, "Anchors"). One number a row.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kvb {

/// One row of the anchors CSV: `anchor` names the series; batch, draft_tokens and ring_length place the point (0
/// where a column is empty); value in `unit` (us/layer: per-layer microseconds of a 36-layer model step; GB/s).
struct AnchorValue {
  std::string anchor;
  int batch = 0, draft_tokens = 0, ring_length = 0;
  double value = 0;
  std::string unit, gpu, source, date;
};

/// Every row of an anchors CSV (columns anchor, batch, draft_tokens, ring_length, value, unit, gpu, source, date).
/// Throws UsageError naming the file when it cannot be read, a column is missing or a number is malformed.
std::vector<AnchorValue> read_anchors(const std::string& path);

/// The anchors file kvb uses: results/anchors.csv under the working directory (kvb runs from the repository root),
/// else the one of the source tree kvb was built from. Throws UsageError when neither exists.
std::string anchors_path();

/// The anchors of anchors_path(), read once per process.
const std::vector<AnchorValue>& anchors();

/// Per-layer microseconds of `anchor` by batch (its rows without draft tokens or ring length). Empty when absent.
std::map<int, double> anchor_by_batch(const std::string& anchor);
/// Per-layer microseconds of `anchor` by draft tokens, then batch. Empty when absent.
std::map<int, std::map<int, double>> anchor_by_drafts(const std::string& anchor);

}  // namespace kvb
