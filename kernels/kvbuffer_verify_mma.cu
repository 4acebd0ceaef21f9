// KVBuffer speculative verification on tensor cores (kernels/gdn_params.h, VerifyKernel::tensor_cores).
#include <string>

#include "kernels/gdn_params.h"
#include "kernels/verify_launch.h"

namespace kvb {

std::string validate_tensor_core_verify(const KVBufferVerifyParams& p) {
  return "kernel = tensor_cores is not available in this build (allowed: automatic, cuda_cores)";
}

cudaError_t launch_tensor_core_verify(const KVBufferVerifyParams& p, cudaStream_t stream,
                                      KVBufferVerifyLaunch* describe) {
  return cudaErrorInvalidValue;
}

}  // namespace kvb
