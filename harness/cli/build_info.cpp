// Build facts embedded by harness/cli/git_sha.cmake (build_info.h).
#include "harness/cli/build_info.h"

#include "kvb_git_sha.h"

namespace kvb {

std::string build_git_sha() { return KVB_GIT_SHA; }

}  // namespace kvb
