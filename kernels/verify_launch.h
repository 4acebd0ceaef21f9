// The verify launchers' internal entry points, shared by kernels/kvbuffer_verify.cu (the dispatch) and the kernels'
// own translation units.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/gdn_params.h"

namespace kvb {

/// Launches the tensor-core verify kernel for p (validate(p) already passed, p.kernel may be automatic), or, with
/// `describe`, fills it and launches nothing. Returns the launch's or the occupancy query's error, or cudaSuccess.
cudaError_t launch_tensor_core_verify(const KVBufferVerifyParams& p, cudaStream_t stream,
                                      KVBufferVerifyLaunch* describe);
/// The same for the staged verify kernel (validate_staged_verify(p) already passed).
cudaError_t launch_staged_verify(const KVBufferVerifyParams& p, cudaStream_t stream, KVBufferVerifyLaunch* describe);

}  // namespace kvb
