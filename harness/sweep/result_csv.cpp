// Validation of result CSVs (result_csv.h).
#include "harness/sweep/result_csv.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/sweep/entry_dtypes.h"
#include "harness/sweep/input_file.h"
#include "harness/sweep/table_keys.h"

namespace kvb {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// The schema's columns less the added-later ones `header` lacks: the header an older file of the kind has.
std::vector<std::string> expected_header(const CsvSchema& s, const std::vector<std::string>& header) {
  std::vector<std::string> kept;
  for (const auto& c : s.columns)
    if (!contains(s.added_later, c) || contains(header, c)) kept.push_back(c);
  return kept;
}

/// A decimal number as kvb and the figures both read it: optional sign, digits with an optional point, optional
/// exponent; no spaces, no "nan" or "inf" words.
bool is_decimal(const std::string& s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

/// Whether `s` ends with `end`.
bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

/// Whether `s` is a whole number written in decimal digits only (empty: true).
bool all_digits(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

/// The value of a number the rules accept, or NaN.
double decimal(const std::string& s) { return is_decimal(s) ? std::strtod(s.c_str(), nullptr) : std::nan(""); }

/// The latency groups of a schema: NAME_us_median with its NAME_us_p10 and NAME_us_p90.
std::vector<std::string> latency_groups(const CsvSchema& s) {
  std::vector<std::string> out;
  const std::string suffix = "_us_median";
  for (const auto& c : s.columns) {
    if (c.size() <= suffix.size() || !ends_with(c, suffix)) continue;
    const std::string name = c.substr(0, c.size() - suffix.size());
    if (contains(s.columns, name + "_us_p10") && contains(s.columns, name + "_us_p90")) out.push_back(name + "_us");
  }
  return out;
}

/// The schema that fits `header`; or a UsageError naming the first column that keeps the closest one from fitting.
const CsvSchema& match_header(const std::vector<std::string>& header, const std::vector<CsvSchema>& schemas,
                              const std::string& origin) {
  for (size_t i = 0; i < header.size(); ++i)
    if (std::find(header.begin(), header.begin() + long(i), header[i]) != header.begin() + long(i))
      throw UsageError(fmt::format("{}:1: column '{}' appears twice in the header", origin, header[i]));
  const CsvSchema* best = nullptr;
  size_t best_shared = 0;
  for (const CsvSchema& s : schemas) {
    if (expected_header(s, header) == header) return s;
    size_t shared = 0;
    for (const auto& c : header) shared += contains(s.columns, c);
    if (shared > best_shared) {
      best = &s;
      best_shared = shared;
    }
  }
  std::vector<std::string> kinds;
  for (const CsvSchema& s : schemas) kinds.push_back(s.kind);
  // kvb capacity's CSV (its own columns, harness/kinds/capacity_table.h): named as such, not as a stranger's file.
  if (contains(header, "bytes_per_request") && contains(header, "max_requests_model") && !contains(kinds, "capacity"))
    throw UsageError(fmt::format("{}:1: a CSV of kvb capacity, which this command does not read (allowed: a result "
                                 "CSV of kind {})",
                                 origin, fmt::join(kinds, ", ")));
  if (!best || 2 * best_shared < header.size())
    throw UsageError(fmt::format("{}:1: not a result CSV of kvb: its header fits none of the kinds {} (it starts "
                                 "'{}')",
                                 origin, fmt::join(kinds, ", "), header.empty() ? "" : header[0]));
  const std::string allowed = fmt::format("the header of a {} CSV: {}", best->kind, fmt::join(best->columns, ","));
  for (const auto& c : best->columns)
    if (!contains(header, c) && !contains(best->added_later, c))
      throw UsageError(fmt::format("{}:1: no column '{}' ({})", origin, c, allowed));
  for (const auto& c : header)
    if (!contains(best->columns, c))
      throw UsageError(fmt::format("{}:1: unknown column '{}' ({})", origin, c, allowed));
  const std::vector<std::string> want = expected_header(*best, header);
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] != want[i])
      throw UsageError(fmt::format("{}:1: column '{}' is out of place (column {} should be '{}'; {})", origin,
                                   header[i], i + 1, want[i], allowed));
  throw UsageError(fmt::format("{}:1: the header does not fit ({})", origin, allowed));
}

/// The columns that hold a size where set: a whole number >= 1.
const std::vector<std::string> kSizeColumns = {"batch",   "buffer_size", "draft_tokens", "layers",
                                               "heads_qk", "heads_v",    "head_dim_k",   "head_dim_v"};

/// True for a UTC time as the sweeps write it, YYYY-MM-DDTHH:MM:SSZ, that exists: any year 0000-9999, month 01-12,
/// day 01 to the month's length in the Gregorian calendar (29 February in a year divisible by 4 and not by 100, or by
/// 400), hour 00-23, minute and second 00-59 (no leap second: the sweeps write the clock's time, which has none).
bool utc_timestamp(const std::string& s) {
  static const std::string form = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != form.size()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (form[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != form[i]) return false;
  const auto field = [&](size_t at, size_t len) { return std::stoi(s.substr(at, len)); };
  const int year = field(0, 4), month = field(5, 2), day = field(8, 2);
  if (month < 1 || month > 12) return false;
  static const int kDaysInMonth[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  const int days = month == 2 && leap ? 29 : kDaysInMonth[month - 1];
  return day >= 1 && day <= days && field(11, 2) <= 23 && field(14, 2) <= 59 && field(17, 2) <= 59;
}

size_t index_of(const std::vector<std::string>& header, const std::string& name) {
  return size_t(std::find(header.begin(), header.end(), name) - header.begin());
}

/// index_of `name`, or npos where the header lacks it (an optional column: `column < row.size()` reads "present").
size_t optional_index(const std::vector<std::string>& header, const std::string& name) {
  const size_t i = index_of(header, name);
  return i < header.size() ? i : std::string::npos;
}

/// Where the first byte of `s` that does not begin a well-formed UTF-8 character is, npos when there is none: a byte
/// no character begins with, a lead byte without its continuation bytes, an overlong form (C0 AF for '/'), a
/// surrogate (ED A0 80) or a code point above U+10FFFF. The first byte Python's strict UTF-8 codec refuses.
size_t first_non_utf8(const std::string& s) {
  const auto at = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  for (size_t i = 0; i < s.size();) {
    const unsigned b = at(i);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the range of the byte after the lead byte
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b == 0xE0) len = 3, lo = 0xA0;
    else if (b == 0xED) len = 3, hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF) len = 3;
    else if (b == 0xF0) len = 4, lo = 0x90;
    else if (b == 0xF4) len = 4, hi = 0x8F;
    else if (b >= 0xF1 && b <= 0xF3) len = 4;
    else return i;
    if (at(i + 1) < lo || at(i + 1) > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (at(i + k) < 0x80 || at(i + k) > 0xBF) return i;
    i += len;
  }
  return std::string::npos;
}

/// Throws UsageError "ORIGIN:LINE: COLUMN holds a byte that is not UTF-8 text (...)" for the first header name or
/// cell of `t` that is not UTF-8, header first, then row by row, left to right.
void require_utf8(const CsvTable& t, const std::string& origin) {
  const auto refuse = [&](size_t line, const std::string& what, const std::string& text, size_t at,
                          const char* part) {
    throw UsageError(fmt::format("{}:{}: {} holds a byte that is not UTF-8 text (0x{:02X}, byte {} of the {}; "
                                 "allowed: UTF-8 text)",
                                 origin, line, what, static_cast<unsigned char>(text[at]), at + 1, part));
  };
  for (size_t c = 0; c < t.header.size(); ++c)
    if (const size_t at = first_non_utf8(t.header[c]); at != std::string::npos)
      refuse(1, fmt::format("the name of column {}", c + 1), t.header[c], at, "name");
  for (size_t r = 0; r < t.rows.size(); ++r)
    for (size_t c = 0; c < t.rows[r].size() && c < t.header.size(); ++c)
      if (const size_t at = first_non_utf8(t.rows[r][c]); at != std::string::npos)
        refuse(t.line(r), t.header[c], t.rows[r][c], at, "value");
}

}  // namespace

CsvSchema csv_schema(const ExperimentKind& kind) {
  CsvSchema s;
  s.kind = kind.name;
  s.columns = csv_columns(kind);
  s.key.push_back("experiment");
  for (const AxisSpec& a : kind.axes) {
    s.key.push_back(a.name);
    if (may_be_absent(a)) s.added_later.push_back(a.name);
  }
  for (const auto& c : kind.results_added_later) s.added_later.push_back(c);
  return s;
}

std::vector<CsvSchema> csv_schemas(const std::vector<ExperimentKind>& kinds) {
  std::vector<CsvSchema> out;
  for (const auto& k : kinds) out.push_back(csv_schema(k));
  return out;
}

const CsvSchema& validate_result_table(const CsvTable& t, const std::vector<CsvSchema>& schemas,
                                       const std::string& origin) {
  if (t.header.empty())
    throw UsageError(fmt::format("{}: empty file (allowed: a result CSV of kvb, its header first)", origin));
  require_utf8(t, origin);
  const CsvSchema& s = match_header(t.header, schemas, origin);
  const size_t status = index_of(t.header, "status"), gpu = index_of(t.header, "gpu");
  struct Group {
    std::string name;
    size_t median, p10, p90;
  };
  std::vector<Group> groups;
  for (const auto& g : latency_groups(s))
    groups.push_back({g, index_of(t.header, g + "_median"), index_of(t.header, g + "_p10"),
                      index_of(t.header, g + "_p90")});
  std::vector<size_t> counts, key, sizes, positives, non_negatives;
  for (const auto& c : s.counts)
    if (contains(t.header, c)) counts.push_back(index_of(t.header, c));
  // Sizes (whole numbers >= 1), floors, ratios to them and bandwidths (> 0), model bytes (>= 0), where set.
  for (size_t c = 0; c < t.header.size(); ++c) {
    const std::string& name = t.header[c];
    if (contains(kSizeColumns, name)) sizes.push_back(c);
    if (ends_with(name, "floor_us") || ends_with(name, "_over_floor") || ends_with(name, "_gbps"))
      positives.push_back(c);
    if (ends_with(name, "model_bytes") || ends_with(name, "model_read_bytes") || ends_with(name, "model_write_bytes"))
      non_negatives.push_back(c);
  }
  for (const auto& c : s.key)
    if (contains(t.header, c)) key.push_back(index_of(t.header, c));

  // Capacity CSVs: bytes_per_request and budget_bytes bound the request counts (npos in other kinds).
  const bool capacity = contains(t.header, "bytes_per_request") && contains(t.header, "budget_bytes");
  const size_t per_request = capacity ? index_of(t.header, "bytes_per_request") : std::string::npos,
               budget_col = capacity ? index_of(t.header, "budget_bytes") : std::string::npos;
  std::vector<size_t> request_counts;
  for (const char* c : {"max_requests_model", "max_requests_measured"})
    if (capacity && contains(t.header, c)) request_counts.push_back(index_of(t.header, c));
  // The stored states' element type, where the kind has the column (empty: a row written before it, fp32).
  const size_t state_dtype = optional_index(t.header, "state_dtype");
  const size_t timestamp = optional_index(t.header, "timestamp");
  // short_context: whether the point's request holds no state, as the sweep writes it.
  const size_t stateless = optional_index(t.header, "stateless");
  // What a KVBuffer row buffers per entry (entry_dtypes.h), from its variant and buffer form.
  const size_t entries = optional_index(t.header, "entry_dtypes"), variant_col = optional_index(t.header, "variant"),
               form_col = optional_index(t.header, "buffer_form"),
               delta_col = optional_index(t.header, "delta_dtype");
  std::map<std::string, size_t> first_line;  // point key -> line
  std::string first_gpu;
  size_t gpu_line = 0;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const size_t line = t.line(r);
    const bool ok = status < row.size() && row[status] == "ok";
    for (const Group& g : groups) {
      double v[3];
      const size_t cols[3] = {g.p10, g.median, g.p90};
      for (int i = 0; i < 3; ++i) {
        const std::string& text = row[cols[i]];
        v[i] = 0;
        if (text.empty()) {
          if (ok)
            throw UsageError(fmt::format("{}:{}: {} is empty in a row whose status is ok (allowed: a finite number "
                                         "of microseconds > 0)",
                                         origin, line, t.header[cols[i]]));
          continue;
        }
        v[i] = decimal(text);
        if (!(std::isfinite(v[i]) && v[i] > 0))
          throw UsageError(fmt::format("{}:{}: {} = '{}' (allowed: a finite number of microseconds > 0)", origin,
                                       line, t.header[cols[i]], text));
      }
      if (v[0] > 0 && v[1] > 0 && v[2] > 0 && !(v[0] <= v[1] && v[1] <= v[2]))
        throw UsageError(fmt::format("{}:{}: {}_p10 = {}, {}_median = {}, {}_p90 = {} (allowed: p10 <= median <= p90)",
                                     origin, line, g.name, row[g.p10], g.name, row[g.median], g.name, row[g.p90]));
    }
    for (size_t c : counts) {
      const std::string& text = row[c];
      if (!all_digits(text))
        throw UsageError(fmt::format("{}:{}: {} = '{}' (allowed: a whole number >= 0)", origin, line, t.header[c],
                                     text));
    }
    for (size_t c : sizes) {
      const std::string& text = row[c];
      if (!text.empty() && (!all_digits(text) || text.find_first_not_of('0') == std::string::npos))
        throw UsageError(fmt::format("{}:{}: {} = '{}' (allowed: a whole number >= 1)", origin, line, t.header[c],
                                     text));
    }
    for (size_t c : positives) {
      const double v = row[c].empty() ? 1.0 : decimal(row[c]);
      if (!(std::isfinite(v) && v > 0))
        throw UsageError(fmt::format("{}:{}: {} = '{}' (allowed: a finite number > 0)", origin, line, t.header[c],
                                     row[c]));
    }
    for (size_t c : non_negatives) {
      const double v = row[c].empty() ? 0.0 : decimal(row[c]);
      if (!(std::isfinite(v) && v >= 0))
        throw UsageError(fmt::format("{}:{}: {} = '{}' (allowed: a finite number >= 0)", origin, line, t.header[c],
                                     row[c]));
    }
    if (state_dtype < row.size() && !row[state_dtype].empty() && row[state_dtype] != "fp32" &&
        row[state_dtype] != "bf16")
      throw UsageError(fmt::format("{}:{}: state_dtype = '{}' (allowed: fp32, bf16, or empty for fp32)", origin, line,
                                   row[state_dtype]));
    if (stateless < row.size() && !row[stateless].empty() && row[stateless] != "true" && row[stateless] != "false")
      throw UsageError(fmt::format("{}:{}: stateless = '{}' (allowed: true or false; empty where the point failed)",
                                   origin, line, row[stateless]));
    const std::string delta = delta_col < row.size() ? row[delta_col] : "";
    // A delta_dtype the axis check refuses (validate_axis_values), or an empty one on a kvbuffer_verify row, is that
    // check's to report, not an entry_dtypes mismatch.
    const bool delta_unread = delta_col < row.size() && delta != "fp32" && delta != "bf16" &&
                              (!delta.empty() || (variant_col < row.size() && row[variant_col] == "kvbuffer_verify"));
    if (entries < row.size() && !row[entries].empty() && !delta_unread) {  // empty: a failed point, or an older row
      const std::string variant = variant_col < row.size() ? row[variant_col] : "";
      const std::string form = form_col < row.size() ? row[form_col] : "";
      const std::string expected = entry_dtypes_of(variant, form, delta);
      if (row[entries] != expected)
        throw UsageError(fmt::format("{}:{}: entry_dtypes = '{}' on a {} row{} (allowed: {}empty)", origin, line,
                                     row[entries], variant, form.empty() ? "" : " in the " + form + " form",
                                     expected.empty() ? "" : "'" + expected + "' or "));
    }
    if (timestamp < row.size() && !row[timestamp].empty() && !utc_timestamp(row[timestamp]))
      throw UsageError(fmt::format("{}:{}: timestamp = '{}' (allowed: a UTC time as YYYY-MM-DDTHH:MM:SSZ, or empty)",
                                   origin, line, row[timestamp]));
    if (ok && per_request < row.size() && !row[per_request].empty()) {  // capacity: the requests fit the budget
      const double each = decimal(row[per_request]), budget = decimal(row[budget_col]);
      if (!(std::isfinite(each) && each > 0))
        throw UsageError(fmt::format("{}:{}: bytes_per_request = '{}' (allowed: a number of bytes > 0)", origin,
                                     line, row[per_request]));
      for (size_t c : request_counts)
        if (!row[c].empty() && !row[budget_col].empty() && decimal(row[c]) * each > budget)
          throw UsageError(fmt::format("{}:{}: {} = {} requests of bytes_per_request = {} exceed budget_bytes = {} "
                                       "(allowed: requests x bytes_per_request <= budget_bytes)",
                                       origin, line, t.header[c], row[c], row[per_request], row[budget_col]));
    }
    // The point's key (point_key: its axis values in their one spelling, so that 64 and 064 are one point).
    std::string experiment, label;
    std::vector<std::string> axes;
    for (size_t c : key) {
      if (t.header[c] == "experiment") {
        experiment = row[c];
        continue;
      }
      axes.push_back(key_axis_value(t.header[c], row[c]));
      if (!row[c].empty()) label += (label.empty() ? "" : ",") + t.header[c] + '=' + row[c];
    }
    const std::string k = point_key(experiment, axes);
    const auto [it, fresh] = first_line.emplace(k, line);
    if (!fresh)
      throw UsageError(fmt::format("{}:{}: point {} is listed twice (first on line {}; allowed: one row per point)",
                                   origin, line, label, it->second));
    if (gpu < row.size() && !row[gpu].empty()) {
      if (first_gpu.empty()) {
        first_gpu = row[gpu];
        gpu_line = line;
      } else if (row[gpu] != first_gpu) {
        throw UsageError(fmt::format("{}:{}: gpu '{}' differs from '{}' on line {} (allowed: one GPU per file)",
                                     origin, line, row[gpu], first_gpu, gpu_line));
      }
    }
  }
  return s;
}

