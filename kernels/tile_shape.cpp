// Tile shapes of the launchers (gdn_params.h TileShape): their text form and each family's explicit tiles.
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/gdn_params.h"

namespace kvb {

std::string to_string(const TileShape& t) {
  return t.is_auto() ? "auto" : std::to_string(t.columns) + "x" + std::to_string(t.threads);
}

bool parse_tile(const std::string& text, TileShape& out) {
  if (text == "auto") {
    out = TileShape{};
    return true;
  }
  int columns = 0, threads = 0, used = 0;
  if (std::sscanf(text.c_str(), "%dx%d%n", &columns, &threads, &used) != 2 || used != int(text.size()) ||
      columns < 1 || threads < 1 || to_string(TileShape{columns, threads}) != text)
    return false;
  out = TileShape{columns, threads};
  return true;
}

const std::vector<TileShape>& recurrent_decode_tiles() {
  static const std::vector<TileShape> tiles{{32, 128}, {64, 256}, {128, 128}, {128, 256}, {128, 512}};
  return tiles;
}

const std::vector<TileShape>& kvbuffer_decode_tiles() {
  static const std::vector<TileShape> tiles{{32, 128}, {64, 128}, {64, 256}, {128, 128}, {128, 256}};
  return tiles;
}

const std::vector<TileShape>& recurrent_verify_tiles() {
  static const std::vector<TileShape> tiles{{64, 128}, {128, 256}, {128, 512}};
  return tiles;
}

const std::vector<TileShape>& kvbuffer_verify_tiles() {
  static const std::vector<TileShape> tiles{{64, 128}, {128, 256}};
  return tiles;
}

std::string validate_tile(const TileShape& tile, const std::vector<TileShape>& allowed, const GdnShape& shape,
                          const char* family) {
  if (tile.is_auto()) return "";
  std::string list = "auto";
  bool known = false;
  for (const TileShape& t : allowed) {
    list += ", " + to_string(t);
    known = known || t == tile;
  }
  if (!known) return "tile = " + to_string(tile) + " is not a tile of " + family + " (allowed: " + list + ")";
  if (shape.head_dim_k != 128)
    return "tile = " + to_string(tile) + ": " + family + " takes an explicit tile at head_dim_k = 128 only (allowed " +
           "at head_dim_k = " + std::to_string(shape.head_dim_k) + ": auto)";
  return "";
}

}  // namespace kvb
