// Programmatic dependent launch (PDL, sm_90 and later): a kernel launched with it may start while the previous kernel
// on the stream finishes, so that its blocks stream memory the previous kernel does not write (a decode layer's own
// state) during that kernel's last wave, instead of after it. DESIGN.md section 4: one model step is one kernel per
// layer in a CUDA graph; PDL removes the gap and the ramp between those kernels, not a byte.
//
// The contract a PDL kernel keeps:
// - before pdl_wait(): it reads only memory that no earlier kernel of the step writes (slot indices, its own state);
// - it writes nothing before pdl_wait();
// - it calls pdl_launch_dependents() after pdl_wait(), so that a kernel two launches later (the next step of the same
//   layer, when nothing lies between) cannot start before this one's predecessor has completed.
// Without the launch attribute both calls are no-ops and the kernel runs as a plain launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "kernels/launch_util.h"

namespace kvb {
namespace dev {

/// Waits until the previous kernel on the stream has completed and its writes are visible (returns at once for a
/// launch without PDL).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the next kernel on the stream begin launching once every block of this grid has called it or exited.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// This block's place in the launch order: blockIdx.x fastest, then y, then z.
__device__ __forceinline__ int64_t linear_block_index() {
  return (int64_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}

/// True for a block of the launch's first wave: linear block index < first_wave (pdl_first_wave_blocks; 0 for a
/// plain launch). Such a block may copy its own state or checkpoint slice before pdl_wait().
__device__ __forceinline__ bool pdl_first_wave(int first_wave) { return linear_block_index() < first_wave; }

}  // namespace dev

/// Blocks of `kernel` (`threads` per block, `smem` bytes of dynamic shared memory) that the GPU holds at once, the
/// first wave a PDL launch may start early, in `blocks`; 0 when `pdl` is false (a plain launch). Returns the error of
/// the occupancy query (resident_blocks_per_sm, cached), or cudaSuccess.
template <typename Kernel>
cudaError_t pdl_first_wave_blocks(Kernel kernel, int threads, size_t smem, bool pdl, int& blocks) {
  blocks = 0;
  if (!pdl) return cudaSuccess;
  int per_sm = 0;
  if (const cudaError_t e = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), threads, smem, per_sm);
      e != cudaSuccess)
    return e;
  blocks = per_sm * sm_count();
  return cudaSuccess;
}

/// Launches `kernel<<<grid, block, smem, stream>>>(args...)`, with programmatic stream serialization when `pdl` (the
/// kernel may start before the previous kernel on the stream completes; it must keep the contract above). Captured
/// into a CUDA graph, the launch becomes a programmatic edge. Returns the launch's error (cudaGetLastError()).
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool pdl,
                          Args&&... args) {
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  if (const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...); e != cudaSuccess) return e;
  return cudaGetLastError();
}

}  // namespace kvb
