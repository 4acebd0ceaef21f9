// Float64 reference of the KVBuffer raw form (DESIGN.md section 3, "Raw form"; kernels/kvbuffer_raw_params.h), one
// function per raw-form kernel with the same name and meaning. It evaluates the chunkwise (UT) transform literally:
// every call rebuilds U = (I + A)^-1 (beta * (V - e^G * (K^ S0))) over all entries, so that it checks the kernels'
// shortcut (outputs from d = (I + A)^-T c) against the textbook form. Tensors as in gdn_reference.h.
#pragma once

#include <vector>

#include "reference/gdn_reference.h"

namespace kvb::ref {

/// A request's KVBuffer in raw form: checkpoint S0 [HV][K][V] and the raw entries in token order (each a TokenRaw
/// whose k, v, a, b are read; q is not).
struct RawKVBufferSlot {
  std::vector<double> checkpoint;
  std::vector<TokenRaw> entries;
};

/// Raw-form decode of one request (mirrors launch_kvbuffer_raw_decode): o [HV][V] of token t after the entries,
/// appends t's raw entry, and folds every entry into S0 when the buffer then holds buffer_size entries.
/// Throws std::invalid_argument on a size mismatch, buffer_size < 1 or a buffer already holding buffer_size entries.
void kvbuffer_raw_decode(const GdnShape& s, int buffer_size, const GateParams& gp, const TokenRaw& t,
                         RawKVBufferSlot& slot, std::vector<double>& o);

/// Raw-form verification (mirrors launch_kvbuffer_raw_verify): o [m][HV][V] of the m drafts after the entries,
/// draft i after drafts 0 .. i-1; the slot is not changed.
void kvbuffer_raw_verify(const GdnShape& s, const GateParams& gp, const std::vector<TokenRaw>& drafts,
                         const RawKVBufferSlot& slot, std::vector<double>& o);

/// Raw-form accept (mirrors launch_kvbuffer_raw_accept): appends the first `accepted` drafts' raw entries; when the
/// buffer then holds buffer_size entries or more, folds all of them into S0 and empties it.
void kvbuffer_raw_accept(const GdnShape& s, int buffer_size, const GateParams& gp, const std::vector<TokenRaw>& drafts,
                         int accepted, RawKVBufferSlot& slot);

/// The current state e^{G_n} S0 + sum_j e^{G_n - G_j} k^_j u_j^T with U rebuilt from the raw entries, [HV][K][V].
std::vector<double> kvbuffer_raw_state(const GdnShape& s, const GateParams& gp, const RawKVBufferSlot& slot);

}  // namespace kvb::ref
