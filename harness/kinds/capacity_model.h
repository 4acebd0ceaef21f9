// Serving capacity: the device memory each request holds for the Gated DeltaNet layers of a model, per variant
// (recurrent or KVBuffer, decode or m-draft verification), and the largest number of concurrent requests a memory
// budget holds once every pool is allocated the way the kernels need it (DESIGN.md sections 1 and 3).
//
// Per request and per layer (shape H = heads_qk, HV = heads_v, K = head_dim_k, V = head_dim_v; |S| = HV*K*V*e with
// e = state_elem_bytes(state_dtype): 4 for fp32 states, 2 for bf16; core/gdn_shape.h):
//   recurrent_decode      state |S| (pool [slots, HV, K, V] of state_dtype)
//   recurrent_verify(m)   state |S| + intermediate states m*|S| (scratch [slots, m, HV, K, V] of state_dtype):
//                         (1 + m) states
//   kvbuffer_decode(B)    checkpoint |S| + max(B - 1, 1) entries (a slot never holds B entries: the step that would
//                         write the B-th flushes instead; the pools' capacity rule in kernels/gdn_params.h)
//   kvbuffer_verify(B,m)  checkpoint |S| + (B - 1 + m) entries: verify writes the m drafts' entries after up to B - 1
//                         buffered ones, and a commit may leave B - 1 + m until the next verify folds them; the
//                         drafts need nothing kept from verify until accept (launch_kvbuffer_commit_accepted)
//   entry                 H*K*2 (raw bf16 keys) + HV*V*4 (fp32 corrected deltas) + HV*4 (fp32 log-decay)
//                         (byte_model/byte_model.h kvbuffer_entry_bytes), the same with either state dtype: only
//                         what is stored of a state (state, intermediate states, checkpoint) follows state_dtype
//   KVBuffer fill index   4 bytes per request, once (request metadata shared by all layers, KVBufferPool::fill);
//                         verify adds H arrival counters (4*H bytes per request, once: KVBufferVerifyParams)
//   conv state            3 * (2*H*K + HV*V) * 2 bytes (Qwen3-Next short convolution, kernel 4: the last 3 positions
//                         of the q, k, v channels in bf16); reported always, counted only when ModelShape::conv_state.
//                         One window per request; intermediate windows for verification are not modelled.
// Not per request but inside the budget (one workspace allocation, shared by all layers, as activations are reused
// layer after layer): the gate parameters A_log, dt_bias of every layer (fixed), and one step's inputs q, k, v, a, b,
// the bf16 output o and the slot indices at the batch (these scale with the batch and are itemised as io bytes).
//
// Allocation model: every pool is one cudaMalloc per layer (the fill index one for the model), and the driver hands
// out device memory in 2 MiB granules (measured on an H200, driver 580.159.04: a cudaMalloc of s >= 1 MiB bytes takes
// round_up(s, 2 MiB) of the free memory; smaller ones are packed several to a granule, 512-byte aligned). Each pool
// array is therefore requested as round_up(bytes, 2 MiB), which makes the footprint exact and independent of
// allocation order; the padding, under 2 MiB per array and layer, is counted (max_requests_model is at most
// floor(budget / per-request bytes), lower by the padding, workspace and headroom). The last few MiB of the free
// memory the driver reports cannot be allocated (same H200: 2047.1 MiB reported free held 1022 allocations of 2 MiB
// and no more), so 4 MiB of the budget are kept as headroom.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gdn_shape.h"
#include "kernels/gdn_params.h"

