// A long decode run against the float64 reference (DESIGN.md section 4): the drift of a stored state's rounding over
// thousands of tokens, for recurrent decode and KVBuffer decode with fp32 or bf16 states, from the same inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/gdn_shape.h"

namespace kvb {

/// The token counts at which a run records its errors (those up to its length).
inline const std::vector<int>& accuracy_checkpoints() {
  static const std::vector<int> t = {1, 64, 512, 4096, 16384};
  return t;
}

/// One accuracy run: `batch` rows decoding `tokens` tokens each, one layer of `shape`, fresh tokens every step drawn
/// with the Qwen3-Next distributions (ref::Qwen3NextInputs, `seed`), states drawn the same way and stored as
/// `state_dtype`; KVBuffer (kvbuffer true) with buffer size `buffer_size`, every row's buffer starting empty.
struct AccuracyConfig {
  bool kvbuffer = false;
  GdnShape shape;
  int batch = 2;
  int buffer_size = 16;
  StateDtype state_dtype = StateDtype::fp32;
  int tokens = 4096;
  uint64_t seed = 0;
};

/// The errors at one checkpoint, per head relative to the head's largest element of the float64 reference, the
/// largest over the rows: the state after `tokens` tokens (KVBuffer: its checkpoint with the buffered entries folded
/// in, on both sides), and the largest output error over the first `tokens` tokens (fp32 outputs).
struct AccuracyPoint {
  int tokens = 0;
  double state_err = 0;
  double o_err = 0;
};

/// Runs `cfg` on the current CUDA device, the float64 reference (exact: nothing rounded) beside it, starting both from
/// the states as stored. Returns one AccuracyPoint per accuracy_checkpoints() entry up to cfg.tokens, and the last
/// token when it is not one of them. Throws std::invalid_argument for a bad config, CudaError on a CUDA failure.
std::vector<AccuracyPoint> run_accuracy(const AccuracyConfig& cfg);

}  // namespace kvb
