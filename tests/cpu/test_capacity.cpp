// Serving capacity (harness/kinds/capacity_*): per-request bytes against hand-computed values for two shapes and both
// state dtypes, the budget's capacity with allocator granules, ratios (within one state dtype), the CSV, the config
// and flags, and `kvb capacity` end to end without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "cli_runner.h"
#include "harness/kinds/capacity_config.h"
#include "harness/kinds/capacity_model.h"
#include "harness/kinds/capacity_table.h"
#include "harness/measure/device_info.h"
#include "harness/sweep/config.h"
#include "harness/sweep/csv.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/result_csv.h"
#include "test_sweep_support.h"

namespace kvb::capacity {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kGiB = int64_t(1) << 30;

ModelShape qwen3_next() { return ModelShape{}; }  // H 16, HV 32, K 128, V 128, 36 layers

/// H = 2, HV = 4, K = 32, V = 64, 3 layers.
ModelShape small_model() {
  ModelShape m;
  m.shape.heads_qk = 2;
  m.shape.heads_v = 4;
  m.shape.head_dim_k = 32;
  m.shape.head_dim_v = 64;
  m.layers = 3;
  return m;
}

// Qwen3-Next, by hand: |S| = 32*128*128*4 = 2097152; entry = 16*128*2 + 32*128*4 + 32*4 = 4096 + 16384 + 128 = 20608;
// conv window = 3 * (2*16*128 + 32*128) * 2 = 49152.
TEST(CapacityModel, Qwen3NextBytesPerRequest) {
  const ModelShape m = qwen3_next();
  EXPECT_EQ(entry_bytes(m.shape), 20608);
  EXPECT_EQ(conv_state_bytes(m.shape), 49152);

  const CapacityPlan rd = make_plan({Variant::recurrent_decode, 0, 0}, m);
  EXPECT_EQ(rd.per_layer.total, 2097152);
  EXPECT_EQ(rd.per_request.total, 75497472);  // 36 * 2 MiB = 72 MiB
  EXPECT_EQ(rd.per_request.conv_state, 1769472);  // reported, not counted
  EXPECT_EQ(rd.buffer_entries, 0);

  const CapacityPlan rv = make_plan({Variant::recurrent_verify, 0, 4}, m);
  EXPECT_EQ(rv.per_request.state, 75497472);
  EXPECT_EQ(rv.per_request.intermediate_state, 301989888);  // 4 * 72 MiB
  EXPECT_EQ(rv.per_request.total, 377487360);               // 5 states: 360 MiB

  const CapacityPlan kd4 = make_plan({Variant::kvbuffer_decode, 4, 0}, m);
  EXPECT_EQ(kd4.buffer_entries, 3);                         // B - 1: a slot never holds B entries
  EXPECT_EQ(kd4.per_layer.total, 2158976);                  // 2097152 + 3 * 20608
  EXPECT_EQ(kd4.per_request.buffer, 36 * 61824 + 4);        // entries, plus the fill index once
  EXPECT_EQ(kd4.per_request.total, 77723140);

  const CapacityPlan kv4 = make_plan({Variant::kvbuffer_verify, 4, 4}, m);
  EXPECT_EQ(kv4.buffer_entries, 7);                         // B - 1 + m: the drafts' entries follow B - 1 entries
  EXPECT_EQ(kv4.per_layer.buffer, 144256);                  // 7 * 20608
  EXPECT_EQ(kv4.per_layer.draft, 0);                        // nothing kept from verify until accept
  EXPECT_EQ(kv4.per_layer.total, 2241408);
  EXPECT_EQ(kv4.per_request.total, 80690756);               // 36 * 2241408 + fill 4 + arrival counters 16 * 4

  const CapacityPlan kv8 = make_plan({Variant::kvbuffer_verify, 8, 4}, m);
  EXPECT_EQ(kv8.buffer_entries, 11);
  EXPECT_EQ(kv8.per_layer.total, 2323840);                  // 2097152 + 11 * 20608
  EXPECT_EQ(kv8.per_request.total, 83658308);

  // One step's inputs and output per request: verify with 4 tokens, q and k 4*16*128*2 each, v 4*32*128*2, a and b
  // 4*32*2 each, o 4*32*128*2, slot 4.
  EXPECT_EQ(kv4.per_request.io, 16384 * 2 + 32768 + 512 + 32768 + 4);
  EXPECT_EQ(rv.per_request.io, 16384 * 2 + 32768 + 512 + 32768 + 4);
  EXPECT_EQ(fixed_bytes(rv), 2 * 36 * 32 * 4);  // A_log and dt_bias of 36 layers
}

// Small shape, by hand: |S| = 4*32*64*4 = 32768; entry = 2*32*2 + 4*64*4 + 4*4 = 128 + 1024 + 16 = 1168;
// conv window = 3 * (2*2*32 + 4*64) * 2 = 2304.
TEST(CapacityModel, SmallShapeBytesPerRequest) {
  ModelShape m = small_model();
  EXPECT_EQ(entry_bytes(m.shape), 1168);
  EXPECT_EQ(conv_state_bytes(m.shape), 2304);
  EXPECT_EQ(make_plan({Variant::recurrent_decode, 0, 0}, m).per_request.total, 98304);
  EXPECT_EQ(make_plan({Variant::recurrent_verify, 0, 2}, m).per_request.total, 294912);
  EXPECT_EQ(make_plan({Variant::kvbuffer_decode, 3, 0}, m).per_request.total, 3 * (32768 + 2 * 1168) + 4);

  const CapacityPlan kv = make_plan({Variant::kvbuffer_verify, 3, 2}, m);
  EXPECT_EQ(kv.per_request.state, 98304);
  EXPECT_EQ(kv.per_request.buffer, 3 * 4 * 1168 + 4 + 2 * 4);  // B - 1 + m = 4 entries, fill, 2 arrival counters
  EXPECT_EQ(kv.per_request.draft, 0);
  EXPECT_EQ(kv.per_request.total, 112332);
  EXPECT_EQ(kv.per_request.io, 2 * (2 * 2 * 32 * 2) + 2 * 4 * 64 * 2 + 2 * 2 * 4 * 2 + 2 * 4 * 64 * 2 + 4);

  // Counting the conv state adds one window per layer to every variant.
  m.conv_state = true;
  const CapacityPlan kvc = make_plan({Variant::kvbuffer_verify, 3, 2}, m);
  EXPECT_EQ(kvc.per_request.conv_state, 3 * 2304);
  EXPECT_EQ(kvc.per_request.total, 112332 + 3 * 2304);
  EXPECT_EQ(make_plan({Variant::recurrent_decode, 0, 0}, m).per_request.total, 98304 + 3 * 2304);
}

// Qwen3-Next with bf16 states, from the formula: what is stored of a state (the recurrent state, recurrent verify's m
// intermediate states, the KVBuffer checkpoint) takes 2 bytes an element instead of 4; buffered entries (bf16 keys,
// fp32 deltas, fp32 log-decays), the fill index, the arrival counters, the conv window and the step's inputs do not
// change.
TEST(CapacityModel, Qwen3NextBf16StatesHalveOnlyTheStoredStates) {
  const ModelShape m = qwen3_next();
  const int64_t layers = 36, elems = int64_t(32) * 128 * 128;  // HV * K * V per layer
  const int64_t entry = 16 * 128 * 2 + 32 * 128 * 4 + 32 * 4;   // bf16 key, fp32 delta, fp32 log-decay
  const int64_t arrivals = 16 * 4;                              // verify: one counter per key head, once
  for (const StateDtype d : {StateDtype::fp32, StateDtype::bf16}) {
    SCOPED_TRACE(to_string(d));
    const int64_t elem = d == StateDtype::bf16 ? 2 : 4;
    const int64_t state = layers * elems * elem;  // bf16: 36*32*128*128*2 = 37748736
    EXPECT_EQ(state, d == StateDtype::bf16 ? 37748736 : 75497472);

    const CapacityPlan rd = make_plan({Variant::recurrent_decode, 0, 0, d}, m);
    EXPECT_EQ(rd.c.state_dtype, d);
    EXPECT_EQ(rd.per_layer.state, elems * elem);
    EXPECT_EQ(rd.per_request.state, state);
    EXPECT_EQ(rd.per_request.total, state);
    EXPECT_EQ(rd.per_request.conv_state, layers * 3 * (2 * 16 * 128 + 32 * 128) * 2);
    for (const int drafts : {1, 4, 8}) {
      const CapacityPlan rv = make_plan({Variant::recurrent_verify, 0, drafts, d}, m);
      EXPECT_EQ(rv.per_request.state, state);
      EXPECT_EQ(rv.per_request.intermediate_state, drafts * state);  // the m-state scratch pool
      EXPECT_EQ(rv.per_request.total, (1 + drafts) * state);
    }
    for (const int b : {1, 4, 16}) {
      const CapacityPlan kd = make_plan({Variant::kvbuffer_decode, b, 0, d}, m);
      EXPECT_EQ(kd.per_request.state, state);  // the checkpoint
      EXPECT_EQ(kd.per_request.buffer, layers * std::max(b - 1, 1) * entry + 4);
      EXPECT_EQ(kd.per_request.total, state + layers * std::max(b - 1, 1) * entry + 4);
      for (const int drafts : {1, 4, 8}) {
        const CapacityPlan kv = make_plan({Variant::kvbuffer_verify, b, drafts, d}, m);
        EXPECT_EQ(kv.per_request.state, state);
        EXPECT_EQ(kv.per_request.intermediate_state, 0);
        EXPECT_EQ(kv.per_request.draft, 0);
        EXPECT_EQ(kv.per_request.buffer, layers * (b - 1 + drafts) * entry + 4 + arrivals);
        EXPECT_EQ(kv.per_request.total, state + layers * (b - 1 + drafts) * entry + 4 + arrivals);
      }
    }
  }
  // bf16 saves exactly half of what is stored of states, and nothing else.
  const auto saved = [&](const CapacityCase& c) {
    CapacityCase bf = c;
    bf.state_dtype = StateDtype::bf16;
    const CapacityPlan p32 = make_plan(c, m), p16 = make_plan(bf, m);
    EXPECT_EQ(p32.per_request.io, p16.per_request.io);
    EXPECT_EQ(fixed_bytes(p32), fixed_bytes(p16));
    EXPECT_EQ(p32.buffer_entries, p16.buffer_entries);
    return p32.per_request.total - p16.per_request.total;
  };
  const int64_t half = 36 * elems * 2;
  EXPECT_EQ(saved({Variant::recurrent_decode, 0, 0}), half);
  EXPECT_EQ(saved({Variant::recurrent_verify, 0, 4}), 5 * half);
  EXPECT_EQ(saved({Variant::kvbuffer_decode, 8, 0}), half);
  EXPECT_EQ(saved({Variant::kvbuffer_verify, 8, 4}), half);
  // The pool arrays the probe allocates: state, scratch and checkpoint at 2 bytes an element.
  for (const PoolArray& a : make_plan({Variant::recurrent_verify, 0, 4, StateDtype::bf16}, m).arrays)
    EXPECT_EQ(a.bytes_per_request, (a.name == "scratch" ? 4 : 1) * elems * 2) << a.name;
  for (const PoolArray& a : make_plan({Variant::kvbuffer_decode, 4, 0, StateDtype::bf16}, m).arrays) {
    if (a.name == "checkpoint") {
      EXPECT_EQ(a.bytes_per_request, elems * 2);
    }
  }
}

TEST(CapacityModel, MaxRequestsWithGranules) {
  // Qwen3-Next, 2 layers, recurrent decode, 2 GiB: 4 MiB of headroom leave 2044 MiB; the workspace (gate
  // parameters, slot, q, k, v, a, b, o) takes 12 MiB at 508 requests (12552192 bytes) and 509 (12577280), and each
  // request 2 layers * 2 MiB: 12 + 4 * 508 = 2044 fits, 12 + 4 * 509 = 2048 does not.
  ModelShape m;
  m.layers = 2;
  const CapacityPlan p = make_plan({Variant::recurrent_decode, 0, 0}, m);
  EXPECT_EQ(workspace_bytes(p, 508), 12552192);
  EXPECT_EQ(workspace_bytes(p, 509), 12577280);
  EXPECT_EQ(footprint_bytes(p, 508), 2044 * kMiB);
  EXPECT_EQ(max_requests(p, 2 * kGiB), 508);

  // Without granules or headroom the capacity is the plain quotient, up to the workspace's 256-byte alignment.
  for (const Variant v : {Variant::recurrent_verify, Variant::kvbuffer_verify}) {
    const CapacityPlan q = make_plan({v, 4, 4}, qwen3_next());
    const int64_t budget = 80 * kGiB;
    const int64_t n = max_requests(q, budget, 1, 0);
    const int64_t quotient = (budget - fixed_bytes(q)) / (q.per_request.total + q.per_request.io);
    EXPECT_LE(footprint_bytes(q, n, 1), budget);
    EXPECT_GT(footprint_bytes(q, n + 1, 1), budget);
    EXPECT_LE(n, quotient);
    EXPECT_GE(n, quotient - 1);
  }
  EXPECT_EQ(max_requests(p, 1 * kMiB), 0);
}

TEST(CapacityModel, RejectsCasesTheKernelsDoNotTake) {
  const ModelShape m = qwen3_next();
  EXPECT_NE(validate_case({Variant::kvbuffer_decode, 0, 0}, m), "");
  EXPECT_NE(validate_case({Variant::kvbuffer_verify, 4, 9}, m), "");
  EXPECT_NE(validate_case({Variant::kvbuffer_verify, 256, 2}, m), "");
  EXPECT_EQ(validate_case({Variant::kvbuffer_verify, 256, 1}, m), "");
  EXPECT_THROW(make_plan({Variant::recurrent_verify, 0, 0}, m), std::invalid_argument);
}

std::vector<CapacityRow> rows_for(const CapacitySettings& s, int64_t budget) {
  std::vector<CapacityRow> rows;
  for (const CapacityCase& c : capacity_cases(s)) {
    CapacityRow r;
    r.plan = make_plan(c, s.model);
    r.budget_bytes = budget;
    r.max_requests_model = max_requests(r.plan, budget);
    r.status = kStatusNoGpu;
    rows.push_back(r);
  }
  fill_ratios(rows);
  return rows;
}

const CapacityRow& find(const std::vector<CapacityRow>& rows, Variant v, int b, int m,
                        StateDtype d = StateDtype::fp32) {
  for (const CapacityRow& r : rows)
    if (r.plan.c.variant == v && r.plan.c.buffer_size == b && r.plan.c.draft_tokens == m && r.plan.c.state_dtype == d)
      return r;
  throw std::out_of_range("no such row");
}

/// Column `name` of `t`'s header; fails the test when it has none.
size_t col(const CsvTable& t, const std::string& name) {
  const auto it = std::find(t.header.begin(), t.header.end(), name);
  EXPECT_NE(it, t.header.end()) << name;
  return size_t(it - t.header.begin());
}

TEST(CapacityTable, RatiosAgainstTheRecurrentRowWithTheSameDrafts) {
  CapacitySettings s;
  std::vector<CapacityRow> rows = rows_for(s, 80 * kGiB);
  ASSERT_EQ(rows.size(), 2 * (1u + 4u + 5u + 20u));  // fp32 and bf16
  const CapacityRow& rd = find(rows, Variant::recurrent_decode, 0, 0);
  const CapacityRow& rv4 = find(rows, Variant::recurrent_verify, 0, 4);
  const CapacityRow& kv44 = find(rows, Variant::kvbuffer_verify, 4, 4);
  const CapacityRow& kd8 = find(rows, Variant::kvbuffer_decode, 8, 0);
  // 80 GiB less 4 MiB over 360 MiB (+ io) per request: 227; over 76.95 MiB (+ io, 2 MiB granules): 1061.
  EXPECT_EQ(rv4.max_requests_model, 227);
  EXPECT_EQ(kv44.max_requests_model, 1061);
  EXPECT_DOUBLE_EQ(*kv44.ratio_to_recurrent, 1061.0 / 227.0);
  EXPECT_DOUBLE_EQ(*kd8.ratio_to_recurrent, double(kd8.max_requests_model) / double(rd.max_requests_model));
  EXPECT_DOUBLE_EQ(*rv4.ratio_to_recurrent, 1.0);
  // Measured values are used once both rows have them.
  rows[0].max_requests_measured = 1000;
  for (CapacityRow& r : rows)
    if (r.plan.c.variant == Variant::kvbuffer_decode && r.plan.c.buffer_size == 8) r.max_requests_measured = 900;
  fill_ratios(rows);
  EXPECT_DOUBLE_EQ(*find(rows, Variant::kvbuffer_decode, 8, 0).ratio_to_recurrent, 0.9);

  const std::vector<CapacityRow> model_rows = rows_for(s, 80 * kGiB);
  const double at8 = double(find(model_rows, Variant::kvbuffer_verify, 8, 4).max_requests_model) / 227.0;
  EXPECT_EQ(claim_check_line(model_rows),
            fmt::format("4 drafts, fp32 states: KVBuffer/recurrent = 4.67x at B = 4, {:.2f}x at B = 8 (paper: 5x)",
                        at8));
  const std::string target = target_check_line(model_rows);
  EXPECT_NE(target.find("met at B = 1, 2, 4, 8"), std::string::npos) << target;
  EXPECT_EQ(target.find("not met"), std::string::npos) << target;
}

// Each ratio is over the recurrent row of the same state dtype: bf16 KVBuffer over bf16 recurrent, never over fp32.
TEST(CapacityTable, RatiosCompareWithinOneStateDtype) {
  CapacitySettings s;
  const std::vector<CapacityRow> rows = rows_for(s, 80 * kGiB);
  for (const StateDtype d : {StateDtype::fp32, StateDtype::bf16}) {
    SCOPED_TRACE(to_string(d));
    const CapacityRow& rd = find(rows, Variant::recurrent_decode, 0, 0, d);
    EXPECT_DOUBLE_EQ(*rd.ratio_to_recurrent, 1.0);
    for (const int b : s.buffer_sizes) {
      const CapacityRow& kd = find(rows, Variant::kvbuffer_decode, b, 0, d);
      EXPECT_DOUBLE_EQ(*kd.ratio_to_recurrent, double(kd.max_requests_model) / double(rd.max_requests_model));
      for (const int m : s.draft_tokens) {
        const CapacityRow& rv = find(rows, Variant::recurrent_verify, 0, m, d);
        const CapacityRow& kv = find(rows, Variant::kvbuffer_verify, b, m, d);
        EXPECT_DOUBLE_EQ(*kv.ratio_to_recurrent, double(kv.max_requests_model) / double(rv.max_requests_model));
      }
    }
  }
  // bf16 holds about twice the recurrent requests; KVBuffer's fp32 entries then weigh more against its halved
  // checkpoint, so its bf16 ratio is the lower one.
  const CapacityRow& rd32 = find(rows, Variant::recurrent_decode, 0, 0);
  const CapacityRow& rd16 = find(rows, Variant::recurrent_decode, 0, 0, StateDtype::bf16);
  EXPECT_NEAR(double(rd16.max_requests_model) / double(rd32.max_requests_model), 2.0, 0.01);
  EXPECT_LT(*find(rows, Variant::kvbuffer_verify, 4, 4, StateDtype::bf16).ratio_to_recurrent,
            *find(rows, Variant::kvbuffer_verify, 4, 4).ratio_to_recurrent);

  // KVBuffer bf16 rows with only fp32 recurrent rows beside them have no baseline, hence no ratio.
  std::vector<CapacityRow> mixed;
  for (const CapacityRow& r : rows)
    if (is_kvbuffer(r.plan.c.variant) == (r.plan.c.state_dtype == StateDtype::bf16)) mixed.push_back(r);
  fill_ratios(mixed);
  for (const CapacityRow& r : mixed)
    EXPECT_EQ(r.ratio_to_recurrent.has_value(), !is_kvbuffer(r.plan.c.variant)) << to_string(r.plan.c.variant);

  // The claim line of each dtype reads its own rows; the paper's 5x is named on the fp32 line only, and the target
  // is checked on the fp32 rows only.
  const std::string bf16_line = claim_check_line(rows, StateDtype::bf16);
  EXPECT_EQ(bf16_line, fmt::format("4 drafts, bf16 states: KVBuffer/recurrent = {:.2f}x at B = 4, {:.2f}x at B = 8",
                                   *find(rows, Variant::kvbuffer_verify, 4, 4, StateDtype::bf16).ratio_to_recurrent,
                                   *find(rows, Variant::kvbuffer_verify, 8, 4, StateDtype::bf16).ratio_to_recurrent));
  CapacitySettings only_fp32;
  only_fp32.state_dtypes = {StateDtype::fp32};
  EXPECT_EQ(target_check_line(rows), target_check_line(rows_for(only_fp32, 80 * kGiB)));
  CapacitySettings only_bf16;
  only_bf16.state_dtypes = {StateDtype::bf16};
  EXPECT_EQ(target_check_line(rows_for(only_bf16, 80 * kGiB)),
            "4.5x target with 4 drafts, B <= 8, fp32 states: no such rows");
  const std::string table = format_capacity_table(rows);
  EXPECT_NE(table.find("KVBuffer / recurrent requests, fp32 states"), std::string::npos) << table;
  EXPECT_NE(table.find("KVBuffer / recurrent requests, bf16 states"), std::string::npos) << table;
}

TEST(CapacityTable, CsvColumnsAndEmptyAxes) {
  CapacitySettings s;
  s.buffer_sizes = {4};
  s.draft_tokens = {4};
  const CsvTable t = parse_csv(format_capacity_csv(rows_for(s, 80 * kGiB), "", "2026-01-01T00:00:00Z"), "capacity");
  const std::vector<std::string> first{"variant",           "buffer_size",        "draft_tokens",
                                       "state_dtype",       "entry_dtypes",       "budget_bytes",
                                       "bytes_per_request", "max_requests_model", "max_requests_measured",
                                       "status"};
  ASSERT_GE(t.header.size(), first.size());
  EXPECT_EQ(std::vector<std::string>(t.header.begin(), t.header.begin() + 10), first);
  EXPECT_EQ(t.header.back(), "timestamp");
  ASSERT_EQ(t.rows.size(), 8u);  // 4 fp32 rows, then the same 4 with bf16 states
  EXPECT_EQ(t.rows[0][0], "recurrent_decode");
  EXPECT_EQ(t.rows[0][1], "");
  EXPECT_EQ(t.rows[0][2], "");
  EXPECT_EQ(t.rows[0][3], "fp32");
  EXPECT_EQ(t.rows[1][2], "4");
  EXPECT_EQ(t.rows[3][0], "kvbuffer_verify");
  EXPECT_EQ(t.rows[3][6], "80690756");  // B = 4, m = 4: 36 * (2097152 + (3 + 4) * 20608) + 4 + 16 * 4
  EXPECT_EQ(t.rows[3][8], "");
  EXPECT_EQ(t.rows[3][9], "model only (no GPU)");
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.rows[4 + i][0], t.rows[i][0]);
    EXPECT_EQ(t.rows[4 + i][3], "bf16");
  }
  EXPECT_EQ(t.rows[7][6], std::to_string(36 * (1048576 + 7 * 20608) + 4 + 16 * 4));  // B = 4, m = 4, bf16 state
  // The buffered entries' types: the delta form's on KVBuffer rows whatever the state dtype, none on recurrent rows.
  const std::map<std::string, std::string> entries{{"recurrent_decode", ""},
                                                   {"recurrent_verify", ""},
                                                   {"kvbuffer_decode", "k=bf16 u=fp32 g=fp32"},
                                                   {"kvbuffer_verify", "k=bf16 u=fp32 g=fp32"}};
  for (const auto& row : t.rows) EXPECT_EQ(row[4], entries.at(row[0])) << row[0] << " " << row[3];
  // The table passes the shared validation, fp32 and bf16 rows of one variant being distinct points.
  EXPECT_EQ(validate_result_table(t, {capacity_csv_schema()}, "capacity").kind, "capacity");
}

