// Per-request bytes and the capacity of a memory budget (capacity_model.h).
#include "harness/kinds/capacity_model.h"

#include <stdexcept>

namespace kvb::capacity {

const char* to_string(Variant v) {
  switch (v) {
    case Variant::recurrent_decode: return "recurrent_decode";
    case Variant::recurrent_verify: return "recurrent_verify";
    case Variant::kvbuffer_decode: return "kvbuffer_decode";
    case Variant::kvbuffer_verify: return "kvbuffer_verify";
  }
  return "?";
}

int64_t entry_bytes(const GdnShape& s) {
  return int64_t(s.heads_qk) * s.head_dim_k * 2 + int64_t(s.heads_v) * s.head_dim_v * 4 + int64_t(s.heads_v) * 4;
}

int64_t conv_state_bytes(const GdnShape& s) {
  return int64_t(kConvWindow) * (2 * int64_t(s.heads_qk) * s.head_dim_k + int64_t(s.heads_v) * s.head_dim_v) * 2;
}

std::string validate_case(const CapacityCase& c, const ModelShape& m) {
  if (auto e = validate_shape(m.shape); !e.empty()) return e;
  if (m.layers < 1) return "layers = " + std::to_string(m.layers) + " must be >= 1";
  if (is_kvbuffer(c.variant) && (c.buffer_size < 1 || c.buffer_size > kMaxBufferEntries))
    return "buffer_size = " + std::to_string(c.buffer_size) + " is out of range (allowed: 1 to " +
           std::to_string(kMaxBufferEntries) + ")";
  if (is_verify(c.variant) && (c.draft_tokens < 1 || c.draft_tokens > kMaxDrafts))
    return "draft_tokens = " + std::to_string(c.draft_tokens) + " is out of range (allowed: 1 to " +
           std::to_string(kMaxDrafts) + ")";
  if (c.variant == Variant::kvbuffer_verify && c.buffer_size - 1 + c.draft_tokens > kMaxBufferEntries)
    return "buffer_size - 1 + draft_tokens = " + std::to_string(c.buffer_size - 1 + c.draft_tokens) +
           " exceeds the largest buffer capacity " + std::to_string(kMaxBufferEntries);
  return "";
}

CapacityPlan make_plan(const CapacityCase& c, const ModelShape& m) {
  if (auto e = validate_case(c, m); !e.empty()) throw std::invalid_argument(e);
  const GdnShape& s = m.shape;
  CapacityPlan p;
  p.c = c;
  if (!is_kvbuffer(c.variant)) p.c.buffer_size = 0;
  if (!is_verify(c.variant)) p.c.draft_tokens = 0;
  p.model = m;
  const int drafts = p.c.draft_tokens;
  p.tokens = is_verify(c.variant) ? drafts : 1;

  const int64_t state = s.state_bytes(c.state_dtype);  // what is stored of a state follows the dtype
  const int64_t key = int64_t(s.heads_qk) * s.head_dim_k * 2;
  const int64_t delta = int64_t(s.heads_v) * s.head_dim_v * 4;
  const int64_t decay = int64_t(s.heads_v) * 4;
  switch (c.variant) {
    case Variant::recurrent_decode:
      p.arrays.push_back({"state", Item::state, state, true});
      break;
    case Variant::recurrent_verify:
      p.arrays.push_back({"state", Item::state, state, true});
      p.arrays.push_back({"scratch", Item::intermediate_state, drafts * state, true});
      break;
    case Variant::kvbuffer_decode:
    case Variant::kvbuffer_verify: {
      // Decode: a slot never holds B entries. Verify: the drafts' entries follow up to B - 1 buffered ones, and a
      // commit may leave up to B - 1 + m until the next verify folds them (kernels/gdn_params.h).
      p.buffer_entries = c.variant == Variant::kvbuffer_verify ? c.buffer_size - 1 + drafts
                                                               : std::max(c.buffer_size - 1, 1);
      const int64_t cap = p.buffer_entries;
      p.arrays.push_back({"checkpoint", Item::state, state, true});
      p.arrays.push_back({"keys", Item::buffer, cap * key, true});
      p.arrays.push_back({"deltas", Item::buffer, cap * delta, true});
      p.arrays.push_back({"log_decay", Item::buffer, cap * decay, true});
      p.arrays.push_back({"fill", Item::buffer, 4, false});
      if (c.variant == Variant::kvbuffer_verify)
        p.arrays.push_back({"group_arrivals", Item::buffer, int64_t(s.heads_qk) * 4, false});
      break;
    }
  }
  if (m.conv_state) p.arrays.push_back({"conv_state", Item::conv_state, conv_state_bytes(s), true});

  auto slot_of = [](RequestBytes& r, Item item) -> int64_t& {
    switch (item) {
      case Item::state: return r.state;
      case Item::intermediate_state: return r.intermediate_state;
      case Item::buffer: return r.buffer;
      case Item::draft: return r.draft;
      case Item::conv_state: return r.conv_state;
    }
    return r.state;
  };
  for (const PoolArray& a : p.arrays) {
    if (a.per_layer) slot_of(p.per_layer, a.item) += a.bytes_per_request;
    slot_of(p.per_request, a.item) += a.per_layer ? a.bytes_per_request * m.layers : a.bytes_per_request;
  }
  for (RequestBytes* r : {&p.per_layer, &p.per_request}) {
    r->total = r->state + r->intermediate_state + r->buffer + r->draft + r->conv_state;
    if (!m.conv_state) r->conv_state = r == &p.per_layer ? conv_state_bytes(s) : conv_state_bytes(s) * m.layers;
  }
  // io: the workspace bytes per request, without the per-piece alignment.
  int64_t io = 0;
  for (const WorkspacePiece& w : workspace_pieces(p, 1)) io += w.bytes;
  for (const WorkspacePiece& w : workspace_pieces(p, 0)) io -= w.bytes;
  p.per_layer.io = io;
  p.per_request.io = io;
  return p;
}

std::vector<WorkspacePiece> workspace_pieces(const CapacityPlan& p, int64_t requests) {
  const GdnShape& s = p.model.shape;
  const int64_t rows = requests * p.tokens;
  std::vector<WorkspacePiece> w;
  w.push_back({"A_log", int64_t(p.model.layers) * s.heads_v * 4});
  w.push_back({"dt_bias", int64_t(p.model.layers) * s.heads_v * 4});
  w.push_back({"slot", requests * 4});
  w.push_back({"q", rows * s.heads_qk * s.head_dim_k * 2});
  w.push_back({"k", rows * s.heads_qk * s.head_dim_k * 2});
  w.push_back({"v", rows * s.heads_v * s.head_dim_v * 2});
  w.push_back({"a", rows * s.heads_v * 2});
  w.push_back({"b", rows * s.heads_v * 2});
  w.push_back({"o", rows * s.heads_v * s.head_dim_v * 2});
  return w;
}

int64_t round_up(int64_t x, int64_t granule) { return (x + granule - 1) / granule * granule; }

int64_t workspace_bytes(const CapacityPlan& p, int64_t requests) {
  int64_t total = 0;
  for (const WorkspacePiece& w : workspace_pieces(p, requests)) total += round_up(w.bytes, kWorkspaceAlign);
  return total;
}

int64_t footprint_bytes(const CapacityPlan& p, int64_t requests, int64_t granule) {
  int64_t total = round_up(workspace_bytes(p, requests), granule);
  for (const PoolArray& a : p.arrays)
    total += (a.per_layer ? p.model.layers : 1) * round_up(requests * a.bytes_per_request, granule);
  return total;
}

int64_t max_requests(const CapacityPlan& p, int64_t budget_bytes, int64_t granule, int64_t headroom) {
  const int64_t usable = budget_bytes - headroom;
  if (footprint_bytes(p, 1, granule) > usable) return 0;
  // footprint grows by at least per_request.total + io per request: that bounds the search.
  int64_t lo = 1, hi = usable / (p.per_request.total + p.per_request.io) + 1;
  while (footprint_bytes(p, hi, granule) <= usable) hi *= 2;
  while (hi - lo > 1) {  // footprint(lo) fits, footprint(hi) does not
    const int64_t mid = lo + (hi - lo) / 2;
    (footprint_bytes(p, mid, granule) <= usable ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace kvb::capacity
