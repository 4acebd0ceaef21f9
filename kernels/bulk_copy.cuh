// Bulk copies into shared memory completing on an mbarrier (sm_90: cp.async.bulk, the copy engine that TMA uses),
// and the mbarrier operations a producer and its consumers need (PTX ISA, "Parallel Synchronization and
// Communication Instructions: mbarrier").
//
// A stage of a pipeline is guarded by two barriers: `full`, whose phase completes when its producer has arrived and
// every byte it announced (expect_tx) has landed, and `empty`, whose phase completes when every consumer has arrived
// (done reading the stage). Waiting takes the parity of the phase waited for: phase u of a barrier has parity u & 1.
#pragma once

#include <cstdint>

namespace kvb::dev {

/// The shared-memory address of p (a pointer into shared memory), as the bulk copy and mbarrier instructions take it.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Initialises the mbarrier at `bar` for `count` arrivals a phase. One thread; then mbarrier_init_fence() and a
/// block barrier before any use.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
/// Makes initialised mbarriers visible to the copy engine (after mbarrier_init, before the block barrier).
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// Announces `bytes` more bytes that copies will complete on `bar` in its current phase (no arrival).
__device__ __forceinline__ void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
/// One arrival on `bar` (release: the caller's earlier shared-memory writes are visible to whoever waits for the phase).
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile(
      "{\n"
      ".reg .b64 state;\n"
      "mbarrier.arrive.release.cta.shared::cta.b64 state, [%0];\n"
      "}\n" ::"r"(smem_addr(bar))
      : "memory");
}
/// Waits until the phase of `bar` with parity `parity` has completed (acquire: what the arrivals released, and the
/// bytes the copies completed, are visible after it).
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

/// Copies `bytes` (a multiple of 16; src and dst 16-byte aligned) from global to shared memory with the copy engine,
/// completing them on `bar` (which must expect them: mbarrier_expect_tx).
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

/// Synchronises the `threads` threads (a multiple of 32) of the block that call it with the same barrier `id`
/// (1 to 15; 0 is __syncthreads'): a barrier for a group of warps while other warps of the block do other work.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace kvb::dev
