// The peers of the decode kind: other projects' decode kernels, measured as sweep variants by the peer runner
// (peers/run_peer.py, from the packages the user installs; docs/MEASURING.md, "Peers").
#pragma once

#include <string>
#include <vector>

namespace kvb {

/// The decode kind's peer variants, in the order the variant axis lists them; the runner's registry
/// (peers/registry.py) defines the same ones: fla_recurrent, flashinfer_recurrent, replayssm_decode.
const std::vector<std::string>& decode_peer_variants();

/// True when `variant` is one of decode_peer_variants().
bool is_peer_variant(const std::string& variant);

}  // namespace kvb