void validate_axis_values(const CsvTable& t, const ExperimentKind& kind, const std::string& origin) {
  const size_t variant = index_of(t.header, "variant");
  for (const AxisSpec& axis : kind.axes) {
    const size_t c = index_of(t.header, axis.name);
    if (c == t.header.size()) continue;  // a CSV written before the kind gained the axis
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const std::string& value = t.rows[r][c];
      // A sweep writes an axis's value where the axis matters for the row's variant (the variant always), and leaves
      // it empty elsewhere. (A CSV written before the kind gained an axis lacks its column: its rows read the
      // default.)
      if (axis.name == "variant" && value.empty())
        throw UsageError(fmt::format("{}:{}: variant is empty (allowed: {})", origin, t.line(r), axis.check.allowed));
      if (axis.name != "variant" && kind.applies && variant < t.header.size()) {
        const std::string& v = t.rows[r][variant];
        const bool applies = kind.applies(v, axis.name);
        if (!applies && !value.empty())
          throw UsageError(fmt::format("{}:{}: {} = '{}' on a {} row (allowed: empty; {} does not apply to {})", origin,
                                       t.line(r), axis.name, shown_value(value), v, axis.name, v));
        if (applies && value.empty())
          throw UsageError(fmt::format("{}:{}: {} is empty on a {} row (allowed: {})", origin, t.line(r), axis.name, v,
                                       axis.check.allowed));
      }
      if (value.empty()) continue;
      if (const std::string reason = axis.refusal(value); !reason.empty())
        throw UsageError(fmt::format("{}:{}: {}", origin, t.line(r), reason));
    }
  }
  // Each row's values together, as a sweep checks its points before it runs them (ExperimentKind::validate): a row
  // no sweep writes (bf16 deltas with fp32 states, say) is refused too. An axis the file lacks (added later) reads
  // as every reader reads it (RowKeyer), which is what merge writes and a resume keys.
  if (!kind.validate) return;
  std::vector<std::string> names;
  for (const AxisSpec& axis : kind.axes) names.push_back(axis.name);
  const RowKeyer keyer(t.header, names, origin, &kind);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    Point p;
    p.axes = keyer.axes(t.rows[r]);
    if (const std::string reason = kind.validate(p); !reason.empty())
      throw UsageError(fmt::format("{}:{}: {} (a point no sweep runs)", origin, t.line(r), reason));
  }
}

const ExperimentKind* validate_result_input(const CsvTable& table, const std::vector<CsvSchema>& schemas,
                                            const std::vector<ExperimentKind>& kinds, const std::string& origin) {
  validate_result_table(table, schemas, origin);
  const ExperimentKind* kind = csv_kind(table.header, kinds);
  if (kind) validate_axis_values(table, *kind, origin);
  return kind;
}

CsvTable read_result_csv(const std::string& path, const std::vector<CsvSchema>& schemas, const std::string& flag) {
  CsvTable t = parse_csv(read_input_file(path, flag, "a result CSV of kvb sweep or kvb capacity"), path);
  validate_result_table(t, schemas, path);
  return t;
}

}  // namespace kvb
