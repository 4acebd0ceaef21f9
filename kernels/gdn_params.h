// Parameter structs and launchers of the Gated DeltaNet kernel families (DESIGN.md sections 2 and 3).
// One params struct per family; launchers validate, launch, check the launch, and return a cudaError_t (never exit).
// validate_*() give the reason for cudaErrorInvalidValue as one line naming the field and the allowed values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/gdn_shape.h"

namespace kvb {

using bf16 = __nv_bfloat16;

/// Inputs of a batch of N rows with T tokens each (decode: T = 1; verify: T = draft tokens m), exactly as a
/// Qwen3-Next layer hands them over. Gate preparation (l2-norm, softplus gate, sigmoid beta) happens in the kernel
/// in fp32 (DESIGN.md section 2), unless prepared gates are given.
struct TokenInputs {
  const bf16* q = nullptr;        ///< [N, T, H, K]
  const bf16* k = nullptr;        ///< [N, T, H, K]
  const bf16* v = nullptr;        ///< [N, T, HV, V]
  const bf16* a = nullptr;        ///< [N, T, HV] raw gate input: g = -exp(A_log) * softplus(a + dt_bias)
  const bf16* b = nullptr;        ///< [N, T, HV] raw beta input: beta = sigmoid(b), kept in fp32
  const float* A_log = nullptr;   ///< [HV]
  const float* dt_bias = nullptr; ///< [HV]
  const float* g = nullptr;       ///< optional [N, T, HV] prepared log-decay; when set, a/A_log/dt_bias are unused
  const float* beta = nullptr;    ///< optional [N, T, HV] prepared beta; when set, b is unused
  float scale = 0.f;              ///< query scale, usually K^-1/2
  int tokens = 1;                 ///< T
};

/// Tile of a launch: value columns per block x threads per block. {0, 0} is auto: the launcher's own choice by shape
/// and batch, the shapes measured fastest on the H200 (docs/CLI.md lists them). A launcher takes an explicit tile at
/// head_dim_k = 128 only, and only one of its family's list (recurrent_decode_tiles() and the like); validate()
/// refuses any other. The CSV's `tile` column records it.
struct TileShape {
  int columns = 0;  ///< value columns per block
  int threads = 0;  ///< threads per block
  bool is_auto() const { return columns == 0 && threads == 0; }
  bool operator==(const TileShape& o) const { return columns == o.columns && threads == o.threads; }
  bool operator!=(const TileShape& o) const { return !(*this == o); }
};

/// "auto", or "COLUMNSxTHREADS" (for example "64x128").
std::string to_string(const TileShape& t);
/// Parses to_string's form into `out`; false (out unchanged) when `text` is neither.
bool parse_tile(const std::string& text, TileShape& out);

/// The explicit tiles of each launcher family at head_dim_k = 128 (auto aside).
const std::vector<TileShape>& recurrent_decode_tiles();  ///< 32x128, 64x256, 128x128, 128x256, 128x512
const std::vector<TileShape>& kvbuffer_decode_tiles();   ///< 32x128, 64x128, 64x256, 128x128, 128x256
const std::vector<TileShape>& recurrent_verify_tiles();  ///< 64x128, 128x256, 128x512
const std::vector<TileShape>& kvbuffer_verify_tiles();   ///< 64x128, 128x256

/// "" when `tile` is auto, or one of `allowed` at head_dim_k = 128; else the reason, naming `family` and the allowed
/// tiles.
std::string validate_tile(const TileShape& tile, const std::vector<TileShape>& allowed, const GdnShape& shape,
                          const char* family);

/// Recurrent decode (today's serving path): per row, S <- e^g S; u = beta (v - S^T k^); S += k^ u^T; o = S^T q^.
/// Reads and writes the whole state once per token: 2 * HV * K * V * state_elem_bytes(state_dtype) bytes per row.
/// Arithmetic is fp32 with either state dtype; a bf16 state is rounded (nearest even) where it is stored.
struct RecurrentDecodeParams {
  GdnShape shape;
  int batch = 0;                   ///< N rows (one token each)
  TokenInputs in;                  ///< tokens must be 1
  /// Pool [num_slots, HV, K, V] (kv) or [num_slots, HV, V, K] (vk) of `state_dtype` elements, in place.
  void* state = nullptr;
  StateDtype state_dtype = StateDtype::fp32;  ///< bf16 with layout kv only
  int num_slots = 0;
  StateLayout layout = StateLayout::kv;
  const int32_t* slot = nullptr;   ///< [N] pool slot of each row; -1 = padding: no state read or write, o row zeroed
  void* o = nullptr;               ///< [N, HV, V] in o_dtype
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Programmatic dependent launch (kernels/pdl.cuh): the kernel may start while the previous kernel on the stream
  /// finishes, and streams its state slices before waiting for it. Set it only when that previous kernel writes none of
  /// this launch's states (in a model step it is another layer's kernel); false: a plain launch.
  bool pdl = false;
  /// Tile of the launch (TileShape): auto, or one of recurrent_decode_tiles() (head_dim_k = 128, layout kv).
  TileShape tile;
};

/// Largest buffer capacity (entries per slot) the KVBuffer kernels of the delta form accept: buffer_size and capacity
/// of a KVBufferPool are at most this (validate_pool), and B - 1 + m for m-draft verify (validate_verify_capacity).
constexpr int kMaxBuffer = 256;

/// Per-request KVBuffer in delta form (DESIGN.md section 3): a checkpoint S0 and up to `capacity` buffered entries
/// (k_j, u_j, g_j). Keys are stored raw (bf16, the exact inputs; l2-normalised in fp32 on use), corrected deltas u_j in
/// fp32 (or bf16: delta_dtype), and the per-step log-decay g_j in fp32 (cumulative sums G_t - G_j are formed in the
/// kernel from the g_j, which keeps e^(G_t - G_j) accurate however long the buffer). Layout kv only.
/// fill[slot] is request metadata shared by all layers: kernels only read it; launch_kvbuffer_advance (once per model
/// step, after every layer) and launch_kvbuffer_clear write it.
struct KVBufferPool {
  void* checkpoint = nullptr;    ///< [num_slots, HV, K, V] S0 of `state_dtype` elements
  bf16* keys = nullptr;          ///< [num_slots, capacity, H, K] raw keys
  void* deltas = nullptr;        ///< [num_slots, capacity, HV, V] u_j of `delta_dtype` elements
  float* log_decay = nullptr;    ///< [num_slots, capacity, HV] g_j
  int32_t* fill = nullptr;       ///< [num_slots] entries held, 0 <= fill <= capacity; >= buffer_size: due (verify)
  int num_slots = 0;
  int capacity = 0;              ///< entries per slot, >= max(buffer_size - 1, 1); >= B - 1 + m for m-draft verify
  int buffer_size = 1;           ///< B: the decode step that brings a slot to B entries flushes it (B = 1: recurrent)
  /// Checkpoint rows of `checkpoint` when they differ from the buffer rows (0 = num_slots): a pool can hold many more
  /// buffers than states, since a stateless request (DESIGN.md section 3) has a buffer row and no checkpoint row.
  int num_checkpoints = 0;
  /// The checkpoint's element type. bf16: KVBuffer decode (delta form) and verify on the tensor-core kernel
  /// (VerifyKernel::automatic or tensor_cores) only; every other kernel of the pool refuses it (validate). The
  /// buffered entries stay as above either way.
  StateDtype state_dtype = StateDtype::fp32;
  /// The corrected deltas' element type (StateDtype's values: 4 or 2 bytes an element, state_elem_bytes). bf16 (u_j
  /// rounded to nearest even where a kernel stores it, widened exactly where one reads it): with bf16 checkpoints on
  /// the staged verify kernel only; every other kernel of the pool refuses it (validate_fp32_deltas).
  StateDtype delta_dtype = StateDtype::fp32;

