// The check case of a peer point, written for the peer runner (peer_case.h).
#include "harness/workloads/peer_case.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "harness/workloads/check_support.h"
#include "harness/workloads/problem_setup.h"
#include "reference/gdn_reference.h"
#include "reference/qwen3_next_inputs.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the peer runner reads little-endian arrays");

namespace kvb {
namespace {

/// Writes `values` as `T` into folder/NAME.bin and records the tensor.
template <typename T>
void put(PeerDecodeCase& c, const std::string& folder, const std::string& name, const char* dtype,
         std::vector<int64_t> shape, const std::vector<double>& values) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != int64_t(values.size()))
    throw std::logic_error(fmt::format("peer case {}: {} values for {} elements", name, values.size(), n));
  std::vector<T> data(values.begin(), values.end());
  const std::string file = name + ".bin";
  const std::string path = (std::filesystem::path(folder) / file).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const bool ok = f && std::fwrite(data.data(), sizeof(T), data.size(), f) == data.size();
  if (f && std::fclose(f) != 0) throw std::runtime_error(fmt::format("{}: cannot write the peer case", path));
  if (!ok) throw std::runtime_error(fmt::format("{}: cannot write the peer case", path));
  c.tensors.push_back({name, file, dtype, std::move(shape)});
}

/// The concatenation of one field of every row.
std::vector<double> rows_of(const std::vector<ref::TokenRaw>& tokens, std::vector<double> ref::TokenRaw::*field) {
  std::vector<double> out;
  for (const auto& t : tokens) out.insert(out.end(), (t.*field).begin(), (t.*field).end());
  return out;
}

}  // namespace

std::vector<int> peer_check_rows(int batch) { return rows_to_check(batch, batch / 2); }

std::vector<int32_t> peer_slots(int batch, const std::vector<int>& check_rows, std::mt19937_64& rng) {
  std::vector<int32_t> slots = shuffled_slots(batch, rng);
  if (batch < 2) return slots;
  for (int r : check_rows)
    if (slots[size_t(r)] == r) std::swap(slots[size_t(r)], slots[size_t((r + 1) % batch)]);
  return slots;
}

PeerDecodeCase write_peer_decode_case(const GdnShape& s, int batch, uint64_t seed, const std::string& folder) {
  if (batch < 1) throw std::invalid_argument(fmt::format("peer case: batch = {} (allowed: 1 or more)", batch));
  if (const std::string bad = validate_shape(s); !bad.empty()) throw std::invalid_argument("peer case: " + bad);
  const int64_t N = batch, H = s.heads_qk, HV = s.heads_v, K = s.head_dim_k, V = s.head_dim_v;
  PeerDecodeCase c;
  c.check_rows = peer_check_rows(batch);
  const int64_t R = int64_t(c.check_rows.size());

  ref::Qwen3NextInputs draw(s, seed);
  const ref::GateParams gates = draw.gate_params();
  const std::vector<ref::TokenRaw> tokens = draw.tokens(batch);
  const std::vector<int32_t> slots = peer_slots(batch, c.check_rows, draw.rng());
  std::vector<double> states, ref_o, ref_states;
  for (int row : c.check_rows) {
    std::vector<double> state = draw.state();
    states.insert(states.end(), state.begin(), state.end());
    std::vector<double> o;
    ref::recurrent_decode(s, ref::prepare_token(s, tokens[size_t(row)], gates), state, o);
    ref_o.insert(ref_o.end(), o.begin(), o.end());
    ref_states.insert(ref_states.end(), state.begin(), state.end());
  }

  put<float>(c, folder, "q", "float32", {N, H, K}, rows_of(tokens, &ref::TokenRaw::q));
  put<float>(c, folder, "k", "float32", {N, H, K}, rows_of(tokens, &ref::TokenRaw::k));
  put<float>(c, folder, "v", "float32", {N, HV, V}, rows_of(tokens, &ref::TokenRaw::v));
  put<float>(c, folder, "a", "float32", {N, HV}, rows_of(tokens, &ref::TokenRaw::a));
  put<float>(c, folder, "b", "float32", {N, HV}, rows_of(tokens, &ref::TokenRaw::b));
  put<float>(c, folder, "A_log", "float32", {HV}, gates.A_log);
  put<float>(c, folder, "dt_bias", "float32", {HV}, gates.dt_bias);
  put<float>(c, folder, "scale", "float32", {1}, {gates.scale});
  put<int32_t>(c, folder, "slots", "int32", {N}, std::vector<double>(slots.begin(), slots.end()));
  put<float>(c, folder, "check_states", "float32", {R, HV, K, V}, states);
  put<double>(c, folder, "ref_o", "float64", {R, HV, V}, ref_o);
  put<double>(c, folder, "ref_states", "float64", {R, HV, K, V}, ref_states);
  return c;
}

}  // namespace kvb
