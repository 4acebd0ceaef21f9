// First-wave stagger: the blocks a launch's first wave puts on one SM start at once and, being alike, request their
// slices at once, compute at once and end at once; the blocks that take their places inherit that rhythm, so the SM's
// memory requests come in bursts with idle gaps between them. Holding each first-wave block for a share of about one
// block's life, by its place among the blocks its SM holds, spreads their starts so that some blocks load while
// others compute. The cost is a delay of at most (per_sm - 1) / per_sm of that time, once a launch; later blocks do
// not wait. A launch of fewer than two waves has no later wave to keep out of step, only a delay: it starts at once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch_util.h"
#include "kernels/pdl.cuh"

namespace kvb {

/// The stagger a launcher passes to its kernel (by value). ns: the spread of the starts in nanoseconds (0: none);
/// sms: the device's SMs; per_sm: the kernel's resident blocks an SM.
struct FirstWaveStagger {
  int ns = 0, sms = 0, per_sm = 0;
};

/// The spread the bf16 kernels that take it use: about the life of one of their blocks under load (a whole 32 KB
/// bf16 slice requested, reduced and, for a due row, stored).
constexpr int kFirstWaveStaggerNs = 6000;

namespace dev {

/// Holds block b (linear index) of the first wave, b < sms * per_sm, for (b / sms mod per_sm) / per_sm of s.ns
/// nanoseconds (%globaltimer); the block scheduler hands the first wave out one block an SM at a time, so b / sms is
/// the block's place among those its SM holds. Returns at once for every other block and when s.ns is 0.
__device__ __forceinline__ void stagger_first_wave(const FirstWaveStagger& s) {
  const int64_t b = linear_block_index();
  if (s.ns <= 0 || b >= int64_t(s.sms) * s.per_sm) return;
  const int place = int(b / s.sms) % s.per_sm;
  if (place == 0) return;
  const uint64_t hold = uint64_t(s.ns) * place / s.per_sm;
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(128);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < hold);
}

}  // namespace dev

/// The stagger of `ns` nanoseconds for a launch over `grid` of a kernel that holds `per_sm` blocks an SM: none (ns 0)
/// when `ns` is 0 or the grid makes fewer than two waves.
inline FirstWaveStagger first_wave_stagger(int per_sm, dim3 grid, int ns) {
  const int sms = sm_count();
  const int64_t blocks = int64_t(grid.x) * grid.y * grid.z, wave = int64_t(per_sm) * sms;
  return ns > 0 && per_sm > 0 && blocks >= 2 * wave ? FirstWaveStagger{ns, sms, per_sm} : FirstWaveStagger{};
}

/// The same for a launch of `kernel` (`threads` a block, `smem` bytes of dynamic shared memory), its blocks an SM
/// asked of the occupancy query (resident_blocks_per_sm, cached; not asked when `ns` is 0), in `out`. Returns the
/// query's error, or cudaSuccess.
template <typename Kernel>
cudaError_t first_wave_stagger(Kernel kernel, dim3 grid, int threads, size_t smem, int ns, FirstWaveStagger& out) {
  out = FirstWaveStagger{};
  if (ns <= 0) return cudaSuccess;
  int per_sm = 0;
  if (const cudaError_t e = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), threads, smem, per_sm);
      e != cudaSuccess)
    return e;
  out = first_wave_stagger(per_sm, grid, ns);
  return cudaSuccess;
}

}  // namespace kvb