namespace kvb::capacity {

/// Granule in which the CUDA driver hands out device memory: 2 MiB.
constexpr int64_t kAllocationGranule = int64_t(2) << 20;
/// Budget bytes kept free for the driver: 4 MiB.
constexpr int64_t kDriverHeadroom = int64_t(4) << 20;
/// Largest buffer capacity (entries per slot) and draft count: the kernels' own limits.
constexpr int kMaxBufferEntries = ::kvb::kMaxBuffer;
constexpr int kMaxDrafts = ::kvb::kMaxDraftTokens;
/// Alignment of each piece of the step workspace, bytes.
constexpr int64_t kWorkspaceAlign = 256;
/// Positions of the short convolution's window kept per request (Qwen3-Next conv kernel size 4, less one).
constexpr int kConvWindow = 3;

/// The four ways of serving a request whose capacity is modelled.
enum class Variant { recurrent_decode, recurrent_verify, kvbuffer_decode, kvbuffer_verify };

/// "recurrent_decode", "recurrent_verify", "kvbuffer_decode", "kvbuffer_verify".
const char* to_string(Variant v);
inline bool is_verify(Variant v) { return v == Variant::recurrent_verify || v == Variant::kvbuffer_verify; }
inline bool is_kvbuffer(Variant v) { return v == Variant::kvbuffer_decode || v == Variant::kvbuffer_verify; }

/// One row of the capacity table: a variant with its buffer size B (KVBuffer only, else 0), draft tokens m (verify
/// only, else 0) and the element type of its stored states (recurrent states, recurrent verify's intermediate
/// states, KVBuffer checkpoints: 4 bytes an element fp32, 2 bf16).
struct CapacityCase {
  Variant variant = Variant::recurrent_decode;
  int buffer_size = 0;   ///< B
  int draft_tokens = 0;  ///< m
  StateDtype state_dtype = StateDtype::fp32;
};

/// The model whose GDN layers are served: one layer's shape, the number of GDN layers, and whether the short
/// convolution's state counts in the per-request bytes. Defaults: Qwen3-Next at TP1 (36 GDN layers).
struct ModelShape {
  GdnShape shape;
  int layers = 36;
  bool conv_state = false;
};

/// Which per-request column an array's bytes belong to.
enum class Item { state, intermediate_state, buffer, draft, conv_state };

/// One per-request pool array: bytes it holds for one request, in one layer (per_layer) or once for the model.
struct PoolArray {
  std::string name;             ///< state, scratch, checkpoint, keys, deltas, log_decay, fill, group_arrivals
  Item item = Item::state;
  int64_t bytes_per_request = 0;
  bool per_layer = true;        ///< one array per layer; false: one array shared by all layers (KVBuffer fill)
};

/// One piece of the step workspace (gate parameters, inputs, output, slot indices) at a given batch, bytes.
struct WorkspacePiece {
  std::string name;
  int64_t bytes = 0;
};

/// Per-request bytes over all layers, itemised. total = state + intermediate_state + buffer + draft, plus
/// conv_state when the model counts it. io is one step's inputs, output and slot index (one layer's worth: the
/// workspace is shared by all layers), not part of total but inside the budget.
struct RequestBytes {
  int64_t state = 0;               ///< main state (recurrent) or checkpoint (KVBuffer)
  int64_t intermediate_state = 0;  ///< recurrent verification scratch, m states per layer
  int64_t buffer = 0;              ///< buffered entries (capacity of the pool) and the fill index
  int64_t draft = 0;               ///< KVBuffer verification: m draft entries kept until accept
  int64_t conv_state = 0;          ///< short-convolution window (reported even when not counted)
  int64_t io = 0;                  ///< one step's inputs, output and slot index
  int64_t total = 0;
};

/// Everything the capacity of one case depends on: the pools to allocate per request, the workspace, and the
/// per-request bytes (per layer and over all layers).
struct CapacityPlan {
  CapacityCase c;
  ModelShape model;
  int tokens = 1;          ///< tokens per row in one step: 1 (decode) or m (verify)
  int buffer_entries = 0;  ///< KVBuffer pool capacity per slot: max(B - 1, 1); 0 recurrent
  std::vector<PoolArray> arrays;  ///< pools to allocate (conv_state only when model.conv_state)
  RequestBytes per_layer;  ///< per request, one layer (the fill index, held once per model, is not in it)
  RequestBytes per_request;///< per request, all layers
};

/// "" when the case fits the kernels, else a one-line reason naming the field and the allowed values:
/// shape as validate_shape; layers >= 1; B in [1, 256] for KVBuffer; m in [1, 8] for verify; B - 1 + m <= 256.
std::string validate_case(const CapacityCase& c, const ModelShape& m);

/// The plan of one case (formulas in this header; state, scratch and checkpoint arrays at c.state_dtype's element
/// size). Throws std::invalid_argument with validate_case's reason.
CapacityPlan make_plan(const CapacityCase& c, const ModelShape& m);

/// Bytes of one KVBuffer entry of one request in one layer: H*K*2 + HV*V*4 + HV*4.
int64_t entry_bytes(const GdnShape& s);
/// Bytes of one request's short-convolution window in one layer: kConvWindow * (2*H*K + HV*V) * 2.
int64_t conv_state_bytes(const GdnShape& s);

/// The step workspace at `requests` rows: A_log and dt_bias of every layer ([layers, HV] fp32 each), slot [N] int32,
/// q [N, T, H, K], k [N, T, H, K], v [N, T, HV, V], a and b [N, T, HV], o [N, T, HV, V], all bf16.
std::vector<WorkspacePiece> workspace_pieces(const CapacityPlan& p, int64_t requests);
/// Bytes of the workspace allocation: the pieces, each rounded up to kWorkspaceAlign.
int64_t workspace_bytes(const CapacityPlan& p, int64_t requests);
/// Bytes not per request: the workspace at zero requests (the gate parameters).
inline int64_t fixed_bytes(const CapacityPlan& p) { return workspace_bytes(p, 0); }

/// x rounded up to a multiple of granule (granule >= 1).
int64_t round_up(int64_t x, int64_t granule);

/// Device memory the pools of `requests` requests and the workspace take: every pool array and the workspace
/// rounded up to `granule` bytes, summed over layers.
int64_t footprint_bytes(const CapacityPlan& p, int64_t requests, int64_t granule = kAllocationGranule);

/// Largest N >= 0 with footprint_bytes(p, N, granule) <= budget - headroom (0 when not even one request fits).
/// With granule 1 and headroom 0 this is floor((budget - fixed_bytes) / (per_request.total + per_request.io)), up to
/// the workspace alignment.
int64_t max_requests(const CapacityPlan& p, int64_t budget_bytes, int64_t granule = kAllocationGranule,
                     int64_t headroom = kDriverHeadroom);

}  // namespace kvb::capacity
