// TOML config loading, --set overrides and axis resolution (config.h).
#include "harness/sweep/config.h"
#include "harness/sweep/input_file.h"
#include "harness/sweep/toml_parse.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace kvb {
namespace {

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

/// One axis value as a string: integers and strings as written, floats in shortest form, booleans as true/false.
std::string value_to_string(const toml::node& node, const std::string& origin, const std::string& axis) {
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto f = node.as_floating_point()) return fmt::format("{}", f->get());
  if (auto b = node.as_boolean()) return b->get() ? "true" : "false";
  throw UsageError(fmt::format("{}:{}: axes.{}: values must be integers or strings (a list of the axis's values)", origin,
                               node.source().begin.line, axis));
}

void check_keys(const toml::table& table, const std::string& origin, const std::string& where,
                const std::vector<std::string>& allowed) {
  for (const auto& [key, node] : table) {
    const std::string k(key.str());
    bool known = false;
    for (const auto& a : allowed) known = known || a == k;
    if (!known)
      throw UsageError(fmt::format("{}: unknown key '{}{}' (allowed: {})", origin, where, k, join(allowed)));
  }
}

/// "ORIGIN:LINE: FIELD = VALUE" for a config value: its line in the file and the value (a number or a string as
/// written; an array, table, boolean or date by its type).
std::string field_value(const toml::node& node, const std::string& origin, const std::string& field) {
  std::string value;
  if (const auto* i = node.as_integer()) value = std::to_string(i->get());
  else if (const auto* f = node.as_floating_point()) value = fmt::format("{}", f->get());
  else if (const auto* t = node.as_string()) value = "'" + line_escaped(t->get()) + "'";  // one line
  else if (const auto* b = node.as_boolean()) value = b->get() ? "true" : "false";
  else if (node.is_array()) value = "an array";
  else if (node.is_table()) value = "a table";
  else value = "a date or time";
  return fmt::format("{}:{}: {} = {}", origin, node.source().begin.line, field, value);
}

std::string require_string(const toml::table& t, const char* key, const std::string& origin, bool required,
                           const std::string& fallback) {
  const toml::node* node = t.get(key);
  if (!node) {
    if (required) throw UsageError(fmt::format("{}: missing experiment.{} (a string)", origin, key));
    return fallback;
  }
  auto s = node->as_string();
  if (!s)
    throw UsageError(
        fmt::format("{} (allowed: a string)", field_value(*node, origin, std::string("experiment.") + key)));
  if (required && s->get().empty()) throw UsageError(fmt::format("{}: experiment.{} must not be empty", origin, key));
  return s->get();
}

double positive_number(const toml::node& node, const std::string& origin, const char* key) {
  double v = 0;
  if (auto i = node.as_integer()) v = double(i->get());
  else if (auto f = node.as_floating_point()) v = f->get();
  if (!(node.is_integer() || node.is_floating_point()) || !(v > 0) || !std::isfinite(v))
    throw UsageError(fmt::format("{} (allowed: a finite number > 0)",
                                 field_value(node, origin, std::string("timing.") + key)));
  return v;
}

}  // namespace

void check_experiment_name(const std::string& name, const std::string& origin) {
  if (name.empty()) throw UsageError(fmt::format("{}: experiment.name must not be empty", origin));
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      throw UsageError(fmt::format("{}: experiment.name = '{}' (allowed: letters, digits, '_', '-', '.')", origin,
                                   line_escaped(name)));
  // The name makes the default output's file name (results/NAME.shardK-of-N.csv): it stays within a file name.
  if (name.size() > kMaxExperimentName)
    throw UsageError(fmt::format("{}: experiment.name = '{}' has {} characters (allowed: at most {})", origin, name,
                                 name.size(), kMaxExperimentName));
}

toml::table parse_toml(const std::string& toml_text, const std::string& origin) {
  try {
    return toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    const std::string what(e.description());
    // toml++ refuses an integer past 64 bits while parsing (TOML requires it): say what a TOML integer may be.
    const char* allowed = what.find("not representable in 64 bits") != std::string::npos
                              ? " (allowed: TOML integers -9223372036854775808 to 9223372036854775807)"
                              : "";
    throw UsageError(fmt::format("{}:{}:{}: malformed TOML: {}{}", origin, where.line, where.column, what, allowed));
  }
}

