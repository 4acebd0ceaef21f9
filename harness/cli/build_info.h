// What the kvb binary was built from.
#pragma once

#include <string>

namespace kvb {

/// Short git commit of the source tree at build time, "-dirty" appended when tracked files differed from it;
/// "unknown" when built outside a git checkout.
std::string build_git_sha();

}  // namespace kvb