/// `t` less its column `name`.
CsvTable without_column(CsvTable t, const std::string& name) {
  const size_t at = col(t, name);
  t.header.erase(t.header.begin() + long(at));
  for (auto& row : t.rows) row.erase(row.begin() + long(at));
  return t;
}

// A capacity CSV written before the state_dtype column (results/capacity.csv of 31b363a, which predates entry_dtypes
// too) is still a capacity CSV.
TEST(CapacityTable, CsvWithoutStateDtypeIsStillValid) {
  CapacitySettings s;
  s.buffer_sizes = {4};
  s.draft_tokens = {4};
  s.state_dtypes = {StateDtype::fp32};
  const CsvTable t = without_column(
      without_column(parse_csv(format_capacity_csv(rows_for(s, 80 * kGiB), "", "2026-01-01T00:00:00Z"), "capacity"),
                     "entry_dtypes"),
      "state_dtype");
  EXPECT_EQ(validate_result_table(t, {capacity_csv_schema()}, "old.csv").kind, "capacity");
  EXPECT_NO_THROW(read_result_csv(std::string(KVB_SOURCE_DIR) + "/results/capacity.csv", {capacity_csv_schema()}));
}

// entry_dtypes follows state_dtype; a capacity CSV written before it (the committed results/capacity.csv) still
// validates, and one that holds it elsewhere is refused naming it.
TEST(CapacityTable, EntryDtypesFollowsStateDtypeAndMayBeAbsent) {
  const std::vector<std::string>& cols = capacity_csv_columns();
  const auto at = std::find(cols.begin(), cols.end(), "entry_dtypes");
  ASSERT_NE(at, cols.end());
  ASSERT_NE(at, cols.begin());
  EXPECT_EQ(*(at - 1), "state_dtype");
  EXPECT_EQ(capacity_csv_schema().added_later, (std::vector<std::string>{"state_dtype", "entry_dtypes"}));

  CapacitySettings s;
  s.buffer_sizes = {4};
  s.draft_tokens = {4};
  const CsvTable with = parse_csv(format_capacity_csv(rows_for(s, 80 * kGiB), "", "2026-01-01T00:00:00Z"), "new");
  EXPECT_EQ(validate_result_table(with, {capacity_csv_schema()}, "new.csv").kind, "capacity");
  const CsvTable older = without_column(with, "entry_dtypes");
  EXPECT_EQ(older.header[3], "state_dtype");
  EXPECT_EQ(older.header[4], "budget_bytes");
  EXPECT_EQ(validate_result_table(older, {capacity_csv_schema()}, "older.csv").kind, "capacity");
  const CsvTable committed = read_csv_file(std::string(KVB_SOURCE_DIR) + "/results/capacity.csv");
  EXPECT_EQ(std::find(committed.header.begin(), committed.header.end(), "entry_dtypes"), committed.header.end());
  EXPECT_NO_THROW(read_result_csv(std::string(KVB_SOURCE_DIR) + "/results/capacity.csv", {capacity_csv_schema()}));

  CsvTable moved = with;  // entry_dtypes swapped with budget_bytes
  std::swap(moved.header[4], moved.header[5]);
  for (auto& row : moved.rows) std::swap(row[4], row[5]);
  try {
    validate_result_table(moved, {capacity_csv_schema()}, "moved.csv");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("moved.csv:1: column 'budget_bytes' is out of place (column 5 should be "
                                         "'entry_dtypes'"),
              std::string::npos)
        << e.what();
  }
}

