#include "harness/workloads/problem_setup.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "harness/workloads/device_random.h"

namespace kvb {

TokenInputSets::TokenInputSets(DeviceFootprint& mem, const GdnShape& s, int sets, int rows, int tokens,
                               FillSeeds& seeds, std::mt19937_64& rng)
    : shape_(s), rows_(rows), tokens_(tokens) {
  q_ = mem.alloc<bf16>(size_t(sets) * per_set_qk());
  k_ = mem.alloc<bf16>(size_t(sets) * per_set_qk());
  v_ = mem.alloc<bf16>(size_t(sets) * per_set_v());
  a_ = mem.alloc<bf16>(size_t(sets) * per_set_gate());
  b_ = mem.alloc<bf16>(size_t(sets) * per_set_gate());
  for (const DeviceBuffer<bf16>* x : {&q_, &k_, &v_, &a_, &b_})
    fill_normal(x->get(), x->size(), 0.f, 1.f, seeds.next());

  std::uniform_real_distribution<double> uA(1.0, 16.0), udt(std::log(1e-3), std::log(1e-1));
  std::vector<float> A_log(size_t(sets) * s.heads_v), dt_bias(A_log.size());
  for (size_t i = 0; i < A_log.size(); ++i) {
    A_log[i] = float(std::log(uA(rng)));
    const double dt = std::exp(udt(rng));
    dt_bias[i] = float(dt + std::log(-std::expm1(-dt)));
  }
  A_log_ = mem.copy(A_log);
  dt_bias_ = mem.copy(dt_bias);
}

TokenInputs TokenInputSets::inputs(int set) const {
  TokenInputs in;
  in.q = q(set);
  in.k = k(set);
  in.v = v(set);
  in.a = a(set);
  in.b = b(set);
  in.A_log = A_log(set);
  in.dt_bias = dt_bias(set);
  in.scale = 1.f / std::sqrt(float(shape_.head_dim_k));
  in.tokens = tokens_;
  return in;
}

namespace {
/// `count` values ~ N(0, std) in StateDtype `d` (bf16: drawn as bf16), as the bytes of `count` elements.
DeviceBuffer<unsigned char> random_elements(DeviceFootprint& mem, size_t count, StateDtype d, float std,
                                            FillSeeds& seeds) {
  DeviceBuffer<unsigned char> x = mem.alloc<unsigned char>(count * size_t(state_elem_bytes(d)));
  if (d == StateDtype::bf16)
    fill_normal(reinterpret_cast<bf16*>(x.get()), count, 0.f, std, seeds.next());
  else
    fill_normal(reinterpret_cast<float*>(x.get()), count, 0.f, std, seeds.next());
  return x;
}
}  // namespace

DeviceBuffer<unsigned char> random_states(DeviceFootprint& mem, const GdnShape& s, size_t count, StateDtype d,
                                          FillSeeds& seeds) {
  return random_elements(mem, count, d, 1.f / std::sqrt(float(s.head_dim_k)), seeds);
}

KVBufferEntrySets::KVBufferEntrySets(DeviceFootprint& mem, const GdnShape& s, int sets, int slots, int capacity,
                                     const TokenInputSets& gates, FillSeeds& seeds, StateDtype delta_dtype)
    : shape_(s), slots_(slots), capacity_(capacity), delta_dtype_(delta_dtype) {
  const size_t entries = size_t(slots) * capacity, HV = s.heads_v;
  keys_ = mem.alloc<bf16>(sets * entries * s.heads_qk * s.head_dim_k);
  fill_normal(keys_.get(), keys_.size(), 0.f, 1.f, seeds.next());
  deltas_ = random_elements(mem, sets * entries * HV * s.head_dim_v, delta_dtype, 0.5f, seeds);
  log_decay_ = mem.alloc<float>(sets * entries * HV);
  for (int set = 0; set < sets; ++set)
    fill_log_decay(log_decay_.get() + set * entries * HV, entries * HV, s.heads_v, gates.A_log(set),
                   gates.dt_bias(set), seeds.next());
}

KVBufferPool KVBufferEntrySets::pool(int set, void* checkpoints, int32_t* fill, int buffer_size,
                                     StateDtype state_dtype) const {
  const size_t entries = size_t(slots_) * capacity_;
  KVBufferPool p;
  set_pool_rows(p, checkpoints, fill, slots_, capacity_, buffer_size);
  p.state_dtype = state_dtype;
  p.keys = keys_.get() + set * entries * shape_.heads_qk * shape_.head_dim_k;
  p.delta_dtype = delta_dtype_;
  p.deltas = deltas_.get() + set * entries * shape_.heads_v * shape_.head_dim_v * state_elem_bytes(delta_dtype_);
  p.log_decay = log_decay_.get() + set * entries * shape_.heads_v;
  return p;
}

std::vector<int32_t> shuffled_slots(int rows, std::mt19937_64& rng) {
  std::vector<int32_t> slots(size_t(std::max(rows, 0)));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  return slots;
}

BufferPositions::BufferPositions(DeviceFootprint& mem, int groups, const std::vector<int32_t>& slots,
                                 int buffer_size, bool staggered)
    : slots_(slots.size()) {
  initial_.assign(size_t(groups) * slots_, 0);
  for (int g = 0; g < groups; ++g)
    for (size_t i = 0; i < slots_; ++i)
      initial_[g * slots_ + slots[i]] = staggered ? int32_t(i % buffer_size) : 0;
  upload_initial(mem);
}

BufferPositions::BufferPositions(DeviceFootprint& mem, int groups, size_t slots, int32_t fill) : slots_(slots) {
  initial_.assign(size_t(groups) * slots_, fill);
  upload_initial(mem);
}

void BufferPositions::upload_initial(DeviceFootprint& mem) {
  fill_ = mem.alloc<int32_t>(initial_.size());
  initial_dev_ = mem.copy(initial_);
  restore(nullptr);
}

void BufferPositions::restore(cudaStream_t stream) const {
  KVB_CUDA_CHECK(
      cudaMemcpyAsync(fill_.get(), initial_dev_.get(), fill_.bytes(), cudaMemcpyDeviceToDevice, stream));
}

}  // namespace kvb
