// Capacity rows: ratios, CSV and stdout table (capacity_table.h).
#include "harness/kinds/capacity_table.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/kinds/entry_dtypes.h"
#include "harness/sweep/csv.h"

namespace kvb::capacity {
namespace {

const CapacityRow* find_row(const std::vector<CapacityRow>& rows, Variant v, int b, int m, StateDtype d) {
  for (const CapacityRow& r : rows)
    if (r.plan.c.variant == v && r.plan.c.buffer_size == b && r.plan.c.draft_tokens == m && r.plan.c.state_dtype == d)
      return &r;
  return nullptr;
}

/// The recurrent row a row is compared with: same state dtype, and for verify the same m.
const CapacityRow* baseline_of(const std::vector<CapacityRow>& rows, const CapacityRow& row) {
  const StateDtype d = row.plan.c.state_dtype;
  return is_verify(row.plan.c.variant) ? find_row(rows, Variant::recurrent_verify, 0, row.plan.c.draft_tokens, d)
                                       : find_row(rows, Variant::recurrent_decode, 0, 0, d);
}

std::string ratio_text(const std::optional<double>& r, const char* suffix = "") {
  return r ? fmt::format("{:.2f}{}", *r, suffix) : "n/a";
}

double mib(int64_t bytes) { return double(bytes) / double(1 << 20); }

}  // namespace

int64_t credited_requests(const CapacityRow& row) {
  return row.max_requests_measured ? *row.max_requests_measured : row.max_requests_model;
}

void fill_ratios(std::vector<CapacityRow>& rows) {
  for (CapacityRow& row : rows) {
    row.ratio_to_recurrent.reset();
    const CapacityRow* base = baseline_of(rows, row);
    if (!base) continue;
    const bool measured = row.max_requests_measured && base->max_requests_measured;
    const int64_t num = measured ? *row.max_requests_measured : row.max_requests_model;
    const int64_t den = measured ? *base->max_requests_measured : base->max_requests_model;
    if (den > 0) row.ratio_to_recurrent = double(num) / double(den);
  }
}

const std::vector<std::string>& capacity_csv_columns() {
  static const std::vector<std::string> cols{
      "variant", "buffer_size", "draft_tokens", "state_dtype", "entry_dtypes", "budget_bytes", "bytes_per_request",
      "max_requests_model", "max_requests_measured", "status", "layers", "state_bytes", "intermediate_state_bytes",
      "buffer_bytes", "draft_bytes", "conv_state_bytes", "ratio_to_recurrent", "buffer_entries", "io_bytes_per_request",
      "fixed_bytes", "conv_state_counted", "heads_qk", "heads_v", "head_dim_k", "head_dim_v", "gpu", "timestamp"};
  return cols;
}

CsvSchema capacity_csv_schema() {
  CsvSchema s;
  s.kind = "capacity";
  s.columns = capacity_csv_columns();
  s.key = {"variant", "buffer_size", "draft_tokens", "state_dtype"};
  s.added_later = {"state_dtype", "entry_dtypes"};  // older CSVs may lack them (rows without state_dtype: fp32)
  s.counts = {"budget_bytes", "max_requests_model", "max_requests_measured"};
  return s;
}

std::string format_capacity_csv(const std::vector<CapacityRow>& rows, const std::string& gpu,
                                const std::string& timestamp) {
  CsvTable t;
  t.header = capacity_csv_columns();
  for (const CapacityRow& r : rows) {
    const CapacityPlan& p = r.plan;
    const RequestBytes& b = p.per_request;
    const GdnShape& s = p.model.shape;
    t.rows.push_back({to_string(p.c.variant),
                      is_kvbuffer(p.c.variant) ? std::to_string(p.c.buffer_size) : "",
                      is_verify(p.c.variant) ? std::to_string(p.c.draft_tokens) : "",
                      to_string(p.c.state_dtype),
                      entry_dtypes(to_string(p.c.variant), BufferForm::delta),  // the form the model counts
                      std::to_string(r.budget_bytes),
                      std::to_string(b.total),
                      std::to_string(r.max_requests_model),
                      r.max_requests_measured ? std::to_string(*r.max_requests_measured) : "",
                      r.status,
                      std::to_string(p.model.layers),
                      std::to_string(b.state),
                      std::to_string(b.intermediate_state),
                      std::to_string(b.buffer),
                      std::to_string(b.draft),
                      std::to_string(b.conv_state),
                      r.ratio_to_recurrent ? fmt::format("{:.4f}", *r.ratio_to_recurrent) : "",
                      std::to_string(p.buffer_entries),
                      std::to_string(b.io),
                      std::to_string(fixed_bytes(p)),
                      p.model.conv_state ? "true" : "false",
                      std::to_string(s.heads_qk),
                      std::to_string(s.heads_v),
                      std::to_string(s.head_dim_k),
                      std::to_string(s.head_dim_v),
                      gpu,
                      timestamp});
  }
  return format_csv(t);
}

std::string format_capacity_table(const std::vector<CapacityRow>& rows) {
  std::string out = fmt::format("{:<17} {:>3} {:>2} {:>5} {:>9} {:>9} {:>8} {:>8} {:>10} {:>9} {:>9} {:>7}  {}\n",
                                "variant", "B", "m", "dtype", "state", "interm.", "buffer", "draft", "MiB/req", "model",
                                "measured", "ratio", "status");
  for (const CapacityRow& r : rows) {
    const CapacityPlan& p = r.plan;
    const RequestBytes& b = p.per_request;
    out += fmt::format(
        "{:<17} {:>3} {:>2} {:>5} {:>9.2f} {:>9.2f} {:>8.2f} {:>8.2f} {:>10.3f} {:>9} {:>9} {:>7}  {}\n",
        to_string(p.c.variant), is_kvbuffer(p.c.variant) ? std::to_string(p.c.buffer_size) : "-",
        is_verify(p.c.variant) ? std::to_string(p.c.draft_tokens) : "-", to_string(p.c.state_dtype), mib(b.state),
        mib(b.intermediate_state), mib(b.buffer), mib(b.draft), mib(b.total), r.max_requests_model,
        r.max_requests_measured ? std::to_string(*r.max_requests_measured) : "-", ratio_text(r.ratio_to_recurrent, "x"),
        r.status);
  }
  // Ratio grids, one per state dtype (each over the recurrent rows of that dtype): B down; decode, then one column
  // per m.
  std::vector<StateDtype> dtypes;
  std::vector<int> bs, ms;
  for (const CapacityRow& r : rows) {
    if (!is_kvbuffer(r.plan.c.variant)) continue;
    if (std::find(dtypes.begin(), dtypes.end(), r.plan.c.state_dtype) == dtypes.end())
      dtypes.push_back(r.plan.c.state_dtype);
    if (std::find(bs.begin(), bs.end(), r.plan.c.buffer_size) == bs.end()) bs.push_back(r.plan.c.buffer_size);
    if (r.plan.c.variant == Variant::kvbuffer_verify &&
        std::find(ms.begin(), ms.end(), r.plan.c.draft_tokens) == ms.end())
      ms.push_back(r.plan.c.draft_tokens);
  }
  for (const StateDtype d : dtypes) {
    out += fmt::format(
        "\nKVBuffer / recurrent requests, {} states (decode: over recurrent_decode; m drafts: over recurrent_verify "
        "with m; both {})\n",
        to_string(d), to_string(d));
    out += fmt::format("{:>5} {:>8}", "B", "decode");
    for (int m : ms) out += fmt::format(" {:>8}", fmt::format("m={}", m));
    out += "\n";
    for (int b : bs) {
      const CapacityRow* dr = find_row(rows, Variant::kvbuffer_decode, b, 0, d);
      out += fmt::format("{:>5} {:>8}", b, dr ? ratio_text(dr->ratio_to_recurrent, "x") : "n/a");
      for (int m : ms) {
        const CapacityRow* v = find_row(rows, Variant::kvbuffer_verify, b, m, d);
        out += fmt::format(" {:>8}", v ? ratio_text(v->ratio_to_recurrent, "x") : "n/a");
      }
      out += "\n";
    }
  }
  return out;
}

std::string claim_check_line(const std::vector<CapacityRow>& rows, StateDtype dtype) {
  auto at = [&](int b) {
    const CapacityRow* r = find_row(rows, Variant::kvbuffer_verify, b, 4, dtype);
    return r ? ratio_text(r->ratio_to_recurrent, "x") : std::string("n/a");
  };
  return fmt::format("4 drafts, {} states: KVBuffer/recurrent = {} at B = 4, {} at B = 8{}", to_string(dtype), at(4),
                     at(8), dtype == StateDtype::fp32 ? " (paper: 5x)" : "");
}

std::string target_check_line(const std::vector<CapacityRow>& rows, double target) {
  std::vector<std::string> met, missed;
  for (const CapacityRow& r : rows) {
    if (r.plan.c.variant != Variant::kvbuffer_verify || r.plan.c.draft_tokens != 4 || r.plan.c.buffer_size > 8 ||
        r.plan.c.state_dtype != StateDtype::fp32)
      continue;
    (r.ratio_to_recurrent && *r.ratio_to_recurrent >= target ? met : missed)
        .push_back(std::to_string(r.plan.c.buffer_size));
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  const std::string head = fmt::format("{}x target with 4 drafts, B <= 8, fp32 states:", target);
  if (met.empty() && missed.empty()) return head + " no such rows";
  std::string line = head;
  if (!met.empty()) line += " met at B = " + join(met) + (missed.empty() ? "" : ";");
  if (!missed.empty()) line += " not met at B = " + join(missed);
  return line;
}

}  // namespace kvb::capacity
