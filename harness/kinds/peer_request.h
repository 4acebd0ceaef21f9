// What kvb hands the peer runner for one decode point: request.json and the check case beside it, in a folder of
// their own (the contract peers/request.py reads; docs/MEASURING.md, "Peers").
#pragma once

#include <cstdint>
#include <string>

#include "core/gdn_shape.h"
#include "harness/measure/sampling.h"

namespace kvb {

/// One peer decode point, as the runner is asked to measure it: the same model step as a kvb recurrent point (one
/// launch per layer, each layer set with its own state pool; `groups` replicas for cold L2), the same warm-up,
/// samples, stopping rule and throttle discard (harness/measure/step_timing.h, sampling.h: the request carries the
/// rule's min_clock_fraction and max_throttled_seconds).
struct PeerDecodeRequest {
  std::string variant;       ///< a peer variant (harness/kinds/peer_variants.h)
  GdnShape shape;
  int batch = 1;
  int layers = 36;
  int groups = 1;            ///< model replicas per step (l2_rotation)
  uint64_t seed = 0;         ///< the check case's draws and the runner's device states
  std::string l2 = "cold";   ///< cold: L2 flushed (untimed) before each sample; hot: one set of pools shared
  int64_t l2_bytes = 0;      ///< the device's L2 size, bytes
  int device = 0;            ///< CUDA device index
  SamplingRule sampling;
};

/// Writes folder/request.json for `req`, with the check case's arrays (write_peer_decode_case) and a phase file
/// (folder/phase, rewritten by the runner with "timing" and "done"), into the existing folder `folder`. Returns the
/// request's path. Throws std::invalid_argument for a bad point (batch, shape), std::runtime_error naming a file
/// that cannot be written.
std::string write_peer_request(const PeerDecodeRequest& req, const std::string& folder);

/// `s` as a JSON string literal (quotes, backslashes and control characters escaped).
std::string json_string(const std::string& s);

}  // namespace kvb
