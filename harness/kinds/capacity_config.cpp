// `kvb capacity` settings: list parsing, the TOML config, validation and the table's rows (capacity_config.h).
#include "harness/kinds/capacity_config.h"
#include "harness/sweep/config.h"
#include "harness/sweep/input_file.h"
#include "harness/sweep/toml_parse.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "harness/sweep/experiment_kind.h"

namespace kvb::capacity {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string allowed_list(int lo, int hi) {
  return fmt::format("allowed: comma-separated distinct integers from {} to {}", lo, hi);
}

void check_list(const std::vector<int>& values, const std::string& flag, int lo, int hi) {
  if (values.empty()) throw UsageError(fmt::format("{}: empty list ({})", flag, allowed_list(lo, hi)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < lo || values[i] > hi)
      throw UsageError(fmt::format("{}: {} is out of range ({})", flag, values[i], allowed_list(lo, hi)));
    if (std::find(values.begin(), values.begin() + long(i), values[i]) != values.begin() + long(i))
      throw UsageError(fmt::format("{}: {} is listed twice ({})", flag, values[i], allowed_list(lo, hi)));
  }
}

constexpr int kAnyLow = -1000000000, kAnyHigh = 1000000000;  ///< what a config integer may hold at all

/// "allowed: a TOML integer from LO to HI, such as 8" (the example only where 8 is in range).
std::string allowed_integer(int lo, int hi) {
  return fmt::format("allowed: a TOML integer from {} to {}{}", lo, hi, lo <= 8 && 8 <= hi ? ", such as 8" : "");
}

/// An integer from lo to hi; UsageError naming `where` and the range otherwise (a float, a string, ...).
int toml_int(const toml::node& node, const std::string& where, int lo = kAnyLow, int hi = kAnyHigh) {
  auto i = node.as_integer();
  if (!i) throw UsageError(fmt::format("{} must be an integer ({})", where, allowed_integer(lo, hi)));
  const int64_t v = i->get();
  if (v < lo || v > hi)
    throw UsageError(fmt::format("{} = {} is out of range ({})", where, v, allowed_integer(lo, hi)));
  return int(v);
}

double toml_number(const toml::node& node, const std::string& where) {
  if (auto i = node.as_integer()) return double(i->get());
  if (auto f = node.as_floating_point()) return f->get();
  throw UsageError(fmt::format("{} must be a number", where));
}

constexpr const char* kAllowedDtypes = "allowed: comma-separated distinct values of fp32, bf16";

/// The dtype named `text` (fp32 or bf16); UsageError naming `where` and the allowed values otherwise.
StateDtype state_dtype_of(const std::string& text, const std::string& where) {
  if (text == "fp32") return StateDtype::fp32;
  if (text == "bf16") return StateDtype::bf16;
  throw UsageError(fmt::format("{}: '{}' is not a state dtype ({})", where, text, kAllowedDtypes));
}

void check_dtype_list(const std::vector<StateDtype>& values, const std::string& where) {
  if (values.empty()) throw UsageError(fmt::format("{}: empty list ({})", where, kAllowedDtypes));
  for (size_t i = 0; i < values.size(); ++i)
    if (std::find(values.begin(), values.begin() + long(i), values[i]) != values.begin() + long(i))
      throw UsageError(fmt::format("{}: {} is listed twice ({})", where, to_string(values[i]), kAllowedDtypes));
}

std::vector<int> toml_int_list(const toml::node& node, const std::string& where, int lo = kAnyLow,
                               int hi = kAnyHigh) {
  auto arr = node.as_array();
  if (!arr)
    throw UsageError(
        fmt::format("{} must be an integer or an array of integers ({})", where, allowed_integer(lo, hi)));
  std::vector<int> out;
  for (const toml::node& v : *arr) out.push_back(toml_int(v, where + " (each value)", lo, hi));
  return out;
}

}  // namespace

std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int lo, int hi) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::string t = trim(item);
    long long v = 0;
    if (!integer_text(t))
      throw UsageError(fmt::format("{}: '{}' is not an integer ({})", flag, shown_value(t), allowed_list(lo, hi)));
    if (!parse_integer(t, v) || v < lo || v > hi)
      throw UsageError(fmt::format("{}: {} is out of range ({})", flag, shown_value(t), allowed_list(lo, hi)));
    out.push_back(int(v));
  }
  if (!text.empty() && text.back() == ',')
    throw UsageError(fmt::format("{}: '' is not an integer ({})", flag, allowed_list(lo, hi)));
  check_list(out, flag, lo, hi);
  return out;
}

std::vector<StateDtype> parse_state_dtype_list(const std::string& text, const std::string& flag) {
  std::vector<StateDtype> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(state_dtype_of(trim(item), flag));
  if (!text.empty() && text.back() == ',') state_dtype_of("", flag);  // a trailing comma names an empty value
  check_dtype_list(out, flag);
  return out;
}

