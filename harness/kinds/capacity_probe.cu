// GPU proof of the capacity model (capacity_probe.h).
#include "harness/kinds/capacity_probe.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "harness/kinds/capacity_table.h"
#include "harness/workloads/device_random.h"
#include "harness/sweep/experiment_kind.h"
#include "kernels/gdn_params.h"
#include "kernels/launch_util.h"
#include "reference/qwen3_next_inputs.h"

namespace kvb::capacity {

namespace {

bool is_out_of_memory(const CudaError& e) { return e.code == cudaErrorMemoryAllocation; }

/// The pools of `requests` requests and the step workspace, allocated as a serving system would: one cudaMalloc per
/// pool array and layer (the fill index once), one for the workspace, each of its bytes rounded up to
/// kAllocationGranule. Throws kvb::CudaError.
class PoolSet {
 public:
  PoolSet(const CapacityPlan& p, int64_t requests) : plan_(p), requests_(requests) {
    const std::vector<WorkspacePiece> pieces = workspace_pieces(p, requests);
    int64_t offset = 0;
    for (const WorkspacePiece& w : pieces) {
      offsets_.push_back(offset);
      offset += round_up(w.bytes, kWorkspaceAlign);
    }
    names_ = pieces;
    workspace_ = DeviceBuffer<unsigned char>(size_t(round_up(offset, kAllocationGranule)));
    for (const PoolArray& a : p.arrays) {
      std::vector<DeviceBuffer<unsigned char>> per_layer;
      for (int l = 0; l < (a.per_layer ? p.model.layers : 1); ++l)
        per_layer.emplace_back(size_t(round_up(requests * a.bytes_per_request, kAllocationGranule)));
      arrays_.push_back(std::move(per_layer));
    }
  }

  /// Device pointer of pool array `name` in `layer` (layer ignored for arrays held once); nullptr when absent.
  template <typename T>
  T* array(const std::string& name, int layer = 0) const {
    for (size_t i = 0; i < plan_.arrays.size(); ++i)
      if (plan_.arrays[i].name == name)
        return reinterpret_cast<T*>(arrays_[i][plan_.arrays[i].per_layer ? layer : 0].get());
    return nullptr;
  }
  /// Device pointer of workspace piece `name`; nullptr when the plan has none.
  template <typename T>
  T* piece(const std::string& name) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i].name == name) return reinterpret_cast<T*>(workspace_.get() + offsets_[i]);
    return nullptr;
  }
  /// Element count of one layer's pool array `name` at this batch (bytes / sizeof(T)).
  template <typename T>
  size_t count(const std::string& name) const {
    for (const PoolArray& a : plan_.arrays)
      if (a.name == name) return size_t(requests_ * a.bytes_per_request) / sizeof(T);
    return 0;
  }

 private:
  const CapacityPlan& plan_;
  int64_t requests_;
  std::vector<WorkspacePiece> names_;
  std::vector<int64_t> offsets_;
  DeviceBuffer<unsigned char> workspace_;
  std::vector<std::vector<DeviceBuffer<unsigned char>>> arrays_;
};

/// True when the pools of `requests` requests can be allocated now (out-of-memory cleared); other errors throw.
bool pools_fit(const CapacityPlan& p, int64_t requests) {
  try {
    PoolSet pools(p, requests);
    return true;
  } catch (const CudaError& e) {
    if (!is_out_of_memory(e)) throw;
    cudaGetLastError();
    return false;
  }
}

