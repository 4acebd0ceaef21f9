#include "kernels/kvbuffer_raw_launch.h"

#include <algorithm>
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

const std::vector<TileShape>& raw_tiles() {
  static const std::vector<TileShape> tiles{{16, kThreadsRaw}, {32, kThreadsRaw}, {64, kThreadsRaw}};
  return tiles;
}

std::string validate_raw_tile(const TileShape& tile, const GdnShape& shape) {
  if (tile.is_auto()) return "";
  const int widest = shape.head_dim_k >= 256 ? 32 : 64;
  std::string list = "auto";
  for (const TileShape& t : raw_tiles())
    if (t.columns <= widest && shape.head_dim_v % t.columns == 0) list += ", " + to_string(t);
  const bool known = std::find(raw_tiles().begin(), raw_tiles().end(), tile) != raw_tiles().end();
  if (!known || tile.columns > widest || shape.head_dim_v % tile.columns != 0)
    return "tile = " + to_string(tile) + " is not a tile of the raw form at head_dim_k = " +
           std::to_string(shape.head_dim_k) + ", head_dim_v = " + std::to_string(shape.head_dim_v) + " (allowed: " +
           list + ")";
  return "";
}

int raw_slice_width(int batch, const GdnShape& shape, const TileShape& tile) {
  const int V = shape.head_dim_v, widest = shape.head_dim_k >= 256 ? 32 : 64;
  if (!tile.is_auto()) return tile.columns;
  int narrowest = 16;
  for (int vb = widest; vb >= 16; vb /= 2) {
    if (V % vb != 0) continue;
    if (int64_t(batch) * shape.heads_v * (V / vb) >= 4 * int64_t(sm_count())) return vb;
    narrowest = vb;
  }
  return narrowest;
}

}  // namespace kvb
