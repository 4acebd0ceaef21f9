#include "harness/workloads/decode_problem.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

#include "harness/workloads/device_random.h"
#include "byte_model/byte_model_raw.h"

namespace kvb {

DecodeProblem::DecodeProblem(const DecodeConfig& cfg) : cfg_(cfg) {
  const GdnShape& s = cfg_.shape;
  if (auto e = validate_shape(s); !e.empty()) throw std::invalid_argument(e);
  if (cfg_.batch < 1 || cfg_.layers < 1 || cfg_.groups < 1 || cfg_.buffer_size < 1)
    throw std::invalid_argument("DecodeProblem: batch, layers, groups and buffer_size must be >= 1");
  sets_ = cfg_.share_pools ? 1 : cfg_.groups * cfg_.layers;
  if (cfg_.pdl && sets_ < 2)
    throw std::invalid_argument("launch = pdl needs consecutive launches on distinct pools: layers x groups >= 2 and "
                                "l2 = cold (got " + std::to_string(sets_) + " pool set)");
  const size_t N = cfg_.batch, sets = sets_;
  FillSeeds seeds(cfg_.seed);
  std::mt19937_64 rng(cfg_.seed);

  if (cfg_.state_dtype != StateDtype::fp32 && cfg_.layout != StateLayout::kv)
    throw std::invalid_argument(std::string("state_dtype = ") + to_string(cfg_.state_dtype) +
                                " with layout vk is not supported (allowed with vk: fp32)");
  if (cfg_.state_dtype != StateDtype::fp32 && cfg_.variant == DecodeVariant::kvbuffer && cfg_.form == BufferForm::raw)
    throw std::invalid_argument(std::string("state_dtype = ") + to_string(cfg_.state_dtype) +
                                " with buffer_form raw is not supported (allowed with raw: fp32)");
  if (stateless() && cfg_.context_len >= cfg_.buffer_size)
    throw std::invalid_argument("DecodeProblem: a stateless context_len must be < buffer_size");
  inputs_ = TokenInputSets(mem_, s, sets_, cfg_.batch, 1, seeds, rng);
  state_rows_ = stateless() && !materialises() ? 0 : N;
  state_ = random_states(mem_, s, std::max<size_t>(sets * state_rows_, 1) * size_t(s.state_elems()), cfg_.state_dtype,
                         seeds);
  if (cfg_.variant == DecodeVariant::kvbuffer && cfg_.form == BufferForm::raw)
    raw_entries_ = RawKVBufferEntrySets(mem_, s, sets_, cfg_.batch, capacity(), seeds);
  else if (cfg_.variant == DecodeVariant::kvbuffer)
    entries_ = KVBufferEntrySets(mem_, s, sets_, cfg_.batch, capacity(), inputs_, seeds);
  host_slot_ = shuffled_slots(cfg_.batch, rng);
  slot_ = mem_.copy(host_slot_);
  const int groups = position_groups();
  if (stateless()) {
    positions_ = BufferPositions(mem_, groups, N, cfg_.context_len);
    state_slot_ = mem_.copy(materialises() ? host_slot_ : std::vector<int32_t>(N, -1));
    has_state_ = mem_.copy(std::vector<uint8_t>(N, 0));
  } else {
    positions_ = BufferPositions(mem_, groups, host_slot_, cfg_.buffer_size, cfg_.staggered);
  }

  o_ = mem_.alloc<unsigned char>(sets * o_bytes_per_set());
  fill_bytes(o_.get(), o_.bytes(), 0xff);
  const bool spread = cfg_.row_order == DecodeRowOrder::spread ||
                      (cfg_.row_order == DecodeRowOrder::automatic && cfg_.state_dtype == StateDtype::bf16);
  if (cfg_.variant == DecodeVariant::kvbuffer && cfg_.form == BufferForm::delta && !stateless() && spread) {
    row_order_ = mem_.alloc<OrderedRow>(size_t(groups) * N);
    wave_rows_ = kvbuffer_decode_wave_rows(kvbuffer_params(0));
    for (int g = 0; g < groups; ++g) enqueue_order_rows(g, nullptr);
  }
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

void DecodeProblem::enqueue_order_rows(int group, cudaStream_t stream) const {
  if (!row_order_.get()) return;
  // The group's first layer-set: its launches read that group's slots and positions (group 0 when pools are shared).
  KVBufferDecodeParams p = kvbuffer_params(cfg_.share_pools ? 0 : group * cfg_.layers);
  KVB_CUDA_CHECK(
      launch_kvbuffer_order_decode_rows(p, wave_rows_, row_order_.get() + size_t(group) * cfg_.batch, stream));
}

void DecodeProblem::restore_fill(cudaStream_t stream) const {
  positions_.restore(stream);
  for (int g = 0; g < position_groups(); ++g) enqueue_order_rows(g, stream);
}

double step_working_set_bytes(const DecodeConfig& c) {
  const double per_row = c.variant == DecodeVariant::kvbuffer && c.context_len > 0
                             ? kvbuffer_stateless_decode_bytes(c.shape, 1, c.buffer_size, c.context_len, c.o_dtype).total()
                             : double(c.shape.state_bytes(c.state_dtype));
  return per_row * c.batch * c.layers;
}

size_t DecodeProblem::o_bytes_per_set() const {
  return size_t(cfg_.batch) * tok_v() * (cfg_.o_dtype == OutputDtype::bf16 ? 2 : 4);
}

void* DecodeProblem::o(int set) const { return o_.get() + size_t(set) * o_bytes_per_set(); }

RecurrentDecodeParams DecodeProblem::recurrent_params(int set) const {
  auto p = token_launch<RecurrentDecodeParams>(cfg_, inputs_.inputs(set), slot_.get(), o(set));
  p.state = state(set);
  p.state_dtype = cfg_.state_dtype;
  p.num_slots = cfg_.batch;
  p.layout = cfg_.layout;
  p.pdl = cfg_.pdl;
  return p;
}

KVBufferDecodeParams DecodeProblem::kvbuffer_params(int set) const {
  auto p = token_launch<KVBufferDecodeParams>(cfg_, inputs_.inputs(set), slot_.get(), o(set));
  p.pool = entries_.pool(set, state(set), fill(group_of(set)), cfg_.buffer_size, cfg_.state_dtype);
  if (stateless()) {
    p.pool.num_checkpoints = int(std::max<size_t>(state_rows_, 1));
    p.state_slot = state_slot_.get();
    p.has_state = has_state_.get();
    p.stateless_batch = true;  // every request of the point has context_len < B
  }
  p.pdl = cfg_.pdl;
  p.row_order = row_order(group_of(set));
  return p;
}

RawKVBufferDecodeParams DecodeProblem::raw_params(int set) const {
  auto p = token_launch<RawKVBufferDecodeParams>(cfg_, inputs_.inputs(set), slot_.get(), o(set));
  p.pool = raw_entries_.pool(set, static_cast<float*>(state(set)), fill(group_of(set)), cfg_.buffer_size);
  return p;
}

void DecodeProblem::enqueue_layer(int set, cudaStream_t stream, bool after_order) const {
  if (cfg_.variant == DecodeVariant::recurrent) {
    KVB_CUDA_CHECK(launch_recurrent_decode(recurrent_params(set), stream));
  } else if (cfg_.form == BufferForm::raw) {
    KVB_CUDA_CHECK(launch_kvbuffer_raw_decode(raw_params(set), stream));
  } else {
    KVBufferDecodeParams p = kvbuffer_params(set);
    // A launch reads its row order before the PDL wait: right after the kernel that wrote it, it launches plainly.
    if (after_order && p.row_order) p.pdl = false;
    KVB_CUDA_CHECK(launch_kvbuffer_decode(p, stream));
  }
}

void DecodeProblem::enqueue_step(cudaStream_t stream) const {
  // The kernel before a group's first layer wrote that group's row order when the step has one group of positions.
  const bool after_order = position_groups() == 1;
  for (int g = 0; g < cfg_.groups; ++g) {
    const int group = cfg_.share_pools ? 0 : g;
    for (int l = 0; l < cfg_.layers; ++l)
      enqueue_layer(cfg_.share_pools ? 0 : g * cfg_.layers + l, stream, l == 0 && after_order);
    if (cfg_.variant == DecodeVariant::kvbuffer && !stateless()) {
      KVB_CUDA_CHECK(launch_kvbuffer_advance(fill(group), slot_.get(), cfg_.batch, cfg_.buffer_size, stream));
      enqueue_order_rows(group, stream);
    }
  }
}

ByteCount DecodeProblem::model_bytes_per_layer_step() const {
  if (cfg_.variant == DecodeVariant::recurrent)
    return recurrent_decode_bytes(cfg_.shape, cfg_.batch, cfg_.o_dtype, cfg_.state_dtype);
  if (stateless())
    return kvbuffer_stateless_decode_bytes(cfg_.shape, cfg_.batch, cfg_.buffer_size, cfg_.context_len, cfg_.o_dtype);
  ByteCount b = cfg_.form == BufferForm::raw
                    ? kvbuffer_raw_decode_cycle_bytes(cfg_.shape, cfg_.batch, cfg_.buffer_size, cfg_.o_dtype)
                    : kvbuffer_decode_cycle_bytes(cfg_.shape, cfg_.batch, cfg_.buffer_size, cfg_.o_dtype,
                                                  cfg_.state_dtype);
  ByteCount adv = kvbuffer_advance_bytes(cfg_.batch);
  b.read += adv.read / cfg_.layers;
  b.write += adv.write / cfg_.layers;
  return b;
}

}  // namespace kvb
