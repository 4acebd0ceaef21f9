// Buffer positions: request metadata shared by all layers, read by the KVBuffer kernels and written only here.
#include "kernels/gdn_params.h"

namespace kvb {
namespace {

__global__ void kvbuffer_advance_kernel(int32_t* fill, const int32_t* slot, int batch, int buffer_size) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch) return;
  const int s = slot[i];
  if (s < 0) return;
  const int n = fill[s] + 1;
  fill[s] = n >= buffer_size ? 0 : n;
}

__global__ void kvbuffer_clear_kernel(int32_t* fill, const int32_t* slot, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int s = slot[i];
  if (s >= 0) fill[s] = 0;
}

}  // namespace

cudaError_t launch_kvbuffer_advance(int32_t* fill, const int32_t* slot, int batch, int buffer_size,
                                    cudaStream_t stream) {
  if (!fill || !slot || batch < 1 || buffer_size < 1) return cudaErrorInvalidValue;
  kvbuffer_advance_kernel<<<(batch + 255) / 256, 256, 0, stream>>>(fill, slot, batch, buffer_size);
  return cudaGetLastError();
}

cudaError_t launch_kvbuffer_clear(int32_t* fill, const int32_t* slot, int count, cudaStream_t stream) {
  if (!fill || !slot || count < 1) return cudaErrorInvalidValue;
  kvbuffer_clear_kernel<<<(count + 255) / 256, 256, 0, stream>>>(fill, slot, count);
  return cudaGetLastError();
}

}  // namespace kvb
