// The GPU proof of a capacity: with the device's free memory held at the budget, allocate every per-request pool for
// the modelled number of requests as the kernels need them (one cudaMalloc per pool and layer), run one step at that
// batch over all layers, and show that the pools of one more request do not fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/kinds/capacity_model.h"
#include "core/cuda_check.h"

namespace kvb::capacity {

/// Free memory of the current CUDA device, bytes (cudaMemGetInfo). Throws kvb::CudaError.
int64_t device_free_bytes();

/// Holds device memory so that the current device's free memory is at most the budget: one cudaMalloc of the free
/// memory less the budget, rounded up to kAllocationGranule. budget_bytes() is the free memory left after it (at most
/// 2 MiB below the budget asked for): the budget the model and the probe use. Never managed memory.
class BudgetBlocker {
 public:
  /// Throws UsageError naming --budget-gib when the device has less free memory than `budget_bytes`, kvb::CudaError
  /// when a CUDA call fails.
  explicit BudgetBlocker(int64_t budget_bytes);
  int64_t budget_bytes() const { return budget_; }

 private:
  DeviceBuffer<unsigned char> blocker_;
  int64_t budget_ = 0;
};

/// Runs one step of every plan at one layer (allocating, filling and launching as the probe does), at one request,
/// at warm_up_wide_batch requests and at the plan's max_requests in `budget_bytes` (the budget the probes will hold:
/// the batch its probe runs), so that every kernel a probe may launch (launchers pick narrower tiles for grids that
/// do not fill the GPU, and KVBuffer verify its tensor-core kernel only for large batches) is loaded, and its lazily
/// loaded code takes its device memory, before the budget is set. Launchers that return cudaErrorNotSupported are
/// skipped, and so is a failed step at the probe's batch (the probe reports it). Throws kvb::CudaError on any other
/// CUDA failure, std::runtime_error when a step at one request or at the wide batch fails.
void warm_up(const std::vector<CapacityPlan>& plans, uint64_t seed, int64_t budget_bytes);

/// Requests at which every launcher of a plan's shape takes its widest-grid kernels: kWideGridBlocksPerSm blocks per
/// SM of one value head per request (kernels/launch_util.h).
int64_t warm_up_wide_batch(const CapacityPlan& plan);

/// What the probe of one row found.
struct ProbeResult {
  int64_t measured = 0;          ///< largest N whose pools (and workspace) were allocated; may exceed the model by
                                 ///< the requests that fit in the kDriverHeadroom the model keeps free (status ok)
  bool model_fitted = false;     ///< the pools of the modelled N requests were allocated
  bool one_more_failed = false;  ///< holding the pools of `measured` requests, their growth for one more request
                                 ///< failed with cudaErrorMemoryAllocation
  std::string step;              ///< the step at batch `measured`: "ok", one starting "kernel not available"
                                 ///< (kStatusNoKernel), or "failed: ..."
  std::string status;            ///< the row's status: "ok", the step's "kernel not available ...", or what
                                 ///< disagreed or failed
};

/// Proves `model_requests` for `plan` within the current free memory (`budget_bytes`, set by a BudgetBlocker):
///  1. allocates the plan's pools for N = model_requests: per layer one cudaMalloc per pool array of N times its
///     per-request bytes (states, scratch and checkpoints at the plan's state dtype), the fill index once, and the
///     step workspace (capacity_model.h), each rounded up to kAllocationGranule (so that the driver cannot pack small
///     arrays into a shared granule and the footprint is exactly footprint_bytes); when that fails with
///     cudaErrorMemoryAllocation, binary-searches down for the largest N that fits (the model over-counted);
///  2. fills states, checkpoints, buffered entries, draft keys and inputs with random values (Qwen3-Next
///     distributions, harness/workloads/device_random.h), buffer positions staggered (fill = slot % B), and runs one
///     step at batch N over all layers (launch_recurrent_decode / launch_recurrent_verify / launch_kvbuffer_decode and
///     launch_kvbuffer_advance / launch_kvbuffer_verify), then synchronises;
///  3. holding all of that, allocates the pools' growth for one more request: for every pool array and layer (and the
///     workspace) the granules by which its allocation for N + 1 requests exceeds the one for N. That must fail with
///     cudaErrorMemoryAllocation (the error is cleared). When it does not, searches up for the largest N whose pools
///     fit (the model under-counted).
/// Frees everything (RAII). A launcher that returns cudaErrorNotSupported gives status "kernel not available" with
/// the allocation proof kept; so does a bf16 row of recurrent verify, whose kernel stores fp32 states only ("kernel
/// not available: ... takes fp32 states only ..."), or of KVBuffer verify at a shape its tensor-core kernel does not
/// take, without launching anything. Throws
/// kvb::CudaError only for CUDA failures other than out-of-memory outside the step.
ProbeResult probe_capacity(const CapacityPlan& plan, int64_t budget_bytes, int64_t model_requests, uint64_t seed);

}  // namespace kvb::capacity