TEST(CapacityConfig, ListsAndToml) {
  EXPECT_EQ(parse_int_list("1, 2,8", "--draft-tokens", 1, 8), (std::vector<int>{1, 2, 8}));
  for (const char* bad : {"", "1,,2", "1,", "x", "0", "9", "2,2", "1.5"}) {
    try {
      parse_int_list(bad, "--draft-tokens", 1, 8);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--draft-tokens"), std::string::npos) << e.what();
    }
  }
  CapacitySettings s;
  load_capacity_config(std::string(KVB_SOURCE_DIR) + "/experiments/capacity.toml", s);
  EXPECT_EQ(s.buffer_sizes, (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(s.draft_tokens, (std::vector<int>{1, 2, 3, 4, 6, 8}));
  EXPECT_EQ(s.model.layers, 36);
  EXPECT_EQ(s.model.shape.heads_v, 32);
  EXPECT_FALSE(s.model.conv_state);
  EXPECT_FALSE(s.budget_gib.has_value());
  EXPECT_EQ(s.state_dtypes, (std::vector<StateDtype>{StateDtype::fp32, StateDtype::bf16}));
  EXPECT_EQ(capacity_cases(s).size(), 2 * (1u + 6u + 5u + 30u));

  CapacitySettings t;
  EXPECT_THROW(apply_capacity_config("[axes]\nbufer_size = [1]\n", "x.toml", t), UsageError);
  EXPECT_THROW(apply_capacity_config("[axes]\ndraft_tokens = [1, 9]\n", "x.toml", t), UsageError);
  EXPECT_THROW(apply_capacity_config("[axes]\nlayers = \"36\"\n", "x.toml", t), UsageError);
  EXPECT_THROW(apply_capacity_config("[axes]\nlayers = [36, 48]\n", "x.toml", t), UsageError);  // one model
  EXPECT_THROW(apply_capacity_config("[capacity\n", "x.toml", t), UsageError);
  EXPECT_THROW(apply_capacity_config("[experiment]\nkind = \"decode\"\n", "x.toml", t), UsageError);
  // The settings table of the old dialect names the axis that replaced its key.
  try {
    apply_capacity_config("[capacity]\nbuffer_sizes = [1, 2]\n", "x.toml", t);
    ADD_FAILURE() << "accepted capacity.buffer_sizes";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("[axes] as buffer_size"), std::string::npos) << e.what();
  }
  apply_capacity_config("[axes]\nbuffer_size = 4\ndraft_tokens = [2, 4]\nlayers = 48\n", "x.toml", t);
  EXPECT_EQ(t.buffer_sizes, (std::vector<int>{4}));
  EXPECT_EQ(t.draft_tokens, (std::vector<int>{2, 4}));
  EXPECT_EQ(t.model.layers, 48);
  apply_capacity_config("[capacity]\nbudget_gib = 80\nconv_state = true\n", "x.toml", t);
  EXPECT_DOUBLE_EQ(*t.budget_gib, 80.0);
  EXPECT_TRUE(t.model.conv_state);
}

/// The message of the UsageError `f` throws; "" (and a test failure) when it throws none.
template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

TEST(CapacityConfig, TheFileIsNamedForItsOwnFaultsAndASweepConfigIsCalledSo) {
  const auto apply = [](const std::string& text) {
    CapacitySettings t;  // each file from the defaults
    apply_capacity_config(text, "x.toml", t);
  };
  EXPECT_EQ(refusal([&] { apply("[axes]\nhead_dim_k = [100]\n"); }),
            "x.toml: axes: head_dim_k = 100 is not supported (allowed: 32, 64, 128, 256)");
  EXPECT_EQ(refusal([&] { apply("[axes]\nheads_qk = 512\nheads_v = 512\n"); }),
            "x.toml: axes.heads_qk = 512 is out of range (allowed: a TOML integer from 1 to 256, such as 8)");
  EXPECT_EQ(refusal([&] { apply("[axes]\nlayers = 0\n"); }),
            "x.toml: axes.layers = 0 is out of range (allowed: a TOML integer from 1 to 10000, such as 8)");
  EXPECT_EQ(refusal([&] { apply("[axes]\nheads_v = 24\n"); }),
            "x.toml: axes: heads_v = 24 must be a positive multiple of heads_qk = 16");
  EXPECT_EQ(refusal([&] { apply("[experiment]\nname = \"\"\n"); }), "x.toml: experiment.name must not be empty");
  EXPECT_NE(refusal([&] { apply("[experiment]\nname = \"" + std::string(201, 'n') + "\"\n"); })
                .find("' has 201 characters (allowed: at most 200)"),
            std::string::npos);
  // A file holding both tables is no one command's: the unknown table is named, not another command.
  EXPECT_EQ(refusal([&] { apply("[capacity]\nbudget_gib = 8\n[timing]\nmin_samples = 3\n"); }),
            "x.toml: unknown table 'timing' (allowed: experiment, axes, capacity)");
  EXPECT_EQ(refusal([&] { apply("[experiment]\nname = \"a/b\"\n"); }),
            "x.toml: experiment.name = 'a/b' (allowed: letters, digits, '_', '-', '.')");
  EXPECT_EQ(refusal([&] { apply("[timing]\nmin_samples = 3\n"); }),
            "x.toml: a [timing] table, which sweep configs hold (allowed: kvb sweep --config x.toml; a capacity "
            "config holds experiment, axes, capacity)");
  EXPECT_EQ(refusal([] { parse_sweep_config("[experiment]\nname = \"c\"\n[capacity]\nbudget_gib = 8\n", "c.toml"); }),
            "c.toml: a [capacity] table, which kvb capacity's configs hold (allowed: kvb capacity --config c.toml; a "
            "sweep config holds experiment, axes, timing)");
}

// A config value that is no integer, or past what a config value may hold, is refused naming what is allowed.
TEST(CapacityConfig, AValueThatIsNoIntegerNamesWhatIsAllowed) {
  // Each names the axis's own range (a list axis's values) or what a config integer may hold (the model's axes,
  // whose ranges are checked with the model).
  for (const auto& [bad, allowed] : std::vector<std::pair<std::string, std::string>>{
           {"buffer_size = [\"4\"]", "(allowed: a TOML integer from 1 to 256, such as 8)"},
           {"buffer_size = [4.0]", "(allowed: a TOML integer from 1 to 256, such as 8)"},
           {"buffer_size = [9223372036854775807]", "(allowed: a TOML integer from 1 to 256, such as 8)"},
           {"draft_tokens = 9", "(allowed: a TOML integer from 1 to 8, such as 8)"},
           {"layers = 1.5", "(allowed: a TOML integer from 1 to 10000, such as 8)"},
           {"head_dim_k = [4000000000]", "(allowed: a TOML integer from 32 to 256)"}}) {
    SCOPED_TRACE(bad);
    CapacitySettings t;
    const std::string e = refusal([&] { apply_capacity_config("[axes]\n" + bad + "\n", "x.toml", t); });
    EXPECT_NE(e.find(allowed), std::string::npos) << e;
  }
}

TEST(CapacityConfig, StateDtypesFromFlagAndToml) {
  using D = StateDtype;
  EXPECT_EQ(CapacitySettings{}.state_dtypes, (std::vector<D>{D::fp32, D::bf16}));
  EXPECT_EQ(parse_state_dtype_list("fp32,bf16", "--state-dtypes"), (std::vector<D>{D::fp32, D::bf16}));
  EXPECT_EQ(parse_state_dtype_list(" bf16 , fp32", "--state-dtypes"), (std::vector<D>{D::bf16, D::fp32}));
  EXPECT_EQ(parse_state_dtype_list("bf16", "--state-dtypes"), (std::vector<D>{D::bf16}));
  for (const char* bad : {"", "fp16", "FP32", "fp32,fp32", "fp32,", ",bf16", "fp32,,bf16", "float"}) {
    SCOPED_TRACE(bad);
    const std::string e = refusal([&] { parse_state_dtype_list(bad, "--state-dtypes"); });
    EXPECT_EQ(e.rfind("--state-dtypes: ", 0), 0u) << e;
    EXPECT_NE(e.find("(allowed: comma-separated distinct values of fp32, bf16)"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_NE(refusal([] { parse_state_dtype_list("fp16", "--state-dtypes"); }).find("'fp16' is not a state dtype"),
            std::string::npos);
  EXPECT_NE(refusal([] { parse_state_dtype_list("bf16,bf16", "--state-dtypes"); }).find("bf16 is listed twice"),
            std::string::npos);

  CapacitySettings t;
  apply_capacity_config("[axes]\nstate_dtype = [\"bf16\", \"fp32\"]\n", "x.toml", t);
  EXPECT_EQ(t.state_dtypes, (std::vector<D>{D::bf16, D::fp32}));
  apply_capacity_config("[axes]\nstate_dtype = \"bf16\"\n", "x.toml", t);
  EXPECT_EQ(t.state_dtypes, (std::vector<D>{D::bf16}));
  EXPECT_EQ(capacity_cases(t).size(), 1u + 4u + 5u + 20u);
  for (const CapacityCase& c : capacity_cases(t)) EXPECT_EQ(c.state_dtype, D::bf16);
  for (const char* bad : {"state_dtype = [\"fp16\"]", "state_dtype = []", "state_dtype = [\"fp32\", \"fp32\"]",
                          "state_dtype = 32", "state_dtype = [1]"}) {
    SCOPED_TRACE(bad);
    CapacitySettings u;
    const std::string e = refusal([&] { apply_capacity_config(std::string("[axes]\n") + bad + "\n", "x.toml", u); });
    EXPECT_EQ(e.rfind("x.toml: axes.state_dtype", 0), 0u) << e;
    EXPECT_NE(e.find("fp32, bf16"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(u.state_dtypes, CapacitySettings{}.state_dtypes);
  }
  EXPECT_NE(refusal([] {
              CapacitySettings u;
              apply_capacity_config("[capacity]\nstate_dtype = [\"bf16\"]\n", "x.toml", u);
            }).find("[axes] as state_dtype"),
            std::string::npos);
  EXPECT_NE(refusal([] {
              CapacitySettings u;
              apply_capacity_config("[axes]\nstate_dtypes = [\"bf16\"]\n", "x.toml", u);
            }).find("allowed: buffer_size, draft_tokens, state_dtype,"),
            std::string::npos);
  CapacitySettings empty;
  empty.state_dtypes.clear();
  EXPECT_NE(refusal([&] { validate_settings(empty); }).find("--state-dtypes: empty list"), std::string::npos);

  // Rows: every variant row once per dtype, in blocks of the listed order.
  CapacitySettings s;
  s.buffer_sizes = {4, 8};
  s.draft_tokens = {2, 4};
  s.state_dtypes = {D::bf16, D::fp32};
  const std::vector<CapacityCase> cases = capacity_cases(s);
  ASSERT_EQ(cases.size(), 2 * (1u + 2u + 2u + 4u));
  for (size_t i = 0; i < cases.size() / 2; ++i) {
    const CapacityCase& a = cases[i];
    const CapacityCase& b = cases[i + cases.size() / 2];
    EXPECT_EQ(a.state_dtype, D::bf16);
    EXPECT_EQ(b.state_dtype, D::fp32);
    EXPECT_EQ(a.variant, b.variant);
    EXPECT_EQ(a.buffer_size, b.buffer_size);
    EXPECT_EQ(a.draft_tokens, b.draft_tokens);
  }
}

// ---- `kvb capacity` end to end ----

using test::count_lines;
using test::Result;
using test::run_kvb;
using test::TempDir;

TEST(CapacityCli, BadInputExits2WithOneLineAndNoCsv) {
  TempDir dir;
  const std::string out = " --out '" + dir.file("results/capacity.csv") + "'";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--budget-gib 80 --buffer-sizes 1,x", "--buffer-sizes"},
      {"--budget-gib 80 --buffer-sizes 0", "--buffer-sizes"},
      {"--budget-gib 80 --draft-tokens 9", "--draft-tokens"},
      {"--budget-gib 80 --draft-tokens 2,2", "--draft-tokens"},
      {"--budget-gib 80 --draft-tokens ''", "--draft-tokens"},
      {"--budget-gib 0", "--budget-gib"},
      {"--budget-gib -3", "--budget-gib"},
      {"--budget-gib 1000001", "--budget-gib"},
      {"--budget-gib 80 --layers 0", "--layers"},
      {"--budget-gib 80 --heads-v 24", "--heads-v"},
      {"--budget-gib 80 --config '" + dir.file("absent.toml") + "'", "absent.toml"},
      {"--budget-gib 80 --config ''", "--config: empty value (allowed: a TOML file such as experiments/capacity.toml)"},
      {"--budget-gib ''", "--budget-gib: '' is not a finite number (allowed: a number of GiB > 0 and <= 1e+06)"},
      {"--budget-gib 80 --reserve-gib 1e7", "--reserve-gib: 1e7 is out of range (allowed: a number of GiB >= 0"},
      {"--budget-gib 80 --layers abc", "--layers: 'abc' is not an integer (allowed: integers 1 to 10000)"},
      {"--budget-gib 80 --layers 99999999999999999999",
       "--layers: 99999999999999999999 is out of range (allowed: integers 1 to 10000)"},
      {"--budget-gib 80 --config '" + dir.path().string() + "'", "is a directory (allowed: a capacity config"},
      {"--budget-gib 80 --state-dtypes fp16",
       "--state-dtypes: 'fp16' is not a state dtype (allowed: comma-separated distinct values of fp32, bf16)"},
      {"--budget-gib 80 --state-dtypes fp32,fp32", "--state-dtypes: fp32 is listed twice"},
      {"--budget-gib 80 --state-dtypes ''", "--state-dtypes: empty list"},
  };
  for (const auto& [args, names] : cases) {
    const Result r = run_kvb(dir, "capacity " + args + out);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << args << ": " << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("results")));
  // An empty --out is refused, not taken for "not given" (which would write results/capacity_model.csv).
  const Result r = run_kvb(dir, "capacity --budget-gib 80 --no-probe --out ''");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--out: empty value (allowed: a file path)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("results")));
}

// An --out in a directory that passes the permission test but takes no file (as root, /proc) fails before anything
// is computed, with exit code 2.
TEST(CapacityCli, OutWhereNoFileCanBeCreatedExits2First) {
  TempDir dir;
  const Result r = run_kvb(dir, "capacity --budget-gib 80 --no-probe --out /proc/kvb_capacity.csv");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // nothing computed or printed before the error
}

TEST(CapacityCli, NoGpuNeedsBudget) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is present: the budget defaults to its free memory";
  TempDir dir;
  const Result r = run_kvb(dir, "capacity --out '" + dir.file("capacity.csv") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--budget-gib"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("capacity.csv")));
}

// A model-only run without --out writes results/capacity_model.csv, never the proved results/capacity.csv.
TEST(CapacityCli, ModelOnlyRunNeverReplacesTheProvedCsvByDefault) {
  TempDir dir;
  const std::string cmd = "cd '" + dir.path().string() + "' && '" + KVB_BINARY_PATH + "' capacity --config '" +
                          KVB_SOURCE_DIR + "/experiments/capacity.toml' --budget-gib 80 --no-probe >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(std::filesystem::exists(dir.file("results/capacity_model.csv")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("results/capacity.csv")));
}

// --state-dtypes overrides the config's state_dtype axis.
TEST(CapacityCli, StateDtypesFlagOverridesTheConfig) {
  TempDir dir;
  const std::string csv = dir.file("capacity.csv");
  const Result r = run_kvb(dir, "capacity --budget-gib 80 --no-probe --config experiments/capacity.toml "
                                "--state-dtypes bf16 --out '" + csv + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("fp32 states: KVBuffer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 drafts, bf16 states: KVBuffer/recurrent = "), std::string::npos) << r.out;
  const CsvTable t = read_csv_file(csv);
  ASSERT_EQ(t.rows.size(), 1u + 6u + 5u + 30u);
  for (const auto& row : t.rows) EXPECT_EQ(row[col(t, "state_dtype")], "bf16");
  EXPECT_EQ(t.rows[0][col(t, "bytes_per_request")], std::to_string(36 * 32 * 128 * 128 * 2));
}

TEST(CapacityCli, ModelOnlyCsv) {
  TempDir dir;
  const std::string csv = dir.file("out/capacity.csv");
  const bool gpu = cuda_device_present();
  const Result r = run_kvb(dir, "capacity --budget-gib 80 --config experiments/capacity.toml --out '" + csv + "'" +
                                    (gpu ? " --no-probe" : ""));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4 drafts, fp32 states: KVBuffer/recurrent = 4.67x at B = 4, 4.51x at B = 8"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("4 drafts, bf16 states: KVBuffer/recurrent = "), std::string::npos) << r.out;
  const CsvTable t = read_csv_file(csv);
  ASSERT_EQ(t.rows.size(), 2 * (1u + 6u + 5u + 30u));
  const std::string status = gpu ? kStatusNoProbe : kStatusNoGpu;
  const size_t variant = col(t, "variant"), b = col(t, "buffer_size"), m = col(t, "draft_tokens"),
               dtype = col(t, "state_dtype"), budget = col(t, "budget_bytes"), bytes = col(t, "bytes_per_request"),
               model = col(t, "max_requests_model"), measured = col(t, "max_requests_measured"),
               st = col(t, "status"), ratio = col(t, "ratio_to_recurrent");
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    EXPECT_EQ(row[dtype], i < t.rows.size() / 2 ? "fp32" : "bf16");  // one block per dtype, fp32 first
    EXPECT_EQ(row[budget], std::to_string(80 * kGiB));
    EXPECT_EQ(row[measured], "");
    EXPECT_EQ(row[st], status);
  }
  // Recurrent verify m = 3: 4 states of 72 MiB (36 MiB in bf16); KVBuffer verify B = 2, m = 3: a state of 2 MiB
  // (1 MiB) + (1 + 3) entries per layer. Each ratio is over the recurrent row of its own dtype.
  for (const auto& [name, state] : {std::pair<std::string, int64_t>{"fp32", 2097152}, {"bf16", 1048576}}) {
    SCOPED_TRACE(name);
    const std::vector<std::string>* rv3 = nullptr;
    for (const auto& row : t.rows)
      if (row[dtype] == name && row[variant] == "recurrent_verify" && row[m] == "3") rv3 = &row;
    ASSERT_NE(rv3, nullptr);
    EXPECT_EQ((*rv3)[bytes], std::to_string(4 * 36 * state));
    bool found = false;
    for (const auto& row : t.rows)
      if (row[dtype] == name && row[variant] == "kvbuffer_verify" && row[b] == "2" && row[m] == "3") {
        found = true;
        EXPECT_EQ(row[bytes], std::to_string(36 * (state + 4 * 20608) + 4 + 16 * 4));
        EXPECT_NEAR(std::stod(row[ratio]), std::stod(row[model]) / std::stod((*rv3)[model]), 1e-4);
      }
    EXPECT_TRUE(found);
  }
}

}  // namespace
}  // namespace kvb::capacity