/// Random states (of the plan's state dtype), entries, draft keys and inputs; slot = row, fill = slot % B; gate
/// parameters of every layer drawn from the Qwen3-Next initialisation (reference/qwen3_next_inputs.h).
void fill_inputs(const CapacityPlan& p, const PoolSet& pools, int64_t n, uint64_t seed, cudaStream_t stream) {
  const GdnShape& s = p.model.shape;
  const int L = p.model.layers;
  uint64_t next = seed;
  std::mt19937_64 rng(seed);
  std::vector<float> A_log, dt_bias;
  for (int l = 0; l < L; ++l) {
    const ref::GateParams gp = ref::draw_gate_params(s, rng);
    A_log.insert(A_log.end(), gp.A_log.begin(), gp.A_log.end());
    dt_bias.insert(dt_bias.end(), gp.dt_bias.begin(), gp.dt_bias.end());
  }
  KVB_CUDA_CHECK(cudaMemcpyAsync(pools.piece<float>("A_log"), A_log.data(), A_log.size() * 4, cudaMemcpyHostToDevice,
                                 stream));
  KVB_CUDA_CHECK(cudaMemcpyAsync(pools.piece<float>("dt_bias"), dt_bias.data(), dt_bias.size() * 4,
                                 cudaMemcpyHostToDevice, stream));
  std::vector<int32_t> slot(static_cast<size_t>(n)), fill(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    slot[size_t(i)] = int32_t(i);
    fill[size_t(i)] = p.c.buffer_size > 0 ? int32_t(i % p.c.buffer_size) : 0;
  }
  KVB_CUDA_CHECK(cudaMemcpyAsync(pools.piece<int32_t>("slot"), slot.data(), slot.size() * 4, cudaMemcpyHostToDevice,
                                 stream));
  if (int32_t* f = pools.array<int32_t>("fill"))
    KVB_CUDA_CHECK(cudaMemcpyAsync(f, fill.data(), fill.size() * 4, cudaMemcpyHostToDevice, stream));
  if (int32_t* a = pools.array<int32_t>("group_arrivals"))
    KVB_CUDA_CHECK(cudaMemsetAsync(a, 0, pools.count<int32_t>("group_arrivals") * 4, stream));

  const size_t rows = size_t(n) * size_t(p.tokens);
  for (const char* name : {"q", "k"})
    if (bf16* x = pools.piece<bf16>(name)) fill_normal(x, rows * s.heads_qk * s.head_dim_k, 0.f, 1.f, ++next, stream);
  fill_normal(pools.piece<bf16>("v"), rows * s.heads_v * s.head_dim_v, 0.f, 1.f, ++next, stream);
  fill_normal(pools.piece<bf16>("a"), rows * s.heads_v, 0.f, 1.f, ++next, stream);
  fill_normal(pools.piece<bf16>("b"), rows * s.heads_v, 0.f, 1.f, ++next, stream);

  const float state_sd = 1.f / std::sqrt(float(s.head_dim_k));
  for (int l = 0; l < L; ++l) {
    for (const char* name : {"state", "checkpoint"}) {
      if (p.c.state_dtype == StateDtype::bf16) {
        if (bf16* x = pools.array<bf16>(name, l))
          fill_normal(x, pools.count<bf16>(name), 0.f, state_sd, ++next, stream);
      } else if (float* x = pools.array<float>(name, l)) {
        fill_normal(x, pools.count<float>(name), 0.f, state_sd, ++next, stream);
      }
    }
    if (bf16* x = pools.array<bf16>("keys", l)) fill_normal(x, pools.count<bf16>("keys"), 0.f, 1.f, ++next, stream);
    if (float* x = pools.array<float>("deltas", l))
      fill_normal(x, pools.count<float>("deltas"), 0.f, 0.5f, ++next, stream);
    if (float* x = pools.array<float>("log_decay", l))
      fill_log_decay(x, pools.count<float>("log_decay"), s.heads_v, pools.piece<float>("A_log") + l * s.heads_v,
                     pools.piece<float>("dt_bias") + l * s.heads_v, ++next, stream);
  }
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host vectors above go out of scope
}

/// The status of a launcher's result: "" when it launched, else "kernel not available" or "failed: ...".
template <typename Params>
std::string launch_status(cudaError_t e, const char* launcher, const Params& p) {
  if (e == cudaSuccess) return "";
  if (e == cudaErrorNotSupported) return kStatusNoKernel;
  if (e == cudaErrorInvalidValue) return fmt::format("failed: {}: {}", launcher, validate(p));
  return fmt::format("failed: {}: {}", launcher, cudaGetErrorName(e));
}

/// "" when this project has a kernel that stores the plan's state dtype for its variant, else the step's status:
/// recurrent decode, KVBuffer decode and KVBuffer verify (its tensor-core kernel) take fp32 and bf16 states;
/// recurrent verify (fp32 scratch) takes fp32 only, so a bf16 row of its keeps its allocation proof and runs no step.
std::string dtype_unavailable(const CapacityPlan& p) {
  if (p.c.state_dtype == StateDtype::fp32 || p.c.variant != Variant::recurrent_verify) return "";
  return fmt::format("{}: {} takes fp32 states only (allocation proved, no step run)", kStatusNoKernel,
                     to_string(p.c.variant));
}