  /// The deltas as fp32 elements: for the kernels that take fp32 deltas only (validate_fp32_deltas).
  KVB_HOST_DEVICE float* fp32_deltas() const { return static_cast<float*>(deltas); }
  /// Rows of `checkpoint`: num_checkpoints, or num_slots when it is 0.
  KVB_HOST_DEVICE int checkpoint_rows() const { return num_checkpoints > 0 ? num_checkpoints : num_slots; }
};

/// One position of a launch's row order (KVBufferDecodeParams::row_order, KVBufferVerifyParams::row_order): the batch
/// row, its slot and the slot's fill (pool.fill[slot] when the order was written; 0 for a padding row), copied so
/// that a block reads one 16-byte word before its checkpoint and buffer. Valid while no kernel changes the positions
/// between the order and the launch, as in a model step, whose order is written after the positions move (the decode
/// advance, the verify commit) and read by every layer's launch.
struct alignas(16) OrderedRow {
  int32_t row = 0, slot = -1, fill = 0, unused = 0;
};

/// KVBuffer decode: o_t from S0 plus the buffer; appends (k_t, u_t, g_t) at position fill[slot]; when that makes B
/// entries (or more, after a speculative accept left fill >= B - 1), writes S0 <- e^{G_t} S0 + sum_j e^{G_t - G_j}
/// k^_j u_j^T instead (the flush) and appends nothing.
/// Bytes per row, not flushing: S0 once + the n buffered entries; flushing: S0 read and written + the entries.
struct KVBufferDecodeParams {
  GdnShape shape;
  int batch = 0;
  TokenInputs in;                ///< tokens must be 1
  KVBufferPool pool;
  const int32_t* slot = nullptr; ///< [N], -1 = padding: pool untouched, o row zeroed
  void* o = nullptr;             ///< [N, HV, V]
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Stateless short contexts (DESIGN.md section 3). Buffers (keys, deltas, log_decay, fill) stay indexed by slot;
  /// the checkpoint of row i is row state_slot[i] of pool.checkpoint. A row with has_state[i] = 0 has S0 identically
  /// zero: its checkpoint is neither read nor written, and the step reads only its buffer, except on its flush step
  /// (fill + 1 = B), which materialises the state: the fold starts from zero (nothing read) and writes the new
  /// checkpoint at state_slot[i], which the scheduler assigns exactly then. A stateless row that flushes with
  /// state_slot[i] < 0 writes nothing to the checkpoint pool (the state is dropped). A row with a state whose
  /// state_slot is outside [0, pool.checkpoint_rows()) is treated as padding.
  const int32_t* state_slot = nullptr; ///< optional [N] checkpoint row; nullptr = slot (one checkpoint per buffer)
  const uint8_t* has_state = nullptr;  ///< optional [N] 1 = the state exists, 0 = stateless; nullptr = all 1
  /// Every row of the launch is stateless (the scheduler knows every request's context length): has_state is then
  /// ignored, the blocks reserve no shared memory for a checkpoint tile (many more blocks per SM) and take whole
  /// value heads. A stateless step costs only its buffer's bytes, so its latency rests on how many blocks run at once.
  bool stateless_batch = false;
  /// Programmatic dependent launch (kernels/pdl.cuh): the kernel may start while the previous kernel on the stream
  /// finishes, and streams its checkpoint slices before waiting for it. Set it only when that previous kernel writes none of
  /// this launch's checkpoints (in a model step it is another layer's kernel); false: a plain launch.
  bool pdl = false;
  /// Tile of the launch (TileShape): auto, or one of kvbuffer_decode_tiles() (head_dim_k = 128, not stateless_batch).
  TileShape tile;
  /// [N] or null (batch order): the rows in the order the launch's blocks take them (OrderedRow), a permutation of
  /// 0 .. N - 1 that launch_kvbuffer_order_decode_rows writes from the buffer positions. A launch that is given one
  /// takes each row's slot and fill from it, before the PDL wait, like the slot array: the kernel just before it on
  /// the stream must not write it (launch the first layer after the order with pdl = false).
  const OrderedRow* row_order = nullptr;
};

/// Standalone flush: folds the fill[slot] buffered entries of each listed slot into its checkpoint
/// (S0 <- e^{G_n} S0 + sum_j e^{G_n - G_j} k^_j u_j^T). Leaves fill as it is: follow with launch_kvbuffer_clear.
struct KVBufferFlushParams {
  GdnShape shape;
  int count = 0;                 ///< slots listed
  const int32_t* slot = nullptr; ///< [count], -1 entries are skipped
  KVBufferPool pool;
  /// As in KVBufferDecodeParams: checkpoint row and state flag of each listed slot. A stateless entry folds its
  /// buffer into a zero state (nothing read) and writes it at state_slot (nothing when state_slot < 0), even with an
  /// empty buffer (a zero checkpoint); an entry with a state and an empty buffer is left untouched.
  const int32_t* state_slot = nullptr; ///< optional [count]; nullptr = slot
  const uint8_t* has_state = nullptr;  ///< optional [count]; nullptr = all 1
};

std::string validate(const RecurrentDecodeParams& p);
std::string validate(const KVBufferDecodeParams& p);
std::string validate(const KVBufferFlushParams& p);

cudaError_t launch_recurrent_decode(const RecurrentDecodeParams& p, cudaStream_t stream);
cudaError_t launch_kvbuffer_decode(const KVBufferDecodeParams& p, cudaStream_t stream);
cudaError_t launch_kvbuffer_flush(const KVBufferFlushParams& p, cudaStream_t stream);

/// The kernel launch_kvbuffer_decode takes for p, described without launching it: its slice width (value columns per
/// block, the whole head for a stateless batch), threads per block, shared memory per block (bytes, dynamic plus
/// static) and the blocks per SM the CUDA occupancy API reports for it (which loads the kernel).
struct KVBufferDecodeLaunch {
  int slice_columns = 0;
  int threads = 0;
  size_t smem_bytes = 0;
  int resident_blocks_per_sm = 0;
};
/// Fills `out` for p (cudaErrorInvalidValue when validate(p) refuses it; else the occupancy query's error or
/// cudaSuccess).
cudaError_t describe_kvbuffer_decode_launch(const KVBufferDecodeParams& p, KVBufferDecodeLaunch& out);

/// Writes row_order[0 .. N) for decode launches like p (KVBufferDecodeParams::row_order; kernels/row_order.h): the
/// rows whose step flushes (pool.fill[slot], clamped to [0, capacity], reaches pool.buffer_size - 1) spread over all
/// but the last `wave_rows` positions (kvbuffer_decode_wave_rows(p)), the others in batch order; padding rows do not
/// flush. Reads p.slot and p.pool.fill only; one block. Once per model step, after the advance (every layer's launch
/// shares the slots and the buffer positions).
cudaError_t launch_kvbuffer_order_decode_rows(const KVBufferDecodeParams& p, int wave_rows, OrderedRow* row_order,
                                              cudaStream_t stream);
/// Batch rows the decode launch of p holds at once on this GPU (resident blocks per SM x SMs / blocks per row), the
/// wave_rows of launch_kvbuffer_order_decode_rows; 0 when p is refused.
int kvbuffer_decode_wave_rows(const KVBufferDecodeParams& p);

/// After every layer of one model step: fill[slot[i]] = fill + 1 >= buffer_size ? 0 : fill + 1 for rows with
/// slot >= 0 (a fill of B - 1 or more, left by a speculative accept, flushed by the step, also restarts at 0).
cudaError_t launch_kvbuffer_advance(int32_t* fill, const int32_t* slot, int batch, int buffer_size,
                                    cudaStream_t stream);
/// fill[slot[i]] = 0 for listed slots >= 0 (after a standalone flush).
cudaError_t launch_kvbuffer_clear(int32_t* fill, const int32_t* slot, int count, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------------------------
// Speculative verification (DESIGN.md section 3). Inputs hold T = m draft tokens per row ([N, m, ...]).

/// Recurrent verification, the baseline serving systems use: each row's m drafts stepped one by one from its state;
/// the state after draft i is written to scratch[slot][i]; the state pool itself is not modified.
/// Bytes per row: state read once, m states written, plus m tokens' inputs and outputs.
struct RecurrentVerifyParams {
  GdnShape shape;
  int batch = 0;
  TokenInputs in;                 ///< tokens = m, 1 <= m <= kMaxDraftTokens
  const float* state = nullptr;   ///< pool [num_slots, HV, K, V] (kv), fp32, read only
  int num_slots = 0;
  float* scratch = nullptr;       ///< [num_slots, m, HV, K, V] fp32 intermediate states, indexed by slot
  const int32_t* slot = nullptr;  ///< [N], -1 = padding: nothing read or written, o rows zeroed
  void* o = nullptr;              ///< [N, m, HV, V]
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Programmatic dependent launch (kernels/pdl.cuh): the kernel may start while the previous kernel on the stream
  /// finishes, and loads its state slices before waiting for it. Set it only when that previous kernel writes none of
  /// this launch's states (in a model step it is another layer's verify or accept); false: a plain launch.
  bool pdl = false;
  /// Tile of the launch (TileShape): auto, or one of recurrent_verify_tiles() (head_dim_k = 128).
  TileShape tile;
};

/// Accept after recurrent verification: state[slot] = scratch[slot][a - 1] for a = accepted[row] >= 1 (a = 0 keeps
/// the state). Bytes per accepting row: one state read and written.
struct RecurrentAcceptParams {
  GdnShape shape;
  int batch = 0;
  int draft_tokens = 0;              ///< m of the scratch pool
  float* state = nullptr;            ///< pool [num_slots, HV, K, V]
  const float* scratch = nullptr;    ///< [num_slots, m, HV, K, V]
  int num_slots = 0;
  const int32_t* slot = nullptr;     ///< [N], -1 = padding
  const int32_t* accepted = nullptr; ///< [N] accepted drafts a, 0 <= a <= m
  /// Programmatic dependent launch (kernels/pdl.cuh): the launch overlaps the previous kernel's last wave and waits
  /// for it before reading anything; false: a plain launch.
  bool pdl = false;
};

/// Which KVBuffer verify kernel a launch runs. cuda_cores: the checkpoint slice's products with the drafts as fp32
/// FMAs (every head size the shape check allows). tensor_cores: one block per row and pair of value heads, the slice
/// streamed into registers as the A fragments of TF32 tensor-core products split three ways (3xTF32, fp32
/// accuracy), the buffer's share, a due row's fold and the key products on tensor cores too
/// (kernels/kvbuffer_verify_mma.cu; head dims 128 x 128, tile auto: validate_tensor_core_verify).
/// staged: bf16 checkpoints only, one block per row and value head, the whole slice staged in shared memory while
/// the drafts' coefficients are formed, then bf16 tensor-core products of exact operands (raw keys and queries, the
/// bf16 checkpoint; a due row's weighted deltas split in three bf16 parts) (kernels/kvbuffer_verify_staged.cu; head
/// dims 128 x 128, capacity <= 32, tile auto: validate_staged_verify).
/// automatic: the launcher's choice. fp32 checkpoints: the tensor-core kernel where it takes the launch and was
/// measured the faster (at least 15 rows x value heads an SM with 3 drafts or more, 32 with 1 or 2), else the
/// CUDA-core kernel; bf16 checkpoints: the staged kernel where it takes the launch and was measured the faster (6
/// drafts or more; every draft count from 15 rows x value heads an SM), else the tensor-core kernel.
/// describe_kvbuffer_verify_launch says which runs.
enum class VerifyKernel : int { automatic = 0, cuda_cores = 1, tensor_cores = 2, staged = 3 };
inline const char* to_string(VerifyKernel k) {
  return k == VerifyKernel::cuda_cores     ? "cuda_cores"
         : k == VerifyKernel::tensor_cores ? "tensor_cores"
         : k == VerifyKernel::staged       ? "staged"
                                           : "automatic";
}

/// KVBuffer verification with accept folded in: the m drafts' outputs from the checkpoint and the buffer in one pass.
/// Draft i's entry (raw key, corrected delta u_i, log-decay) is exact for any accepted prefix (causality), so verify
/// writes it straight into the slot's buffer at position base + i, base = n = fill[slot]; accepting a drafts is then
/// only fill += a (launch_kvbuffer_commit_accepted), rejection costs nothing. A row is due when n >= B (its last commit
/// took the buffer to B entries or beyond, up to B - 1 + m): verify then also folds the n entries into the checkpoint
/// (the flush, from the slice it reads anyway) and base = 0; its drafts' keys and log-decays, which replace entries
/// every block of a key group reads, are written by the group's last block to finish reading (group_arrivals). The
/// pool's capacity must be >= B - 1 + m (validate_verify_capacity). fill is not changed.
/// Bytes per row: checkpoint read once, the n buffered entries read, m tokens' inputs and outputs, m entries written; a
/// due row also writes its checkpoint once.
struct KVBufferVerifyParams {
  GdnShape shape;
  int batch = 0;
  TokenInputs in;                      ///< tokens = m, 1 <= m <= kMaxDraftTokens
  KVBufferPool pool;                   ///< capacity >= B - 1 + m
  const int32_t* slot = nullptr;       ///< [N], -1 = padding: nothing read or written, o rows zeroed
  int32_t* group_arrivals = nullptr;   ///< [N, H] zero before a launch, zero again after it (the launch's counters)
  void* o = nullptr;                   ///< [N, m, HV, V]
  OutputDtype o_dtype = OutputDtype::bf16;
  /// Programmatic dependent launch (kernels/pdl.cuh): the kernel may start while the previous kernel on the stream
  /// finishes, and the blocks of its first wave stream their checkpoint slices before waiting for it. Set it only when
  /// that previous kernel writes none of this launch's checkpoints (in a model step it is another layer's verify, or
  /// the commit, which writes only fill); false: a plain launch.
  bool pdl = false;
  /// Tile of the launch (TileShape): auto, or one of kvbuffer_verify_tiles() (head_dim_k = 128).
  TileShape tile;
  /// The kernel to run (VerifyKernel); a forced kernel that cannot take p is refused by validate().
  VerifyKernel kernel = VerifyKernel::automatic;
  /// [N] or null (batch order): the rows in the order the launch's blocks take them (OrderedRow), a permutation of
  /// 0 .. N - 1 that launch_kvbuffer_order_rows writes from the buffer positions. A launch that is given one reads
  /// it after the PDL wait, so that the kernel before it may write it, and takes each row's fill from it rather than
  /// from pool.fill.
  const OrderedRow* row_order = nullptr;
};

/// Largest number of draft tokens the verify kernels take.
constexpr int kMaxDraftTokens = 8;

std::string validate(const RecurrentVerifyParams& p);
std::string validate(const RecurrentAcceptParams& p);
std::string validate(const KVBufferVerifyParams& p);
/// "" when `pool` can take KVBuffer verification of `draft_tokens` drafts: capacity >= buffer_size - 1 +
/// draft_tokens (verify writes the drafts' deltas after up to B - 1 entries) and that sum <= kMaxBuffer; else
/// the reason, naming the field.
std::string validate_verify_capacity(const KVBufferPool& pool, int draft_tokens);

/// "" when the tensor-core verify kernel takes p (head_dim_k = head_dim_v = 128, tile auto), else the reason naming
/// the field and the allowed values. validate(p) asks it when p.kernel is tensor_cores.
std::string validate_tensor_core_verify(const KVBufferVerifyParams& p);
/// "" when the staged verify kernel takes p (bf16 checkpoints, head_dim_k = head_dim_v = 128, pool capacity <= 32,
/// tile auto), else the reason naming the field and the allowed values. validate(p) asks it when p.kernel is staged.
std::string validate_staged_verify(const KVBufferVerifyParams& p);
/// Largest pool capacity (B - 1 + m entries a slot) the staged verify kernel stages: two 16-entry products of its fold.
constexpr int kStagedVerifyMaxEntries = 32;

cudaError_t launch_recurrent_verify(const RecurrentVerifyParams& p, cudaStream_t stream);
cudaError_t launch_recurrent_accept(const RecurrentAcceptParams& p, cudaStream_t stream);
cudaError_t launch_kvbuffer_verify(const KVBufferVerifyParams& p, cudaStream_t stream);

/// The kernel launch_kvbuffer_verify takes for p, described without launching it: whether the buffer's keys are
/// staged in shared memory and the drafts' rows packed, the block's shared memory (bytes, dynamic plus static), the
/// blocks per SM the launcher's size model predicts for that choice and those the CUDA occupancy API reports for the
/// kernel (which loads it). The model counts shared memory, and registers only where it may pack (128 columns, up to
/// 4 drafts: three blocks); elsewhere registers can hold the kernel to fewer blocks than predicted.
struct KVBufferVerifyLaunch {
  VerifyKernel kernel = VerifyKernel::cuda_cores;  ///< the kernel the launch runs (never automatic)
  bool smem_keys = false;
  bool packed = false;
  size_t smem_bytes = 0;
  int predicted_blocks_per_sm = 0;
  int resident_blocks_per_sm = 0;
  int blocks_per_row = 0;  ///< blocks a batch row takes (the grid's blocks over N)
};
/// Fills `out` for p (cudaErrorInvalidValue when validate(p) refuses it; else the occupancy query's error or
/// cudaSuccess).
cudaError_t describe_kvbuffer_verify_launch(const KVBufferVerifyParams& p, KVBufferVerifyLaunch& out);

/// Writes row_order[0 .. N) for verify launches like p (KVBufferVerifyParams::row_order; kernels/row_order.h): the
/// rows whose pool.fill[slot] (clamped to [0, capacity]) reaches pool.buffer_size, which fold, spread over all but
/// the last `wave_rows` positions (kvbuffer_verify_wave_rows(p)), the others in batch order; padding rows are not
/// due. Reads p.slot and p.pool.fill only; one block. Once per model step, after the commit (every layer's launch
/// shares the slots and the buffer positions).
cudaError_t launch_kvbuffer_order_rows(const KVBufferVerifyParams& p, int wave_rows, OrderedRow* row_order,
                                       cudaStream_t stream);
/// Batch rows the launch of p holds at once on this GPU (resident blocks per SM x SMs / blocks per row), the
/// wave_rows of launch_kvbuffer_order_rows; 0 when p is refused.
int kvbuffer_verify_wave_rows(const KVBufferVerifyParams& p);

/// After every layer's accept of one model step: fill[slot] = fill + a >= buffer_size ? 0 : fill + a, a = accepted[i]
/// (raw-form accept and stateless prefill, which flush when the buffer reaches B).
cudaError_t launch_kvbuffer_advance_accepted(int32_t* fill, const int32_t* slot, const int32_t* accepted, int batch,
                                             int buffer_size, cudaStream_t stream);

/// The accept of KVBuffer verification (delta form), once per model step after every layer's verify:
/// fill[slot] = (fill >= buffer_size ? 0 : fill) + a, a = accepted[i] clamped to [0, draft_tokens]; the result may
/// reach B - 1 + m (the slot's next verify or decode folds it). Preconditions: every row committed was verified
/// since its last commit (a due slot's reset to 0 assumes that verify folded its entries), and draft_tokens is the m
/// of those verify launches (the pool's capacity holds B - 1 + m). pdl: programmatic dependent launch
/// (kernels/pdl.cuh; it waits for the previous kernel before reading fill).
cudaError_t launch_kvbuffer_commit_accepted(int32_t* fill, const int32_t* slot, const int32_t* accepted, int batch,
                                            int buffer_size, int draft_tokens, cudaStream_t stream,
                                            bool pdl = false);

}  // namespace kvb
