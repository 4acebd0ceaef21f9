// The check case of a peer point: one layer's decode launch drawn with the Qwen3-Next distributions, and the float64
// reference after it on a few rows, written as files for the peer runner (peers/request.py reads them). The peer is
// checked against this project's reference, never against one of its own (docs/MEASURING.md, "Peers").
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/gdn_shape.h"

namespace kvb {

/// One array written for the peer runner: `name` (the runner's), `file` (in the case folder), `dtype` ("float32",
/// "float64" or "int32", little-endian) and `shape`.
struct PeerTensor {
  std::string name, file, dtype;
  std::vector<int64_t> shape;
};

/// What write_peer_decode_case wrote: the rows with a reference, and the arrays.
struct PeerDecodeCase {
  std::vector<int> check_rows;     ///< ascending batch rows
  std::vector<PeerTensor> tensors;  ///< in the order written
};

/// The rows a peer's check compares: the first, the middle and the last row of `batch` (fewer when they coincide).
std::vector<int> peer_check_rows(int batch);

/// The slot of each of `batch` rows: a random permutation of 0 .. batch-1 from `rng` (shuffled_slots) in which no
/// row of `check_rows` keeps its own index (when batch > 1), so that a peer that ignores slot indices fails the check.
std::vector<int32_t> peer_slots(int batch, const std::vector<int>& check_rows, std::mt19937_64& rng);

/// Draws one layer's decode launch for `batch` rows at `shape` from `seed` (reference/qwen3_next_inputs.h: gate
/// parameters, then the rows' tokens, then the checked rows' states), runs the float64 reference
/// (ref::recurrent_decode) on the checked rows, and writes into the existing folder `folder`, as float32 unless said:
///   q, k [N, H, K], v [N, HV, V], a, b [N, HV] (bf16 values); A_log, dt_bias [HV] and scale [1] (fp32 values);
///   slots [N] int32 (peer_slots); check_states [R, HV, K, V] (the checked rows' states before the step, layout kv);
///   ref_o [R, HV, V] and ref_states [R, HV, K, V] float64 (the reference after the step, layout kv).
/// Throws std::invalid_argument for a batch below 1 or an invalid shape, std::runtime_error naming a file that cannot
/// be written.
PeerDecodeCase write_peer_decode_case(const GdnShape& shape, int batch, uint64_t seed, const std::string& folder);

}  // namespace kvb
