// The verify launchers' internal entry points, shared by kernels/kvbuffer_verify.cu (the dispatch) and the kernels'
// own translation units.
#pragma once

#include <cuda_runtime_api.h>

#include <type_traits>

#include "kernels/gdn_params.h"

namespace kvb {

/// Returns f(std::integral_constant<int, m>{}) for a draft count m in [1, kMaxDraftTokens], the verify kernels'
/// compile-time draft count (every loop over drafts fully unrolled); cudaErrorInvalidValue for any other m.
template <class F>
cudaError_t with_draft_tokens(int m, F&& f) {
  static_assert(kMaxDraftTokens == 8, "with_draft_tokens covers 1 to 8 drafts");
  switch (m) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    case 8: return f(std::integral_constant<int, 8>{});
  }
  return cudaErrorInvalidValue;
}

/// Launches the tensor-core verify kernel for p (validate(p) already passed, p.kernel may be automatic), or, with
/// `describe`, fills it and launches nothing. Returns the launch's or the occupancy query's error, or cudaSuccess.
cudaError_t launch_tensor_core_verify(const KVBufferVerifyParams& p, cudaStream_t stream,
                                      KVBufferVerifyLaunch* describe);
/// The same for the staged verify kernel (validate_staged_verify(p) already passed).
cudaError_t launch_staged_verify(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe);

}  // namespace kvb
