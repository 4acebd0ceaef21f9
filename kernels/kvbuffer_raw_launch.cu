#include "kernels/kvbuffer_raw_launch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/launch_util.h"

namespace kvb {

std::string validate_raw_pool(const RawKVBufferPool& pool) {
  if (!pool.checkpoint || !pool.keys || !pool.values || !pool.gate_a || !pool.gate_b || !pool.fill)
    return "pool: checkpoint, keys, values, gate_a, gate_b and fill must be set";
  if (pool.num_slots < 1) return "pool.num_slots must be >= 1";
  if (pool.buffer_size < 1 || pool.buffer_size > kMaxRawBuffer)
    return "buffer_size = " + std::to_string(pool.buffer_size) + " is out of range for the raw form (allowed: 1 to " +
           std::to_string(kMaxRawBuffer) + ")";
  if (pool.capacity < std::max(pool.buffer_size - 1, 1) || pool.capacity > kMaxRawBuffer)
    return "pool.capacity = " + std::to_string(pool.capacity) + " must be in [max(buffer_size - 1, 1), " +
           std::to_string(kMaxRawBuffer) + "]";
  return "";
}

std::string validate_raw_inputs(const GdnShape& shape, const TokenInputs& in, int batch) {
  if (auto e = validate_shape(shape); !e.empty()) return e;
  if (shape.head_dim_v % 16 != 0)
    return "head_dim_v = " + std::to_string(shape.head_dim_v) + ": the raw form needs a multiple of 16";
  if (auto e = validate_inputs(in, batch); !e.empty()) return e;
  if (in.g || in.beta || !in.a || !in.b || !in.A_log || !in.dt_bias)
    return "gates: the raw form stores a and b, so set a, b, A_log and dt_bias (not prepared g or beta)";
  return "";
}

namespace {
int forced_width() {
  static const int value = [] {
    const char* s = std::getenv("KVB_RAW_TILE");
    const int vb = s ? std::atoi(s) : 0;
    return vb == 16 || vb == 32 || vb == 64 ? vb : 0;
  }();
  return value;
}
}  // namespace


int raw_slice_width(int batch, const GdnShape& shape) {
  const int V = shape.head_dim_v, widest = shape.head_dim_k >= 256 ? 32 : 64;
  if (const int f = forced_width(); f && f <= widest && V % f == 0) return f;
  int narrowest = 16;
  for (int vb = widest; vb >= 16; vb /= 2) {
    if (V % vb != 0) continue;
    if (int64_t(batch) * shape.heads_v * (V / vb) >= 4 * int64_t(sm_count())) return vb;
    narrowest = vb;
  }
  return narrowest;
}

}  // namespace kvb
