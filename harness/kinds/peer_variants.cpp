#include "harness/kinds/peer_variants.h"

#include <algorithm>

namespace kvb {

const std::vector<std::string>& decode_peer_variants() {
  static const std::vector<std::string> peers = {"fla_recurrent", "flashinfer_recurrent", "replayssm_decode"};
  return peers;
}

bool is_peer_variant(const std::string& variant) {
  const auto& p = decode_peer_variants();
  return std::find(p.begin(), p.end(), variant) != p.end();
}

}  // namespace kvb