namespace {

/// The state_dtype axis: a string, or an array of strings, each fp32 or bf16, none repeated.
std::vector<StateDtype> toml_state_dtypes(const toml::node& node, const std::string& where) {
  std::vector<StateDtype> out;
  if (auto one = node.as_string()) {
    out.push_back(state_dtype_of(one->get(), where));
  } else if (auto arr = node.as_array()) {
    for (const toml::node& v : *arr) {
      auto str = v.as_string();
      if (!str) throw UsageError(fmt::format("{} (each value) must be a string ({})", where, kAllowedDtypes));
      out.push_back(state_dtype_of(str->get(), where));
    }
  } else {
    throw UsageError(fmt::format("{} must be a string or an array of strings ({})", where, kAllowedDtypes));
  }
  check_dtype_list(out, where);
  return out;
}

/// One value of a model axis, from lo to hi: an integer, or a list holding exactly one (a capacity table is of one
/// model).
int toml_single_int(const toml::node& node, const std::string& where, int lo, int hi) {
  if (node.is_integer()) return toml_int(node, where, lo, hi);
  const std::vector<int> values = toml_int_list(node, where, lo, hi);
  if (values.size() != 1)
    throw UsageError(fmt::format("{} holds {} values (allowed: one; a capacity table is of one model)", where,
                                 values.size()));
  return values[0];
}

/// An integer list axis of values from lo to hi; one integer stands for a list of one.
std::vector<int> toml_axis_ints(const toml::node& node, const std::string& where, int lo, int hi) {
  if (node.is_integer()) return {toml_int(node, where, lo, hi)};
  return toml_int_list(node, where, lo, hi);
}

}  // namespace

void apply_capacity_config(const std::string& toml_text, const std::string& origin, CapacitySettings& s) {
  const toml::table root = parse_toml(toml_text, origin);
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "timing" && !root.contains("capacity"))  // a sweep's config: say which command takes it
      throw UsageError(fmt::format("{}: a [timing] table, which sweep configs hold (allowed: kvb sweep --config {}; "
                                   "a capacity config holds experiment, axes, capacity)",
                                   origin, origin));
    if (k != "experiment" && k != "axes" && k != "capacity")
      throw UsageError(fmt::format("{}: unknown table '{}' (allowed: experiment, axes, capacity)", origin, k));
    if (!node.is_table()) throw UsageError(fmt::format("{}: '{}' must be a table", origin, k));
  }
  if (const toml::table* exp = root["experiment"].as_table()) {
    for (const auto& [key, node] : *exp) {
      const std::string k(key.str());
      if (k != "name" && k != "kind" && k != "description")
        throw UsageError(fmt::format("{}: unknown key 'experiment.{}' (allowed: name, kind, description)", origin, k));
      if (!node.is_string()) throw UsageError(fmt::format("{}: experiment.{} must be a string", origin, k));
      if (k == "name") check_experiment_name(node.as_string()->get(), origin);  // as a sweep config's
      if (k == "kind" && node.as_string()->get() != "capacity")
        throw UsageError(fmt::format("{}: experiment.kind = '{}' (allowed: capacity; `kvb sweep` runs the other kinds)",
                                     origin, node.as_string()->get()));
    }
  }
  if (const toml::table* axes = root["axes"].as_table()) {
    for (const auto& [key, node] : *axes) {
      const std::string k(key.str());
      const std::string where = fmt::format("{}: axes.{}", origin, k);
      // The flags' ranges (kvb capacity --help); the shape's own rules are checked below, with the model.
      if (k == "layers") s.model.layers = toml_single_int(node, where, 1, 10000);
      else if (k == "heads_qk") s.model.shape.heads_qk = toml_single_int(node, where, 1, 256);
      else if (k == "heads_v") s.model.shape.heads_v = toml_single_int(node, where, 1, 256);
      else if (k == "head_dim_k") s.model.shape.head_dim_k = toml_single_int(node, where, 32, 256);
      else if (k == "head_dim_v") s.model.shape.head_dim_v = toml_single_int(node, where, 4, 1024);
      else if (k == "buffer_size") {
        s.buffer_sizes = toml_axis_ints(node, where, 1, kMaxBufferEntries);
        check_list(s.buffer_sizes, where, 1, kMaxBufferEntries);
      } else if (k == "draft_tokens") {
        s.draft_tokens = toml_axis_ints(node, where, 1, kMaxDrafts);
        check_list(s.draft_tokens, where, 1, kMaxDrafts);
      } else if (k == "state_dtype") {
        s.state_dtypes = toml_state_dtypes(node, where);
      } else {
        throw UsageError(fmt::format(
            "{}: unknown axis 'axes.{}' (allowed: buffer_size, draft_tokens, state_dtype, layers, heads_qk, heads_v, "
            "head_dim_k, head_dim_v)",
            origin, k));
      }
    }
  }
  // The shape the config sets, checked as the file's (each value's range was, above; a flag given later is checked
  // again as the flag's).
  if (const toml::table* axes = root["axes"].as_table()) {
    const auto has = [&](const char* k) { return axes->contains(k); };
    if (has("heads_qk") || has("heads_v") || has("head_dim_k") || has("head_dim_v"))
      if (const std::string e = validate_shape(s.model.shape); !e.empty())
        throw UsageError(fmt::format("{}: axes: {}", origin, e));
  }
  const toml::table* cap = root["capacity"].as_table();
  if (!cap) return;
  for (const auto& [key, node] : *cap) {
    const std::string k(key.str());
    const std::string where = fmt::format("{}: capacity.{}", origin, k);
    if (k == "budget_gib") {
      s.budget_gib = toml_number(node, where);
      if (!(*s.budget_gib > 0)) throw UsageError(fmt::format("{} = {} must be > 0", where, *s.budget_gib));
    } else if (k == "reserve_gib") {
      s.reserve_gib = toml_number(node, where);
      if (!(s.reserve_gib >= 0)) throw UsageError(fmt::format("{} = {} must be >= 0", where, s.reserve_gib));
    } else if (k == "conv_state") {
      auto b = node.as_boolean();
      if (!b) throw UsageError(fmt::format("{} must be true or false", where));
      s.model.conv_state = b->get();
    } else if (k == "layers" || k == "heads_qk" || k == "heads_v" || k == "head_dim_k" || k == "head_dim_v" ||
               k == "buffer_sizes" || k == "draft_tokens" || k == "state_dtype" || k == "state_dtypes") {
      throw UsageError(fmt::format("{}: is an axis: write it under [axes] as {} = [...]", where,
                                   k == "buffer_sizes"   ? "buffer_size"
                                   : k == "state_dtypes" ? "state_dtype"
                                                         : k));
    } else {
      throw UsageError(fmt::format("{}: unknown key 'capacity.{}' (allowed: budget_gib, reserve_gib, conv_state)",
                                   origin, k));
    }
  }
}

