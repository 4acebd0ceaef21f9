// The shared vocabulary of kernels, float64 reference, byte model and harness: the shape of a GDN layer and the names
// of state layouts, output dtypes and buffer forms. Plain C++ (no CUDA).
#pragma once

#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define KVB_HOST_DEVICE __host__ __device__
#else
#define KVB_HOST_DEVICE
#endif

namespace kvb {

/// Element type of what is stored of a state: recurrent states, KVBuffer checkpoints, recurrent verify's intermediate
/// states. Arithmetic is fp32 in registers either way; bf16 halves the stored bytes and rounds the state (to nearest
/// even, 8 significant bits) each time it is stored.
enum class StateDtype : int { fp32 = 0, bf16 = 1 };

/// Bytes of one stored state element: 4 (fp32) or 2 (bf16).
KVB_HOST_DEVICE constexpr int state_elem_bytes(StateDtype d) { return d == StateDtype::bf16 ? 2 : 4; }

/// Head counts and head dims of one Gated DeltaNet layer (DESIGN.md section 2).
/// Value head h reads key head h / (heads_v / heads_qk). Qwen3-Next at TP1: 16, 32, 128, 128.
struct GdnShape {
  int heads_qk = 16;     ///< H: query/key heads
  int heads_v = 32;      ///< HV: value heads, a multiple of H
  int head_dim_k = 128;  ///< K
  int head_dim_v = 128;  ///< V

  KVB_HOST_DEVICE int group() const { return heads_v / heads_qk; }
  /// Value head h's key head, h / group(), by two float operations instead of two integer divisions (for a kernel's
  /// first instructions): (h + 1/2) H / HV lies at least 1 / (2 group()) from an integer, and the two correctly
  /// rounded operations err by at most 2^-23 of it, so truncation is exact for h < 2^22 (a kernel that uses it caps
  /// heads_v below that in its validation).
  KVB_HOST_DEVICE int key_head(int h) const {
    return static_cast<int>((float(h) + 0.5f) * (float(heads_qk) / float(heads_v)));
  }
  /// Elements of one request's state in one layer: HV * K * V.
  KVB_HOST_DEVICE int64_t state_elems() const { return int64_t(heads_v) * head_dim_k * head_dim_v; }
  /// Bytes of one request's state in one layer stored as `d` (Qwen3-Next: 2 MiB fp32, 1 MiB bf16).
  KVB_HOST_DEVICE int64_t state_bytes(StateDtype d = StateDtype::fp32) const {
    return state_elems() * state_elem_bytes(d);
  }
};

/// Memory order of each K x V state matrix. kv: [K][V], V contiguous (flash-linear-attention's default).
/// vk: [V][K], K contiguous (SGLang's newer pools). A layout is always named, never assumed (a mismatch silently gives garbage from the second token on).
enum class StateLayout : int { kv = 0, vk = 1 };

/// Element type of the output o. bf16 as served; fp32 for checking against the reference.
enum class OutputDtype : int { bf16 = 0, fp32 = 1 };

/// What a KVBuffer stores per entry (the CSV's buffer_form column). delta: raw bf16 key + fp32 corrected delta u_j +
/// fp32 log-decay g_j (kernels' KVBufferPool). raw: bf16 k, v, a, b (RawKVBufferPool).
enum class BufferForm : int { delta = 0, raw = 1 };

inline const char* to_string(StateLayout l) { return l == StateLayout::kv ? "kv" : "vk"; }
inline const char* to_string(OutputDtype d) { return d == OutputDtype::bf16 ? "bf16" : "fp32"; }
inline const char* to_string(BufferForm f) { return f == BufferForm::delta ? "delta" : "raw"; }
inline const char* to_string(StateDtype d) { return d == StateDtype::bf16 ? "bf16" : "fp32"; }

/// Checks a shape against what the kernels support; returns "" when valid, else a one-line reason naming the field
/// and the allowed values. Supported: head_dim_k in {32, 64, 128, 256}; head_dim_v a multiple of 4 in [4, 1024];
/// heads_qk >= 1; heads_v a positive multiple of heads_qk.
std::string validate_shape(const GdnShape& s);

}  // namespace kvb