/// One step of the plan at batch n over all layers, synchronised: "ok", a status starting "kernel not available",
/// or "failed: ...".
std::string run_step(const CapacityPlan& p, const PoolSet& pools, int64_t n, cudaStream_t stream) {
  if (std::string st = dtype_unavailable(p); !st.empty()) return st;
  const GdnShape& s = p.model.shape;
  const int batch = int(n);
  const int32_t* slot = pools.piece<int32_t>("slot");
  void* o = pools.piece<void>("o");
  for (int l = 0; l < p.model.layers; ++l) {
    TokenInputs in;
    in.q = pools.piece<bf16>("q");
    in.k = pools.piece<bf16>("k");
    in.v = pools.piece<bf16>("v");
    in.a = pools.piece<bf16>("a");
    in.b = pools.piece<bf16>("b");
    in.A_log = pools.piece<float>("A_log") + l * s.heads_v;
    in.dt_bias = pools.piece<float>("dt_bias") + l * s.heads_v;
    in.scale = 1.f / std::sqrt(float(s.head_dim_k));
    in.tokens = p.tokens;
    KVBufferPool kv;
    if (is_kvbuffer(p.c.variant)) {
      kv.checkpoint = pools.array<void>("checkpoint", l);
      kv.state_dtype = p.c.state_dtype;
      kv.keys = pools.array<bf16>("keys", l);
      kv.deltas = pools.array<float>("deltas", l);
      kv.log_decay = pools.array<float>("log_decay", l);
      kv.fill = pools.array<int32_t>("fill");
      kv.num_slots = batch;
      kv.capacity = p.buffer_entries;
      kv.buffer_size = p.c.buffer_size;
    }
    std::string st;
    switch (p.c.variant) {
      case Variant::recurrent_decode: {
        RecurrentDecodeParams q;
        q.shape = s, q.batch = batch, q.in = in, q.state = pools.array<void>("state", l), q.num_slots = batch;
        q.state_dtype = p.c.state_dtype, q.layout = StateLayout::kv, q.slot = slot, q.o = o;
        q.o_dtype = OutputDtype::bf16;
        st = launch_status(launch_recurrent_decode(q, stream), "launch_recurrent_decode", q);
        break;
      }
      case Variant::recurrent_verify: {
        RecurrentVerifyParams q;
        q.shape = s, q.batch = batch, q.in = in, q.state = pools.array<float>("state", l), q.num_slots = batch;
        q.scratch = pools.array<float>("scratch", l), q.slot = slot, q.o = o, q.o_dtype = OutputDtype::bf16;
        st = launch_status(launch_recurrent_verify(q, stream), "launch_recurrent_verify", q);
        break;
      }
      case Variant::kvbuffer_decode: {
        KVBufferDecodeParams q;
        q.shape = s, q.batch = batch, q.in = in, q.pool = kv, q.slot = slot, q.o = o, q.o_dtype = OutputDtype::bf16;
        st = launch_status(launch_kvbuffer_decode(q, stream), "launch_kvbuffer_decode", q);
        break;
      }
      case Variant::kvbuffer_verify: {
        KVBufferVerifyParams q;
        q.shape = s, q.batch = batch, q.in = in, q.pool = kv, q.slot = slot;
        q.group_arrivals = pools.array<int32_t>("group_arrivals");
        q.o = o, q.o_dtype = OutputDtype::bf16;
        // bf16 checkpoints need the tensor-core kernel (head dims 128 x 128): elsewhere no kernel stores them.
        if (kv.state_dtype != StateDtype::fp32)
          if (const std::string e = validate(q); !e.empty()) return fmt::format("{}: {}", kStatusNoKernel, e);
        st = launch_status(launch_kvbuffer_verify(q, stream), "launch_kvbuffer_verify", q);
        break;
      }
    }
    if (!st.empty()) {
      cudaGetLastError();
      return st;
    }
  }
  if (p.c.variant == Variant::kvbuffer_decode) {
    const cudaError_t e = launch_kvbuffer_advance(pools.array<int32_t>("fill"), slot, batch, p.c.buffer_size, stream);
    if (e != cudaSuccess) return fmt::format("failed: launch_kvbuffer_advance: {}", cudaGetErrorName(e));
  }
  const cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return fmt::format("failed: step: {}", cudaGetErrorName(e));
  return "ok";
}

/// Holding the pools of n requests: allocates, for every pool array and layer and for the workspace, the granules by
/// which its allocation for n + 1 requests exceeds the one for n. True when an allocation failed with
/// cudaErrorMemoryAllocation (cleared); other errors throw.
bool one_more_fails(const CapacityPlan& p, int64_t n) {
  std::vector<DeviceBuffer<unsigned char>> growth;
  auto grow = [&](int64_t now, int64_t next) {
    const int64_t d = round_up(next, kAllocationGranule) - round_up(now, kAllocationGranule);
    if (d > 0) growth.emplace_back(size_t(d));
  };
  try {
    grow(workspace_bytes(p, n), workspace_bytes(p, n + 1));
    for (const PoolArray& a : p.arrays)
      for (int l = 0; l < (a.per_layer ? p.model.layers : 1); ++l)
        grow(n * a.bytes_per_request, (n + 1) * a.bytes_per_request);
  } catch (const CudaError& e) {
    if (!is_out_of_memory(e)) throw;
    cudaGetLastError();
    return true;
  }
  return false;
}

}  // namespace

int64_t device_free_bytes() {
  size_t free_bytes = 0, total = 0;
  KVB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return int64_t(free_bytes);
}

