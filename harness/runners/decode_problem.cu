#include "harness/runners/decode_problem.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "harness/runners/device_random.h"

namespace kvb {

template <typename T>
DeviceBuffer<T> DecodeProblem::alloc(size_t n) {
  DeviceBuffer<T> b(n);
  device_bytes_ += b.bytes();
  return b;
}

DecodeProblem::DecodeProblem(const DecodeConfig& cfg) : cfg_(cfg) {
  const GdnShape& s = cfg_.shape;
  if (auto e = validate_shape(s); !e.empty()) throw std::invalid_argument(e);
  if (cfg_.batch < 1 || cfg_.layers < 1 || cfg_.groups < 1 || cfg_.buffer_size < 1)
    throw std::invalid_argument("DecodeProblem: batch, layers, groups and buffer_size must be >= 1");
  sets_ = cfg_.share_pools ? 1 : cfg_.groups * cfg_.layers;
  const size_t N = cfg_.batch, HV = s.heads_v, sets = sets_;
  const bool kvb = cfg_.variant == DecodeVariant::kvbuffer;
  uint64_t seed = cfg_.seed * 0x100000001b3ull + 17;
  auto next_seed = [&] { return seed += 0x9e3779b97f4a7c15ull; };

  q_ = alloc<bf16>(sets * N * tok_qk());
  k_ = alloc<bf16>(sets * N * tok_qk());
  v_ = alloc<bf16>(sets * N * tok_v());
  a_ = alloc<bf16>(sets * N * HV);
  b_ = alloc<bf16>(sets * N * HV);
  fill_normal(q_.get(), q_.size(), 0.f, 1.f, next_seed());
  fill_normal(k_.get(), k_.size(), 0.f, 1.f, next_seed());
  fill_normal(v_.get(), v_.size(), 0.f, 1.f, next_seed());
  fill_normal(a_.get(), a_.size(), 0.f, 1.f, next_seed());
  fill_normal(b_.get(), b_.size(), 0.f, 1.f, next_seed());

  // Gate parameters, Qwen3-Next initialisation: A = U(1, 16), dt = exp(U(log 1e-3, log 1e-1)), dt_bias = softplus^-1(dt).
  std::mt19937_64 rng(cfg_.seed);
  std::uniform_real_distribution<double> uA(1.0, 16.0), udt(std::log(1e-3), std::log(1e-1));
  std::vector<float> A_log(sets * HV), dt_bias(sets * HV);
  for (size_t i = 0; i < A_log.size(); ++i) {
    A_log[i] = float(std::log(uA(rng)));
    const double dt = std::exp(udt(rng));
    dt_bias[i] = float(dt + std::log(-std::expm1(-dt)));
  }
  A_log_ = alloc<float>(A_log.size());
  dt_bias_ = alloc<float>(dt_bias.size());
  KVB_CUDA_CHECK(cudaMemcpy(A_log_.get(), A_log.data(), A_log.size() * 4, cudaMemcpyHostToDevice));
  KVB_CUDA_CHECK(cudaMemcpy(dt_bias_.get(), dt_bias.data(), dt_bias.size() * 4, cudaMemcpyHostToDevice));

  // States (or checkpoints): entries ~ N(0, 1/sqrt(K)), so that S^T k^ has the scale of v.
  state_ = alloc<float>(sets * N * size_t(s.state_elems()));
  fill_normal(state_.get(), state_.size(), 0.f, 1.f / std::sqrt(float(s.head_dim_k)), next_seed());
  if (kvb) {
    const size_t cap = capacity();
    keys_ = alloc<bf16>(sets * N * cap * tok_qk());
    deltas_ = alloc<float>(sets * N * cap * tok_v());
    log_decay_ = alloc<float>(sets * N * cap * HV);
    fill_normal(keys_.get(), keys_.size(), 0.f, 1.f, next_seed());
    fill_normal(deltas_.get(), deltas_.size(), 0.f, 0.5f, next_seed());
    for (size_t set = 0; set < sets; ++set)
      fill_log_decay(log_decay_.get() + set * N * cap * HV, N * cap * HV, s.heads_v, A_log_.get() + set * HV,
                     dt_bias_.get() + set * HV, next_seed());
  }

  // Slots: a fixed random permutation, as a serving scheduler hands them out.
  host_slot_.resize(N);
  std::iota(host_slot_.begin(), host_slot_.end(), 0);
  std::shuffle(host_slot_.begin(), host_slot_.end(), rng);
  slot_ = alloc<int32_t>(N);
  KVB_CUDA_CHECK(cudaMemcpy(slot_.get(), host_slot_.data(), N * 4, cudaMemcpyHostToDevice));

  // Buffer positions per slot: staggered (row i at i mod B) or aligned (all at 0); one array per group.
  const int groups = cfg_.share_pools ? 1 : cfg_.groups;
  initial_fill_.assign(size_t(groups) * N, 0);
  for (int g = 0; g < groups; ++g)
    for (size_t i = 0; i < N; ++i)
      initial_fill_[g * N + host_slot_[i]] = cfg_.staggered ? int32_t(i % cfg_.buffer_size) : 0;
  fill_ = alloc<int32_t>(initial_fill_.size());
  initial_fill_dev_ = alloc<int32_t>(initial_fill_.size());
  KVB_CUDA_CHECK(cudaMemcpy(initial_fill_dev_.get(), initial_fill_.data(), initial_fill_.size() * 4,
                            cudaMemcpyHostToDevice));
  restore_fill(nullptr);

  o_ = alloc<unsigned char>(sets * o_bytes_per_set());
  fill_bytes(o_.get(), o_.bytes(), 0xff);
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

size_t DecodeProblem::o_bytes_per_set() const {
  return size_t(cfg_.batch) * tok_v() * (cfg_.o_dtype == OutputDtype::bf16 ? 2 : 4);
}

void* DecodeProblem::o(int set) const { return o_.get() + size_t(set) * o_bytes_per_set(); }

void DecodeProblem::restore_fill(cudaStream_t stream) const {
  KVB_CUDA_CHECK(cudaMemcpyAsync(fill_.get(), initial_fill_dev_.get(), fill_.bytes(), cudaMemcpyDeviceToDevice,
                                 stream));
}

static TokenInputs token_inputs(const DecodeProblem& p, int set) {
  TokenInputs in;
  in.q = p.q(set);
  in.k = p.k(set);
  in.v = p.v(set);
  in.a = p.a(set);
  in.b = p.b(set);
  in.A_log = p.A_log(set);
  in.dt_bias = p.dt_bias(set);
  in.scale = 1.f / std::sqrt(float(p.config().shape.head_dim_k));
  in.tokens = 1;
  return in;
}

RecurrentDecodeParams DecodeProblem::recurrent_params(int set) const {
  RecurrentDecodeParams p;
  p.shape = cfg_.shape;
  p.batch = cfg_.batch;
  p.in = token_inputs(*this, set);
  p.state = state_.get() + size_t(set) * cfg_.batch * size_t(cfg_.shape.state_elems());
  p.num_slots = cfg_.batch;
  p.layout = cfg_.layout;
  p.slot = slot_.get();
  p.o = o(set);
  p.o_dtype = cfg_.o_dtype;
  return p;
}

KVBufferDecodeParams DecodeProblem::kvbuffer_params(int set) const {
  KVBufferDecodeParams p;
  p.shape = cfg_.shape;
  p.batch = cfg_.batch;
  p.in = token_inputs(*this, set);
  const size_t N = cfg_.batch, cap = capacity();
  KVBufferPool& pool = p.pool;
  pool.checkpoint = state_.get() + size_t(set) * N * size_t(cfg_.shape.state_elems());
  pool.keys = keys_.get() + size_t(set) * N * cap * tok_qk();
  pool.deltas = deltas_.get() + size_t(set) * N * cap * tok_v();
  pool.log_decay = log_decay_.get() + size_t(set) * N * cap * cfg_.shape.heads_v;
  const int group = cfg_.share_pools ? 0 : set / cfg_.layers;
  pool.fill = fill(group);
  pool.num_slots = cfg_.batch;
  pool.capacity = int(cap);
  pool.buffer_size = cfg_.buffer_size;
  p.slot = slot_.get();
  p.o = o(set);
  p.o_dtype = cfg_.o_dtype;
  return p;
}

void DecodeProblem::enqueue_layer(int set, cudaStream_t stream) const {
  if (cfg_.variant == DecodeVariant::recurrent) KVB_CUDA_CHECK(launch_recurrent_decode(recurrent_params(set), stream));
  else KVB_CUDA_CHECK(launch_kvbuffer_decode(kvbuffer_params(set), stream));
}

void DecodeProblem::enqueue_step(cudaStream_t stream) const {
  for (int g = 0; g < cfg_.groups; ++g) {
    for (int l = 0; l < cfg_.layers; ++l) enqueue_layer(cfg_.share_pools ? 0 : g * cfg_.layers + l, stream);
    if (cfg_.variant == DecodeVariant::kvbuffer)
      KVB_CUDA_CHECK(launch_kvbuffer_advance(fill(cfg_.share_pools ? 0 : g), slot_.get(), cfg_.batch,
                                             cfg_.buffer_size, stream));
  }
}

ByteCount DecodeProblem::model_bytes_per_layer_step() const {
  if (cfg_.variant == DecodeVariant::recurrent) return recurrent_decode_bytes(cfg_.shape, cfg_.batch, cfg_.o_dtype);
  ByteCount b = kvbuffer_decode_cycle_bytes(cfg_.shape, cfg_.batch, cfg_.buffer_size, cfg_.o_dtype);
  ByteCount adv = kvbuffer_advance_bytes(cfg_.batch);
  b.read += adv.read / cfg_.layers;
  b.write += adv.write / cfg_.layers;
  return b;
}

}  // namespace kvb
