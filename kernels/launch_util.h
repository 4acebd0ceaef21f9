// Host-side helpers shared by the launchers: input validation and cached device facts.
#pragma once

#include <string>

#include "kernels/gdn_params.h"

namespace kvb {

/// "" when the token inputs hold every pointer the kernels need for `batch` rows, else the reason.
std::string validate_inputs(const TokenInputs& in, int batch);

/// "" when a KVBuffer pool is usable (pointers set, 1 <= buffer_size <= capacity <= kMaxBuffer), else the reason.
std::string validate_pool(const KVBufferPool& pool);

/// Streaming multiprocessors of the current device (cached per device; 132 when it cannot be read).
int sm_count();

}  // namespace kvb