BudgetBlocker::BudgetBlocker(int64_t budget_bytes) {
  const int64_t free_now = device_free_bytes();
  if (free_now < budget_bytes)
    throw UsageError(fmt::format("--budget-gib {:.3f}: the device has only {:.3f} GiB free (use --no-probe for the "
                                 "model alone)",
                                 double(budget_bytes) / double(int64_t(1) << 30),
                                 double(free_now) / double(int64_t(1) << 30)));
  const int64_t hold = free_now > budget_bytes ? round_up(free_now - budget_bytes, kAllocationGranule) : 0;
  blocker_ = DeviceBuffer<unsigned char>(size_t(hold));
  budget_ = device_free_bytes();
}

int64_t warm_up_wide_batch(const CapacityPlan& plan) {
  const int64_t heads = std::max(plan.model.shape.heads_v, 1);
  return std::max<int64_t>(2, (kWideGridBlocksPerSm * int64_t(sm_count()) + heads - 1) / heads);
}

// The probe runs on the legacy default stream: creating a stream while the budget is held could take device memory.
void warm_up(const std::vector<CapacityPlan>& plans, uint64_t seed, int64_t budget_bytes) {
  for (const CapacityPlan& full : plans) {
    CapacityPlan p = full;
    p.model.layers = 1;
    // Besides the narrow and the wide grid, the batch the probe itself runs (the model's requests in the budget):
    // launchers that switch kernels at a larger batch than the wide grid's (KVBuffer verify takes its tensor-core
    // kernel from 15 (row, value head) items an SM) then load that kernel here too.
    const int64_t probe_batch = max_requests(full, budget_bytes);
    std::vector<int64_t> batches{1, warm_up_wide_batch(p)};
    if (probe_batch > batches.back()) batches.push_back(probe_batch);
    for (size_t i = 0; i < batches.size(); ++i) {
      const int64_t n = batches[i];
      PoolSet pools(p, n);
      fill_inputs(p, pools, n, seed, nullptr);
      const std::string st = run_step(p, pools, n, nullptr);
      // A step that fails at the probe's batch fails in the probe too, which reports it in the row's status.
      if (st.rfind("failed", 0) == 0 && i < 2) throw std::runtime_error("capacity warm-up: " + st);
      cudaGetLastError();
    }
  }
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

ProbeResult probe_capacity(const CapacityPlan& plan, int64_t budget_bytes, int64_t model_requests, uint64_t seed) {
  ProbeResult r;
  std::vector<std::string> notes;
  const int64_t free_at_start = device_free_bytes();
  if (free_at_start != budget_bytes)
    notes.push_back(fmt::format("free memory at start {} bytes, budget {}", free_at_start, budget_bytes));

  // 1. The model's N, or the largest N below it that fits.
  int64_t n = model_requests;
  r.model_fitted = pools_fit(plan, n);
  if (!r.model_fitted) {
    int64_t lo = 0, hi = n;  // pools of lo fit (0: the workspace alone), pools of hi do not
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (pools_fit(plan, mid) ? lo : hi) = mid;
    }
    n = lo;
    notes.push_back(fmt::format("model over-counted: pools for {} requests did not fit (largest that fit: {})",
                                model_requests, n));
  }
  r.measured = n;

  // 2. One step at batch n, and 3. one more request, holding the pools of n.
  {
    PoolSet pools(plan, n);
    if (n > 0) {
      try {
        fill_inputs(plan, pools, n, seed, nullptr);
        r.step = run_step(plan, pools, n, nullptr);
      } catch (const CudaError& e) {
        r.step = fmt::format("failed: {}", e.what());
      }
    } else {
      r.step = "not run (no request fits)";
    }
    r.one_more_failed = one_more_fails(plan, n);
  }
  if (!r.one_more_failed) {
    int64_t lo = n + 1, hi = 2 * (n + 1);  // pools of lo fit
    while (pools_fit(plan, hi)) lo = hi, hi *= 2;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (pools_fit(plan, mid) ? lo : hi) = mid;
    }
    r.measured = lo;
    // The model keeps kDriverHeadroom of the budget free (some drivers cannot hand out the last MiBs); requests that
    // fit only inside that headroom are expected, anything beyond it means the model over-charged a request.
    if (footprint_bytes(plan, lo) > budget_bytes)
      notes.push_back(
          fmt::format("model under-counted: one more request fitted after {} (largest that fit: {})", n, lo));
  }

  if (r.step != "ok") notes.push_back(r.step);
  if (notes.empty()) {
    r.status = "ok";
  } else {
    for (size_t i = 0; i < notes.size(); ++i) r.status += (i ? "; " : "") + notes[i];
  }
  return r;
}

}  // namespace kvb::capacity