SweepConfig parse_sweep_config(const std::string& toml_text, const std::string& origin) {
  const toml::table root = parse_toml(toml_text, origin);
  if (root.contains("capacity") && !root.contains("timing"))  // kvb capacity's config: say which command takes it
    throw UsageError(fmt::format("{}: a [capacity] table, which kvb capacity's configs hold (allowed: kvb capacity "
                                 "--config {}; a sweep config holds experiment, axes, timing)",
                                 origin, origin));
  check_keys(root, origin, "", {"experiment", "axes", "timing"});

  SweepConfig config;
  config.path = origin;
  const toml::table* exp = root["experiment"].as_table();
  if (!exp) throw UsageError(fmt::format("{}: missing [experiment] table with name = \"...\"", origin));
  check_keys(*exp, origin, "experiment.", {"name", "kind", "description", "out"});
  config.name = require_string(*exp, "name", origin, true, "");
  check_experiment_name(config.name, origin);
  config.kind = require_string(*exp, "kind", origin, false, "decode");
  config.description = require_string(*exp, "description", origin, false, "");
  if (const toml::node* out = exp->get("out")) {
    // A file path whose name is NAME.csv: no control character (a NUL would end the path the file system sees), a
    // name before .csv that is not hidden, and set when the key is given (the default is the key left out).
    config.out = require_string(*exp, "out", origin, false, "");
    const std::string file = std::filesystem::path(config.out).filename().string();
    const bool control = std::any_of(config.out.begin(), config.out.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (control || file.size() <= 4 || file[0] == '.' || file.compare(file.size() - 4, 4, ".csv") != 0)
      throw UsageError(fmt::format("{} (allowed: a file path whose name ends in .csv, such as results/{}.csv, "
                                   "without control characters)",
                                   field_value(*out, origin, "experiment.out"), config.name));
  }

  if (root.contains("axes")) {
    const toml::table* axes = root["axes"].as_table();
    if (!axes) throw UsageError(fmt::format("{}: axes must be a table of AXIS = [values]", origin));
    for (const auto& [key, node] : *axes) {
      const std::string axis(key.str());
      std::vector<std::string> values;
      if (const toml::array* arr = node.as_array()) {
        for (const auto& item : *arr) values.push_back(value_to_string(item, origin, axis));
      } else {
        values.push_back(value_to_string(node, origin, axis));
      }
      if (values.empty())
        throw UsageError(fmt::format("{}:{}: axes.{} is empty (give at least one value)", origin,
                                     node.source().begin.line, axis));
      config.axes.emplace_back(axis, std::move(values));
      config.axis_lines.push_back(int(node.source().begin.line));
    }
  }

  if (root.contains("timing")) {
    const toml::table* timing = root["timing"].as_table();
    if (!timing) throw UsageError(fmt::format("{}: timing must be a table", origin));
    check_keys(*timing, origin, "timing.", {"min_samples", "max_seconds_per_point", "target_noise_pct"});
    if (const toml::node* n = timing->get("min_samples")) {
      auto i = n->as_integer();
      if (!i || i->get() < 1 || i->get() > 1000000)
        throw UsageError(fmt::format("{} (allowed: an integer from 1 to 1000000)",
                                     field_value(*n, origin, "timing.min_samples")));
      config.timing.min_samples = int(i->get());
    }
    if (const toml::node* n = timing->get("max_seconds_per_point"))
      config.timing.max_seconds_per_point = positive_number(*n, origin, "max_seconds_per_point");
    if (const toml::node* n = timing->get("target_noise_pct"))
      config.timing.target_noise_pct = positive_number(*n, origin, "target_noise_pct");
  }
  return config;
}

SweepConfig load_sweep_config(const std::string& path) {
  return parse_sweep_config(
      read_input_file(path, "--config", "a sweep config, a TOML file such as experiments/decode_latency.toml"), path);
}

AxisValues parse_axis_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--set '{}': expected AXIS=V1,V2,...", text));
  AxisValues out{text.substr(0, eq), {}};
  const std::string list = text.substr(eq + 1);
  size_t start = 0;
  while (true) {
    const auto comma = list.find(',', start);
    std::string value = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto first = value.find_first_not_of(" \t");
    const auto last = value.find_last_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
    out.second.push_back(value);  // an empty value is refused by resolve_axes, which knows the allowed ones
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<AxisValues> resolve_axes(const ExperimentKind& kind, const SweepConfig& config,
                                     const std::vector<AxisValues>& overrides) {
  std::vector<std::string> known;
  for (const auto& spec : kind.axes) known.push_back(spec.name);
  auto index_of = [&](const std::string& axis, const std::string& where) {
    for (size_t i = 0; i < known.size(); ++i)
      if (known[i] == axis) return i;
    throw UsageError(fmt::format("{}: unknown axis '{}' for experiment kind {} (known axes: {})", where, axis,
                                 kind.name, join(known)));
  };

  std::vector<AxisValues> axes;
  for (const auto& spec : kind.axes) axes.emplace_back(spec.name, spec.defaults);
  std::vector<std::string> from(axes.size());  // where each axis's values came from, for the errors below
  for (size_t a = 0; a < config.axes.size(); ++a) {
    const auto& [axis, values] = config.axes[a];
    const size_t i = index_of(axis, config.path);
    axes[i].second = values;
    const int line = a < config.axis_lines.size() ? config.axis_lines[a] : 0;
    from[i] = config.path + (line > 0 ? ":" + std::to_string(line) : "") + ": [axes] ";
  }
  std::vector<std::string> overridden;
  for (const auto& [axis, values] : overrides) {
    if (std::find(overridden.begin(), overridden.end(), axis) != overridden.end())
      throw UsageError(fmt::format("--set {}: set twice (allowed: once per axis, values separated by commas)", axis));
    overridden.push_back(axis);
    const size_t i = index_of(axis, "--set");
    if (std::find(values.begin(), values.end(), "") != values.end()) {
      const std::string& allowed = kind.axes[i].check.allowed;
      throw UsageError(
          fmt::format("--set {}: empty value{}", axis, allowed.empty() ? "" : " (allowed: " + allowed + ")"));
    }
    axes[i].second = values;
    from[i] = "--set ";
  }

  for (size_t i = 0; i < axes.size(); ++i) {
    const auto& [axis, values] = axes[i];
    if (values.empty())
      throw UsageError(fmt::format("{}: axis {} has no values (give it in [axes] or with --set {}=...)", config.path,
                                   axis, axis));
    for (size_t v = 0; v < values.size(); ++v)
      if (std::find(values.begin(), values.begin() + v, values[v]) != values.begin() + v)
        throw UsageError(fmt::format("{}axis {} lists '{}' twice (allowed: each value once)", from[i], axis,
                                     values[v]));
    for (const auto& value : values)
      if (const std::string reason = kind.axes[i].refusal(value); !reason.empty()) throw UsageError(from[i] + reason);
    // One spelling per value, so that 64, 064 and +64 (or .7 and 0.7) are one point and resume finds it; two
    // spellings of one value are that value listed twice.
    std::vector<std::string> canonical;
    for (const auto& value : values) {
      canonical.push_back(canonical_axis_value(value));
      const auto first = std::find(canonical.begin(), canonical.end() - 1, canonical.back());
      if (first != canonical.end() - 1)
        throw UsageError(fmt::format("{}axis {} lists {} twice, as '{}' and '{}' (allowed: each value once)", from[i],
                                     axis, canonical.back(), shown_value(values[size_t(first - canonical.begin())]),
                                     shown_value(value)));
    }
    axes[i].second = canonical;
  }
  return axes;
}

namespace {

/// Whether `s` is a number in plain ASCII decimal: an optional sign, digits with an optional point (at least one
/// digit), an optional exponent. Nothing else (a word, a hex float, white space, a NUL) has another spelling.
bool decimal_text(const std::string& s) {
  const auto digit = [&](size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  size_t i = 0, digits = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  for (; digit(i); ++i) ++digits;
  if (i < s.size() && s[i] == '.')
    for (++i; digit(i); ++i) ++digits;
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == s.size();
}

}  // namespace

std::string canonical_axis_value(const std::string& value) {
  if (!decimal_text(value)) return value;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(value.c_str(), &end, 10);
  if (errno == 0 && end && *end == '\0') return std::to_string(i);
  errno = 0;
  const double d = std::strtod(value.c_str(), &end);
  if (errno == 0 && end && *end == '\0' && std::isfinite(d)) return fmt::format("{}", d);
  return value;
}

}  // namespace kvb
