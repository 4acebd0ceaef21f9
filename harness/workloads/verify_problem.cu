#include "harness/workloads/verify_problem.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "harness/workloads/device_random.h"
#include "byte_model/verify_bytes.h"

namespace kvb {

VerifyProblem::VerifyProblem(const VerifyConfig& cfg) : cfg_(cfg) {
  const GdnShape& s = cfg_.shape;
  if (auto e = validate_shape(s); !e.empty()) throw std::invalid_argument(e);
  if (cfg_.batch < 1 || cfg_.layers < 1 || cfg_.groups < 1 || cfg_.buffer_size < 1 || cfg_.scratch_sets < 0)
    throw std::invalid_argument("VerifyProblem: batch, layers, groups and buffer_size must be >= 1, scratch_sets >= 0");
  if (cfg_.draft_tokens < 1 || cfg_.draft_tokens > kMaxDraftTokens)
    throw std::invalid_argument(
        fmt::format("VerifyProblem: draft_tokens = {} (allowed: 1 to {})", cfg_.draft_tokens, kMaxDraftTokens));
  if (!kvbuffer()) {
    cfg_.buffer_size = 1;
    cfg_.form = BufferForm::delta;
  }
  if (cfg_.state_dtype != StateDtype::fp32 && !kvbuffer())
    throw std::invalid_argument(std::string("state_dtype = ") + to_string(cfg_.state_dtype) +
                                " is not supported by recurrent verification (allowed with it: fp32)");
  if (cfg_.state_dtype != StateDtype::fp32 && raw())
    throw std::invalid_argument(std::string("state_dtype = ") + to_string(cfg_.state_dtype) +
                                " with buffer_form raw is not supported (allowed with raw: fp32)");
  if (cfg_.delta_dtype != StateDtype::fp32 && (raw() || cfg_.state_dtype != StateDtype::bf16))
    throw std::invalid_argument(std::string("delta_dtype = ") + to_string(cfg_.delta_dtype) +
                                " needs kvbuffer_verify in the delta form with state_dtype = bf16 (allowed otherwise: "
                                "fp32)");
  if (raw() && cfg_.buffer_size > kMaxRawBuffer)
    throw std::invalid_argument(fmt::format("VerifyProblem: buffer_size = {} is out of range for the raw form "
                                            "(allowed: 1 to {})", cfg_.buffer_size, kMaxRawBuffer));
  sets_ = cfg_.share_pools ? 1 : cfg_.groups * cfg_.layers;
  if (cfg_.pdl && sets_ < 2)
    throw std::invalid_argument("launch = pdl needs consecutive launches on distinct pools: layers x groups >= 2 and "
                                "pools not shared (allowed with one pool set: plain)");
  if (cfg_.pdl && raw())
    throw std::invalid_argument("launch = pdl is not supported with buffer_form = raw (allowed with raw: plain)");
  const size_t N = cfg_.batch, m = cfg_.draft_tokens, sets = sets_;
  FillSeeds seeds(cfg_.seed);
  std::mt19937_64 rng(cfg_.seed);

  inputs_ = TokenInputSets(mem_, s, sets_, cfg_.batch, cfg_.draft_tokens, seeds, rng);
  state_ = random_states(mem_, s, sets * N * size_t(s.state_elems()), cfg_.state_dtype, seeds);
  if (raw()) raw_entries_ = RawKVBufferEntrySets(mem_, s, sets_, cfg_.batch, capacity(), seeds);
  else if (kvbuffer())
    entries_ = KVBufferEntrySets(mem_, s, sets_, cfg_.batch, capacity(), inputs_, seeds, cfg_.delta_dtype);
  host_slot_ = shuffled_slots(cfg_.batch, rng);
  slot_ = mem_.copy(host_slot_);
  if (kvbuffer())
    positions_ = BufferPositions(mem_, position_groups(), host_slot_, cfg_.buffer_size, cfg_.staggered);
  host_accepted_ = draw_accepted(cfg_.accepted, cfg_.batch, cfg_.draft_tokens, cfg_.seed);
  accepted_ = mem_.copy(host_accepted_);

  o_ = mem_.alloc<unsigned char>(sets * o_bytes_per_set());
  fill_bytes(o_.get(), o_.bytes(), 0xff);
  if (kvbuffer()) {
    if (!raw()) group_arrivals_ = mem_.copy(std::vector<int32_t>(N * s.heads_qk, 0));
  } else {
    const size_t per_set = N * m * size_t(s.state_elems());
    scratch_sets_ = cfg_.scratch_sets;
    if (scratch_sets_ == 0) {
      size_t free_bytes = 0, total_bytes = 0;
      KVB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      const size_t reserve = size_t(2) << 30;
      const size_t fit = free_bytes > reserve ? (free_bytes - reserve) / (per_set * sizeof(float)) : 0;
      scratch_sets_ = int(std::clamp<size_t>(fit, 1, sets));
    }
    scratch_sets_ = std::min(scratch_sets_, sets_);
    scratch_ = mem_.alloc<float>(size_t(scratch_sets_) * per_set);
  }
  if (kvbuffer() && !raw() && cfg_.order_rows) {
    row_order_ = mem_.alloc<OrderedRow>(size_t(position_groups()) * N);
    wave_rows_ = kvbuffer_verify_wave_rows(kvbuffer_verify_params(0));
    for (int g = 0; g < position_groups(); ++g) enqueue_order_rows(g, nullptr);
  }
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
}

size_t VerifyProblem::o_bytes_per_set() const {
  return size_t(cfg_.batch) * cfg_.draft_tokens * cfg_.shape.heads_v * cfg_.shape.head_dim_v *
         (cfg_.o_dtype == OutputDtype::bf16 ? 2 : 4);
}

float* VerifyProblem::scratch(int set) const {
  const size_t per_set = size_t(cfg_.batch) * cfg_.draft_tokens * size_t(cfg_.shape.state_elems());
  return scratch_sets_ ? scratch_.get() + size_t(set % scratch_sets_) * per_set : nullptr;
}

void VerifyProblem::restore_fill(cudaStream_t stream) const {
  if (!kvbuffer()) return;
  positions_.restore(stream);
  for (int g = 0; g < position_groups(); ++g) enqueue_order_rows(g, stream);
}

void VerifyProblem::enqueue_order_rows(int group, cudaStream_t stream) const {
  if (!row_order_.get()) return;
  // The group's first layer-set: its launches read that group's slots and positions (group 0 when pools are shared).
  const KVBufferVerifyParams p = kvbuffer_verify_params(group * cfg_.layers);
  KVB_CUDA_CHECK(launch_kvbuffer_order_rows(p, wave_rows_, row_order_.get() + size_t(group) * cfg_.batch, stream));
}

double VerifyProblem::mean_accepted() const {
  return std::accumulate(host_accepted_.begin(), host_accepted_.end(), 0.0) / double(host_accepted_.size());
}

RecurrentVerifyParams VerifyProblem::recurrent_verify_params(int set) const {
  auto p = token_launch<RecurrentVerifyParams>(cfg_, inputs_.inputs(set), slot_.get(), o(set));
  p.state = static_cast<const float*>(state(set));  // recurrent states are fp32 (the constructor's check)
  p.num_slots = cfg_.batch;
  p.scratch = scratch(set);
  p.pdl = cfg_.pdl;
  return p;
}

RecurrentAcceptParams VerifyProblem::recurrent_accept_params(int set) const {
  RecurrentAcceptParams p;
  p.shape = cfg_.shape;
  p.batch = cfg_.batch;
  p.draft_tokens = cfg_.draft_tokens;
  p.state = static_cast<float*>(state(set));
  p.scratch = scratch(set);
  p.num_slots = cfg_.batch;
  p.slot = slot_.get();
  p.accepted = accepted_.get();
  p.pdl = cfg_.pdl;
  return p;
}

KVBufferVerifyParams VerifyProblem::kvbuffer_verify_params(int set) const {
  auto p = token_launch<KVBufferVerifyParams>(cfg_, inputs_.inputs(set), slot_.get(), o(set));
  p.pool = entries_.pool(set, state(set), fill(group_of(set)), cfg_.buffer_size, cfg_.state_dtype);
  p.group_arrivals = group_arrivals();
  p.pdl = cfg_.pdl;
  p.kernel = cfg_.kernel;
  p.row_order = row_order(group_of(set));
  return p;
}

RawKVBufferVerifyParams VerifyProblem::raw_verify_params(int set) const {
  auto p = token_launch<RawKVBufferVerifyParams>(cfg_, inputs_.inputs(set), slot_.get(), o(set));
  p.pool = raw_entries_.pool(set, static_cast<float*>(state(set)), fill(group_of(set)), cfg_.buffer_size);
  return p;
}

RawKVBufferAcceptParams VerifyProblem::raw_accept_params(int set) const {
  RawKVBufferAcceptParams p;
  p.shape = cfg_.shape;
  p.batch = cfg_.batch;
  p.in = inputs_.inputs(set);
  p.pool = raw_entries_.pool(set, static_cast<float*>(state(set)), fill(group_of(set)), cfg_.buffer_size);
  p.slot = slot_.get();
  p.accepted = accepted_.get();
  p.tile = cfg_.tile;
  return p;
}

void VerifyProblem::enqueue_verify_layer(int set, cudaStream_t stream) const {
  if (raw()) KVB_CUDA_CHECK(launch_kvbuffer_raw_verify(raw_verify_params(set), stream));
  else if (kvbuffer()) KVB_CUDA_CHECK(launch_kvbuffer_verify(kvbuffer_verify_params(set), stream));
  else KVB_CUDA_CHECK(launch_recurrent_verify(recurrent_verify_params(set), stream));
}

void VerifyProblem::enqueue_accept_layer(int set, cudaStream_t stream) const {
  if (raw()) KVB_CUDA_CHECK(launch_kvbuffer_raw_accept(raw_accept_params(set), stream));
  else if (kvbuffer()) return;  // delta form: verify already wrote the drafts' entries
  else KVB_CUDA_CHECK(launch_recurrent_accept(recurrent_accept_params(set), stream));
}

void VerifyProblem::enqueue_verify(cudaStream_t stream) const {
  for (int g = 0; g < cfg_.groups; ++g)
    for (int l = 0; l < cfg_.layers; ++l) enqueue_verify_layer(cfg_.share_pools ? 0 : g * cfg_.layers + l, stream);
}

void VerifyProblem::enqueue_verify_accept(cudaStream_t stream) const {
  for (int g = 0; g < cfg_.groups; ++g) {
    for (int l = 0; l < cfg_.layers; ++l) {
      const int set = cfg_.share_pools ? 0 : g * cfg_.layers + l;
      enqueue_verify_layer(set, stream);
      enqueue_accept_layer(set, stream);
    }
    enqueue_advance_positions(g, stream);
  }
}

void VerifyProblem::enqueue_advance_positions(int group, cudaStream_t stream) const {
  if (!kvbuffer()) return;
  const int positions_group = cfg_.share_pools ? 0 : group;
  int32_t* positions = fill(positions_group);
  if (raw()) {
    KVB_CUDA_CHECK(launch_kvbuffer_advance_accepted(positions, slot_.get(), accepted_.get(), cfg_.batch,
                                                    cfg_.buffer_size, stream));
  } else {
    KVB_CUDA_CHECK(launch_kvbuffer_commit_accepted(positions, slot_.get(), accepted_.get(), cfg_.batch,
                                                   cfg_.buffer_size, cfg_.draft_tokens, stream, cfg_.pdl));
    enqueue_order_rows(positions_group, stream);
  }
}

/// The per-row view the byte model sums over: group 0's initial positions by row, and the accepted counts.
static VerifyBatch byte_batch(const VerifyProblem& p) {
  const VerifyConfig& c = p.config();
  VerifyBatch b;
  b.shape = c.shape;
  b.kvbuffer = p.kvbuffer();
  b.form = c.form;
  b.draft_tokens = c.draft_tokens;
  b.buffer_size = c.buffer_size;
  b.layers = c.layers;
  b.o_dtype = c.o_dtype;
  b.state_dtype = c.state_dtype;
  b.delta_dtype = c.delta_dtype;
  b.accepted = p.accepted();
  if (b.kvbuffer)
    for (int32_t slot : p.host_slots()) b.fill.push_back(p.initial_fill()[size_t(slot)]);
  return b;
}

ByteCount VerifyProblem::verify_bytes_per_layer_step() const { return verify_layer_step_bytes(byte_batch(*this)); }

ByteCount VerifyProblem::verify_accept_bytes_per_layer_step(int steps) const {
  return verify_accept_layer_step_bytes(byte_batch(*this), steps);
}

}  // namespace kvb