void load_capacity_config(const std::string& path, CapacitySettings& settings) {
  apply_capacity_config(
      read_input_file(path, "--config", "a capacity config, a TOML file such as experiments/capacity.toml"), path,
      settings);
}

void validate_settings(const CapacitySettings& s) {
  if (auto e = validate_shape(s.model.shape); !e.empty())
    throw UsageError("--heads-qk/--heads-v/--head-dim-k/--head-dim-v: " + e);
  // The sweep axes' ranges: per-request bytes then stay far inside 64-bit arithmetic.
  if (s.model.shape.heads_qk > 256 || s.model.shape.heads_v > 256)
    throw UsageError(fmt::format("--heads-qk {} / --heads-v {}: out of range (allowed: 1 to 256)",
                                 s.model.shape.heads_qk, s.model.shape.heads_v));
  if (s.model.shape.head_dim_v > 1024)
    throw UsageError(fmt::format("--head-dim-v {}: out of range (allowed: 4 to 1024)", s.model.shape.head_dim_v));
  if (s.model.layers < 1 || s.model.layers > 10000)
    throw UsageError(fmt::format("--layers {}: out of range (allowed: 1 to 10000)", s.model.layers));
  check_list(s.buffer_sizes, "--buffer-sizes", 1, kMaxBufferEntries);
  check_list(s.draft_tokens, "--draft-tokens", 1, kMaxDrafts);
  check_dtype_list(s.state_dtypes, "--state-dtypes");
  const int b_max = *std::max_element(s.buffer_sizes.begin(), s.buffer_sizes.end());
  const int m_max = *std::max_element(s.draft_tokens.begin(), s.draft_tokens.end());
  if (b_max - 1 + m_max > kMaxBufferEntries)
    throw UsageError(fmt::format(
        "--buffer-sizes: B = {} with m = {} needs {} buffer entries (allowed: B - 1 + m <= {})", b_max, m_max,
        b_max - 1 + m_max, kMaxBufferEntries));
  if (s.budget_gib && !(*s.budget_gib > 0 && *s.budget_gib <= 1e6))
    throw UsageError(fmt::format("--budget-gib {}: allowed: a number of GiB in (0, 1e6]", *s.budget_gib));
  if (!(s.reserve_gib >= 0 && s.reserve_gib < 1e6))
    throw UsageError(fmt::format("--reserve-gib {}: allowed: a number of GiB in [0, 1e6)", s.reserve_gib));
}

std::vector<CapacityCase> capacity_cases(const CapacitySettings& s) {
  std::vector<CapacityCase> cases;
  for (StateDtype d : s.state_dtypes) {
    cases.push_back({Variant::recurrent_decode, 0, 0, d});
    for (int m : s.draft_tokens) cases.push_back({Variant::recurrent_verify, 0, m, d});
    for (int b : s.buffer_sizes) cases.push_back({Variant::kvbuffer_decode, b, 0, d});
    for (int b : s.buffer_sizes)
      for (int m : s.draft_tokens) cases.push_back({Variant::kvbuffer_verify, b, m, d});
  }
  return cases;
}

}  // namespace kvb::capacity
