#include "harness/reports/claims.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "harness/reports/anchors.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/result_csv.h"

namespace kvb::claims {
namespace {

/// Column indices of a table by name.
class Columns {
 public:
  Columns(const CsvTable& t, std::string origin) : t_(t), origin_(std::move(origin)) {}

  /// Index of `name`; throws UsageError naming the file when it is missing.
  size_t need(const std::string& name) const {
    const auto it = std::find(t_.header.begin(), t_.header.end(), name);
    if (it == t_.header.end()) throw UsageError(fmt::format("{}: no column '{}'", origin_, name));
    return size_t(it - t_.header.begin());
  }
  /// Index of `name`, or nullopt when absent.
  std::optional<size_t> find(const std::string& name) const {
    const auto it = std::find(t_.header.begin(), t_.header.end(), name);
    if (it == t_.header.end()) return std::nullopt;
    return size_t(it - t_.header.begin());
  }
  /// Field `col` of `row` as a number; nullopt when blank; UsageError when it is not a number.
  std::optional<double> number(const std::vector<std::string>& row, size_t col) const {
    const std::string& s = row[col];
    if (s.find_first_not_of(" \t") == std::string::npos) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(v))
      throw UsageError(fmt::format("{}: column '{}' value '{}' is not a number", origin_, t_.header[col], s));
    return v;
  }
  /// Field `col` of `row` as a latency in microseconds; nullopt when blank; UsageError when it is not a finite
  /// number > 0 (a latency of 0 or below would move a claim to another batch).
  std::optional<double> latency(const std::vector<std::string>& row, size_t col) const {
    const auto v = number(row, col);
    if (v && !(*v > 0))
      throw UsageError(fmt::format("{}: column '{}' value '{}' (allowed: a finite number of microseconds > 0)",
                                   origin_, t_.header[col], row[col]));
    return v;
  }
  /// True when the row's model is the one the anchors were measured on, Qwen3-Next at tensor parallelism 1: 16 key
  /// heads, 32 value heads, K = V = 128 (docs/MEASURING.md, "Anchors"); a shape column the table lacks is not checked.
  bool of_anchor_shape(const std::vector<std::string>& row) const {
    static const std::pair<const char*, double> kShape[] = {
        {"heads_qk", 16.0}, {"heads_v", 32.0}, {"head_dim_k", 128.0}, {"head_dim_v", 128.0}};
    for (const auto& [name, value] : kShape)
      if (const auto col = find(name); col && number(row, *col) != value) return false;
    return true;
  }
  /// The row's model, as one word: its layers, heads_qk, heads_v, head_dim_k and head_dim_v (the columns the table
  /// has; as numbers, so that 32 and 032 are one model; a blank field an empty part). A claim sets a KVBuffer row
  /// against a baseline row of the same model only. Throws UsageError when a field is not a number.
  std::string model_of(const std::vector<std::string>& row) const {
    std::string key;
    for (const char* name : {"layers", "heads_qk", "heads_v", "head_dim_k", "head_dim_v"})
      if (const auto col = find(name)) {
        const auto v = number(row, *col);
        key += (v ? fmt::format("{:g}", *v) : std::string()) + "/";
      }
    return key;
  }
  /// True when the row's status is ok (or the table has no status column) and its states are fp32: the claims are
  /// the paper's, made with fp32 states (an absent or empty state_dtype reads fp32; bf16 rows are left out).
  bool ok(const std::vector<std::string>& row) const {
    const auto st = find("status");
    const auto dtype = find("state_dtype");
    return (!st || row[*st] == "ok") && (!dtype || row[*dtype].empty() || row[*dtype] == "fp32");
  }

 private:
  const CsvTable& t_;
  std::string origin_;
};

struct KvbufferBest {
  double us = 0;
  int buffer_size = 0;
  std::string phase;
};

/// A baseline's latency per batch, and a measured peer's package and version.
struct Baseline {
  std::map<int, double> us;
  std::string version;
};

/// The decode rows of one model the claims read: the fastest KVBuffer row per batch and this project's recurrent
/// latency per batch, over the rows launched as `launch` (a CSV without a launch column holds plain launches only),
/// and each recurrent peer's fastest row per batch (plain launches).
struct DecodeRows {
  std::map<int, KvbufferBest> kvbuffer;
  std::map<int, double> recurrent;
  std::map<std::string, Baseline> peers;
};

/// DecodeRows per model (Columns::model_of). With anchor_shape, only rows of the anchors' shape.
std::map<std::string, DecodeRows> collect(const CsvTable& t, const std::string& origin, bool anchor_shape,
                                          const std::string& launch) {
  std::map<std::string, DecodeRows> models;
  const Columns c(t, origin);
  const auto launch_col = c.find("launch");
  const size_t variant = c.need("variant"), batch = c.need("batch"), bsize = c.need("buffer_size"),
               lat = c.need("latency_us_median");
  const auto phase = c.find("phase");
  const auto package = c.find("package"), version = c.find("package_version");
  for (const auto& row : t.rows) {
    if (!c.ok(row)) continue;
    const std::string& row_launch = launch_col ? row[*launch_col] : std::string("plain");
    if (anchor_shape && !c.of_anchor_shape(row)) continue;  // fp32 states: c.ok
    const auto b = c.number(row, batch);
    const auto us = c.latency(row, lat);
    if (!b || !us) continue;
    DecodeRows& out = models[c.model_of(row)];
    const auto peer = std::find_if(recurrent_peers().begin(), recurrent_peers().end(),
                                   [&](const RecurrentPeer& p) { return p.variant == row[variant]; });
    if (peer != recurrent_peers().end()) {
      if (!row_launch.empty() && row_launch != "plain") continue;  // a peer row has no launch: plain launches
      Baseline& base = out.peers[peer->variant];
      const auto [it, fresh] = base.us.emplace(int(*b), *us);
      if (!fresh) it->second = std::min(it->second, *us);
      if (package && version && !row[*package].empty()) base.version = row[*package] + " " + row[*version];
      continue;
    }
    if (row_launch != launch) continue;
    if (row[variant] == "recurrent") {
      out.recurrent[int(*b)] = *us;
    } else if (row[variant] == "kvbuffer") {
      const auto bs = c.number(row, bsize);
      auto it = out.kvbuffer.find(int(*b));
      if (it == out.kvbuffer.end() || *us < it->second.us)
        out.kvbuffer[int(*b)] = {*us, bs ? int(*bs) : 0, phase ? row[*phase] : std::string()};
    }
  }
  return models;
}

/// The better of two reductions (either may be absent).
std::optional<DecodeReduction> better(std::optional<DecodeReduction> a, std::optional<DecodeReduction> b) {
  if (!a) return b;
  if (!b) return a;
  return b->reduction > a->reduction ? b : a;
}

/// The best reduction of the KVBuffer rows against `baseline` (per batch: its latency and what it is).
std::optional<DecodeReduction> best_against(const std::map<int, KvbufferBest>& kvbuffer,
                                            const std::map<int, std::pair<double, std::string>>& baseline,
                                            int min_batch) {
  std::optional<DecodeReduction> best;
  for (const auto& [batch, base] : baseline) {
    const double base_us = base.first;
    if (batch < min_batch || base_us <= 0) continue;
    const auto it = kvbuffer.find(batch);
    if (it == kvbuffer.end()) continue;
    const double r = 1.0 - it->second.us / base_us;
    if (!best || r > best->reduction)
      best = DecodeReduction{r, batch, it->second.buffer_size, it->second.us, base_us, it->second.phase,
                             base.second, true, ""};
  }
  return best;
}

/// `us` per batch, each named `name`.
std::map<int, std::pair<double, std::string>> named(const std::map<int, double>& us, const std::string& name) {
  std::map<int, std::pair<double, std::string>> out;
  for (const auto& [b, v] : us) out[b] = {v, name};
  return out;
}

std::string display(const std::string& path) {
  std::error_code ec;
  const auto rel = std::filesystem::relative(path, std::filesystem::current_path(), ec);
  if (ec || rel.empty() || rel.native().rfind("..", 0) == 0) return path;
  return rel.string();
}

std::string phase_text(const DecodeReduction& d) { return d.phase.empty() ? "" : ", " + d.phase; }

/// The GPU an anchor was recorded on ("" when the anchors file has no such anchor).
std::string anchor_gpu(const std::string& anchor) {
  for (const AnchorValue& a : anchors())
    if (a.anchor == anchor) return a.gpu;
  return "";
}

}  // namespace

const std::vector<RecurrentPeer>& recurrent_peers() {
  static const std::vector<RecurrentPeer> peers = {
      {"fla_recurrent", "fla_recurrent_decode", "fla Triton"},
      {"flashinfer_recurrent", "flashinfer_recurrent_decode", "FlashInfer"}};
  return peers;
}

const std::map<int, double>& fla_triton_anchor_us() {
  static const std::map<int, double> us = anchor_by_batch("fla_recurrent_decode");
  return us;
}

const std::map<int, std::map<int, double>>& sglang_verify_anchor_us() {
  static const std::map<int, std::map<int, double>> us = anchor_by_drafts("sglang_verify");
  return us;
}

const std::map<int, std::map<int, double>>& replayssm_verify_anchor_us() {
  static const std::map<int, std::map<int, double>> us = anchor_by_drafts("replayssm_verify");
  return us;
}

const std::map<int, std::map<int, double>>& replayssm_verify_commit_anchor_us() {
  static const std::map<int, std::map<int, double>> us = anchor_by_drafts("replayssm_verify_flush_commit");
  return us;
}

std::optional<VerifyRatio> worst_verify_ratio(const CsvTable& spec, const std::string& origin, const std::string& column,
                                              const std::map<int, std::map<int, double>>& anchor, int min_batch) {
  const Columns c(spec, origin);
  const size_t variant = c.need("variant"), batch = c.need("batch"), drafts = c.need("draft_tokens"),
               acc = c.need("accepted"), bsize = c.need("buffer_size"), launch = c.need("launch"),
               lat = c.need(column);
  const auto whole = [&](const std::vector<std::string>& row, size_t col) {
    const auto v = c.number(row, col);
    if (!v || *v < 1 || *v != std::floor(*v) || *v > 1e9)
      throw UsageError(fmt::format("{}: column '{}' value '{}' is not a whole number of at least 1", origin,
                                   spec.header[col], row[col]));
    return int(*v);
  };
  // (model, m, batch) -> (us, B): each model of the anchors' shape against the anchor on its own.
  std::map<std::tuple<std::string, int, int>, std::pair<double, int>> fastest;
  for (const auto& row : spec.rows) {
    if (!c.ok(row) || row[variant] != "kvbuffer_verify" || row[acc] != "all" || row[launch] != "plain" ||
        !c.of_anchor_shape(row))
      continue;
    const int b = whole(row, batch);
    if (b < min_batch) continue;
    const int m = whole(row, drafts);
    if (!anchor.count(m) || !anchor.at(m).count(b)) continue;  // only the anchor's points are compared
    const auto us = c.number(row, lat);
    if (!us || *us <= 0)
      throw UsageError(fmt::format("{}: column '{}' of a kvbuffer_verify row is '{}' (expected a positive number)",
                                   origin, column, row[lat]));
    const auto [it, fresh] =
        fastest.emplace(std::make_tuple(c.model_of(row), m, b), std::make_pair(*us, whole(row, bsize)));
    if (!fresh && *us < it->second.first) it->second = {*us, whole(row, bsize)};
  }
  std::optional<VerifyRatio> worst;
  int points = 0;
  for (const auto& [key, kv] : fastest) {
    const auto& [model, m, b] = key;
    const double anchor_us = anchor.at(m).at(b);
    ++points;
    const double ratio = kv.first / anchor_us;
    if (!worst || ratio > worst->ratio) worst = VerifyRatio{ratio, m, b, kv.second, kv.first, anchor_us, 0};
  }
  if (worst) worst->points = points;
  return worst;
}

std::optional<VerifySpeedup> worst_verify_speedup(const CsvTable& spec, const std::string& origin, int draft_tokens,
                                                  const std::string& accepted, bool vs_sglang, double target,
                                                  int min_batch, const std::string& launch) {
  const Columns c(spec, origin);
  const size_t variant = c.need("variant"), batch = c.need("batch"), drafts = c.need("draft_tokens"),
               acc = c.need("accepted"), bsize = c.need("buffer_size"), launch_col = c.need("launch"),
               lat = c.need("verify_accept_us_median"), floor = c.need("verify_accept_floor_us"),
               over = c.need("verify_accept_over_floor");
  struct Best {
    double us = 0, floor_us = 0, over_floor = 0;
    int buffer_size = 0;
  };
  // A value this comparison uses: a positive number, else UsageError naming the file and the column.
  const auto positive = [&](const std::vector<std::string>& row, size_t col) {
    const auto v = c.number(row, col);
    if (!v || *v <= 0)
      throw UsageError(fmt::format("{}: column '{}' of a {} row is '{}' (expected a positive number)", origin,
                                   spec.header[col], row[variant], row[col]));
    return *v;
  };
  // Keyed by (model, batch): KVBuffer rows meet this project's recurrent rows of their own model, or the anchor (each
  // model of its shape on its own).
  using Key = std::pair<std::string, int>;
  std::map<Key, Best> kvbuffer;
  std::map<Key, double> baseline;
  for (const auto& row : spec.rows) {
    if (!c.ok(row) || row[launch_col] != launch || row[acc] != accepted) continue;
    const bool recurrent = row[variant] == "recurrent_verify";
    // Against the anchor, the CSV's recurrent rows are not read, nor KVBuffer rows of another model than the anchor's.
    if (recurrent ? vs_sglang : row[variant] != "kvbuffer_verify") continue;
    if (vs_sglang && !c.of_anchor_shape(row)) continue;
    if (c.number(row, drafts) != double(draft_tokens)) continue;
    const double b = positive(row, batch);
    if (b != std::floor(b) || b > 1e9)
      throw UsageError(fmt::format("{}: column 'batch' value '{}' is not a whole number of requests", origin,
                                   row[batch]));
    if (int(b) < min_batch) continue;
    const double us = positive(row, lat);
    const Key key{c.model_of(row), int(b)};
    if (recurrent) {
      const auto [it, fresh] = baseline.emplace(key, us);
      if (!fresh) it->second = std::min(it->second, us);
    } else {
      const auto it = kvbuffer.find(key);
      if (it == kvbuffer.end() || us < it->second.us)
        kvbuffer[key] = {us, positive(row, floor), positive(row, over), int(positive(row, bsize))};
    }
  }
  if (vs_sglang) {
    const auto& anchor = sglang_verify_anchor_us();
    if (const auto m = anchor.find(draft_tokens); m != anchor.end())
      for (const auto& entry : kvbuffer) {  // every (model, batch) of the KVBuffer rows at one of the anchor's batches
        const Key& key = entry.first;
        if (const auto us = m->second.find(key.second); us != m->second.end()) baseline[key] = us->second;
      }
  }
  std::optional<VerifySpeedup> worst;
  int points = 0;
  for (const auto& [key, base_us] : baseline) {
    const int b = key.second;
    const auto it = kvbuffer.find(key);
    if (it == kvbuffer.end()) continue;
    ++points;
    const double speedup = base_us / it->second.us;
    if (!worst || speedup < worst->speedup)
      worst = VerifySpeedup{speedup, b, it->second.buffer_size, it->second.us, base_us, it->second.over_floor,
                            base_us / (target * it->second.floor_us), 0};
  }
  if (worst) worst->points = points;
  return worst;
}

std::optional<DecodeReduction> best_reduction_vs_recurrent(const CsvTable& decode, const std::string& origin,
                                                           int min_batch, const std::string& launch) {
  std::optional<DecodeReduction> best;
  for (const auto& [model, rows] : collect(decode, origin, false, launch)) {
    std::map<int, std::pair<double, std::string>> fastest = named(rows.recurrent, "recurrent");
    for (const auto& [variant, base] : rows.peers)
      for (const auto& [b, us] : base.us) {
        const auto [it, fresh] = fastest.emplace(b, std::make_pair(us, variant));
        if (!fresh && us < it->second.first) it->second = {us, variant};
      }
    auto d = best_against(rows.kvbuffer, fastest, min_batch);
    if (d && d->baseline != "recurrent") d->version = rows.peers.at(d->baseline).version;
    best = better(best, d);
  }
  return best;
}

std::optional<DecodeReduction> best_reduction_vs_peer(const CsvTable& decode, const std::string& origin,
                                                      const RecurrentPeer& peer, int min_batch,
                                                      const std::string& launch) {
  // Each model against the peer's live rows of that model where it has any, else against its anchor.
  std::optional<DecodeReduction> best;
  for (const auto& [model, rows] : collect(decode, origin, true, launch)) {
    const auto live = rows.peers.find(peer.variant);
    std::optional<DecodeReduction> d;
    if (live != rows.peers.end()) {
      d = best_against(rows.kvbuffer, named(live->second.us, peer.variant), min_batch);
      if (d) d->version = live->second.version;
    } else {
      d = best_against(rows.kvbuffer, named(anchor_by_batch(peer.anchor), peer.anchor), min_batch);
      if (d) d->measured = false;
    }
    best = better(best, d);
  }
  return best;
}

std::optional<CapacityRatio> capacity_ratio(const CsvTable& capacity, const std::string& origin, int buffer_size,
                                            int draft_tokens) {
  const Columns c(capacity, origin);
  const size_t variant = c.need("variant"), bsize = c.need("buffer_size"), drafts = c.need("draft_tokens"),
               model = c.need("max_requests_model"), measured = c.need("max_requests_measured");
  // Per model (Columns::model_of): the last kvbuffer_verify row at (B, m) and recurrent_verify row at m.
  using Pair = std::pair<const std::vector<std::string>*, const std::vector<std::string>*>;
  std::map<std::string, Pair> models;
  for (const auto& row : capacity.rows) {
    // Rows of status ok (where the column exists) with fp32 states: the claim is the paper's, made with fp32 states
    // (a CSV without a state_dtype column is all fp32).
    if (!c.ok(row)) continue;
    if (c.number(row, drafts) != double(draft_tokens)) continue;
    Pair& pair = models[c.model_of(row)];
    if (row[variant] == "recurrent_verify") pair.second = &row;
    if (row[variant] == "kvbuffer_verify" && c.number(row, bsize) == double(buffer_size)) pair.first = &row;
  }
  std::optional<CapacityRatio> worst;
  for (const auto& [name, pair] : models) {
    const auto [kv, rec] = pair;
    if (!kv || !rec) continue;
    CapacityRatio out;
    out.buffer_size = buffer_size;
    out.draft_tokens = draft_tokens;
    const auto kv_meas = c.number(*kv, measured), rec_meas = c.number(*rec, measured);
    std::optional<double> k = kv_meas, r = rec_meas;
    out.measured = kv_meas && rec_meas;
    if (!out.measured) {
      k = c.number(*kv, model);
      r = c.number(*rec, model);
    }
    if (!k || !r || *r <= 0) continue;
    out.kvbuffer_requests = (long long)*k;
    out.recurrent_requests = (long long)*r;
    out.ratio = *k / *r;
    if (!worst || out.ratio < worst->ratio) worst = out;
  }
  return worst;
}

std::optional<StatelessRatio> worst_stateless_ratio(const CsvTable& short_context, const std::string& origin,
                                                    int min_batch) {
  const Columns c(short_context, origin);
  const size_t variant = c.need("variant"), batch = c.need("batch"), bsize = c.need("buffer_size"),
               ctx = c.need("context_len"), stateless = c.need("stateless"),
               state_bytes = c.need("state_bytes_per_request"), lat = c.need("latency_us_median");
  std::map<std::pair<std::string, int>, double> recurrent;  // (model, batch): rows are compared within a model
  for (const auto& row : short_context.rows) {
    if (!c.ok(row) || row[variant] != "recurrent") continue;
    const auto b = c.number(row, batch);
    const auto us = c.latency(row, lat);
    if (b && us) recurrent[{c.model_of(row), int(*b)}] = *us;
  }
  std::optional<StatelessRatio> worst;
  int points = 0;
  double max_state = 0;
  for (size_t i = 0; i < short_context.rows.size(); ++i) {
    const auto& row = short_context.rows[i];
    if (!c.ok(row) || row[variant] != "kvbuffer") continue;
    const std::string& flag = row[stateless];
    if (flag != "true" && flag != "false")
      throw UsageError(fmt::format("{}:{}: stateless = '{}' (allowed: true, false)", origin, short_context.line(i),
                                   flag));
    if (flag != "true") continue;
    const auto b = c.number(row, batch);
    const auto us = c.latency(row, lat);
    if (!b || !us || int(*b) < min_batch) continue;
    // The step at L = B - 1 brings the buffer to B entries: it writes the request's first state (the transition,
    // a flush), so it is not a step that reads only the buffer.
    const auto bs = c.number(row, bsize);
    const auto len = c.number(row, ctx);
    if (bs && len && *len + 1 >= *bs) continue;
    const auto rec = recurrent.find({c.model_of(row), int(*b)});
    if (rec == recurrent.end() || rec->second <= 0) continue;
    ++points;
    max_state = std::max(max_state, c.number(row, state_bytes).value_or(0.0));
    const double r = *us / rec->second;
    if (!worst || r > worst->ratio) {
      worst = StatelessRatio{r, int(*b), bs ? int(*bs) : 0, len ? int(*len) : 0, *us, rec->second, 0, 0};
    }
  }
  if (worst) {
    worst->points = points;
    worst->max_state_bytes = max_state;
  }
  return worst;
}

std::vector<ClaimLine> compute_claims(const std::string& decode_csv, const std::string& capacity_csv,
                                      const std::string& short_context_csv, const std::string& spec_verify_csv,
                                      const std::vector<CsvSchema>& schemas) {
  // Every CSV first, each through the shared validation: a malformed one stops the table before any line of it.
  const auto read = [&](const std::string& path) -> std::optional<CsvTable> {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    return read_result_csv(path, schemas);
  };
  const std::optional<CsvTable> decode = read(decode_csv), capacity = read(capacity_csv),
                                short_context = read(short_context_csv), spec_verify = read(spec_verify_csv);
  std::vector<ClaimLine> lines;
  const std::string decode_claim = "lower decode latency (batch >= 64)";
  const std::string paper_decode = fmt::format("{:.2f}%", kPaperDecodeReduction * 100);
  if (decode) {
    const CsvTable& t = *decode;
    const std::string src = display(decode_csv);
    // Plain launches (as the anchors and the peers were measured), then, where the CSV has them, PDL launches.
    for (const std::string launch : {"plain", "pdl"}) {
      const bool pdl = launch == "pdl";
      const auto vs_rec = best_reduction_vs_recurrent(t, decode_csv, 64, launch);
      std::vector<std::optional<DecodeReduction>> vs_peer;
      for (const RecurrentPeer& p : recurrent_peers())
        vs_peer.push_back(best_reduction_vs_peer(t, decode_csv, p, 64, launch));
      const bool any_peer = std::any_of(vs_peer.begin(), vs_peer.end(), [](const auto& d) { return d.has_value(); });
      if (pdl && !vs_rec && !any_peer) break;
      // One line: `d` against `baseline`, or "not measured" with `missing`.
      auto add = [&](const std::string& against, const std::optional<DecodeReduction>& d, const std::string& baseline,
                     const std::string& missing) {
        const std::string claim = decode_claim + ", vs " + against + (pdl ? ", PDL launches" : "");
        if (!d) {
          lines.push_back({claim, paper_decode, "not measured", src + ": " + missing});
          return;
        }
        lines.push_back({claim, paper_decode,
                         fmt::format("{:.1f}% ({:.2f} vs {:.{}f} us)", d->reduction * 100, d->kvbuffer_us,
                                     d->baseline_us, d->measured ? 2 : 1),
                         fmt::format("{}: batch {}, KVBuffer B = {}{} vs {}", src, d->batch, d->buffer_size,
                                     phase_text(*d), baseline)});
      };
      const std::string plain_peers = pdl ? ", plain launches" : "";
      std::string rec_baseline = pdl ? "recurrent, both PDL" : "recurrent";
      if (vs_rec && vs_rec->baseline != "recurrent")
        rec_baseline = fmt::format("{} ({}measured here, the fastest recurrent{})", vs_rec->baseline,
                                   vs_rec->version.empty() ? "" : vs_rec->version + ", ", plain_peers);
      add("recurrent", vs_rec, rec_baseline, "no batch >= 64 with recurrent and KVBuffer rows");
      for (size_t i = 0; i < recurrent_peers().size(); ++i) {
        const RecurrentPeer& p = recurrent_peers()[i];
        const auto& d = vs_peer[i];
        const std::string baseline =
            !d ? ""
            : d->measured
                ? fmt::format("{} ({}measured here{})", p.variant, d->version.empty() ? "" : d->version + ", ",
                              plain_peers)
                : fmt::format("{} anchor ({}{}; {} not measured here)", p.name, anchor_gpu(p.anchor), plain_peers,
                              p.variant);
        add(p.name, d, baseline,
            fmt::format("no KVBuffer row of the anchors' shape at a batch >= 64 of {} or its anchor", p.variant));
      }
    }
  } else {
    lines.push_back({decode_claim, paper_decode, "not measured", display(decode_csv) + " not found"});
  }

  const std::string cap_claim = "requests served with 4 drafts, KVBuffer / recurrent";
  const std::string paper_cap = fmt::format("{:g}x", kPaperCapacityRatio);
  if (capacity) {
    const CsvTable& t = *capacity;
    const std::string src = display(capacity_csv);
    for (const int b : {4, 8}) {
      if (const auto r = capacity_ratio(t, capacity_csv, b, 4))
        lines.push_back({fmt::format("{}, B = {}", cap_claim, b), paper_cap,
                         fmt::format("{:.2f}x ({} vs {})", r->ratio, r->kvbuffer_requests, r->recurrent_requests),
                         fmt::format("{}: kvbuffer_verify B = {}, m = 4 vs recurrent_verify m = 4, {}", src, b,
                                     r->measured ? "max_requests_measured" : "max_requests_model")});
      else
        lines.push_back({fmt::format("{}, B = {}", cap_claim, b), paper_cap, "not measured",
                         fmt::format("{}: no kvbuffer_verify B = {}, m = 4 and recurrent_verify m = 4 rows", src, b)});
    }
  } else {
    lines.push_back({cap_claim, paper_cap, "not measured", display(capacity_csv) + " not found"});
  }

  const std::string short_claim = "stateless short contexts (batch >= 64), KVBuffer / recurrent";
  const std::string paper_short = "no state (no number)";
  if (short_context) {
    const CsvTable& t = *short_context;
    const std::string src = display(short_context_csv);
    if (const auto s = worst_stateless_ratio(t, short_context_csv)) {
      const bool met = s->ratio <= kTargetStatelessRatio && s->max_state_bytes == 0;
      lines.push_back(
          {short_claim, paper_short,
           fmt::format("{:.2f}x ({:.2f} vs {:.2f} us), state bytes {:g}; target <= {:g}x, no state: {}", s->ratio,
                       s->kvbuffer_us, s->recurrent_us, s->max_state_bytes, kTargetStatelessRatio,
                       met ? "met" : "missed"),
           fmt::format("{}: worst of {} stateless steps (L + 1 < B: buffer only), batch {}, KVBuffer B = {}, L = {} vs "
                       "recurrent", src,
                       s->points, s->batch, s->buffer_size, s->context_len)});
    } else {
      lines.push_back({short_claim, paper_short, "not measured",
                       src + ": no stateless KVBuffer row at batch >= 64 with a recurrent row at its batch"});
    }
  } else {
    lines.push_back({short_claim, paper_short, "not measured", display(short_context_csv) + " not found"});
  }

  // Verify + accept with 4 drafts, one line per baseline and launch mode, every accepted setting of the CSV in it.
  const std::string verify_claim = "verify + accept with 4 drafts (batch >= 64), KVBuffer vs ";
  const std::string paper_verify = "parallel, no states (no number)";
  constexpr int kDrafts = 4;
  if (spec_verify) {
    const CsvTable& t = *spec_verify;
    const std::string src = display(spec_verify_csv);
    const Columns c(t, spec_verify_csv);
    const size_t acc_col = c.need("accepted"), variant = c.need("variant");
    std::vector<std::string> settings;  // accepted settings of the KVBuffer rows, in the CSV's order
    for (const auto& row : t.rows)
      if (row[variant] == "kvbuffer_verify" &&
          std::find(settings.begin(), settings.end(), row[acc_col]) == settings.end())
        settings.push_back(row[acc_col]);
    for (const std::string launch : {"plain", "pdl"}) {
      for (const bool vs_sglang : {false, true}) {
        const double target = vs_sglang ? kTargetVerifyVsSglang : kTargetVerifyVsRecurrent;
        const std::string claim = verify_claim + (vs_sglang ? "SGLang verify" : "recurrent verify + accept") +
                                  (launch == "pdl" ? ", PDL launches" : "");
        std::string measured;
        bool met = true;
        for (const auto& a : settings) {
          const auto v = worst_verify_speedup(t, spec_verify_csv, kDrafts, a, vs_sglang, target, 64, launch);
          if (!v) continue;
          met = met && v->speedup >= target;
          measured += fmt::format("{}{}: {:.2f}x (worst of {} batch{}: {}, B = {}: {:.2f} vs {:.1f} us, {:.2f}x its "
                                  "floor, {:g}x needs {:.2f}x)",
                                  measured.empty() ? "" : "; ", a, v->speedup, v->points, v->points == 1 ? "" : "es",
                                  v->batch, v->buffer_size, v->kvbuffer_us, v->baseline_us, v->over_floor, target,
                                  v->needed_over_floor);
        }
        if (measured.empty()) {
          lines.push_back({claim, paper_verify, "not measured",
                           src + fmt::format(": no ok kvbuffer_verify and {} rows with m = 4 at one batch >= 64{}",
                                             vs_sglang ? "SGLang anchor" : "recurrent_verify",
                                             launch == "pdl" ? ", PDL launches" : "")});
          continue;
        }
        if (launch == "pdl" && vs_sglang) measured += "; SGLang measured with plain launches";
        measured += fmt::format("; target >= {:g}x: {}", target, met ? "met" : "missed");
        lines.push_back({claim, paper_verify, measured,
                         fmt::format("{}: worst {}batch >= 64 per accepted setting, fastest KVBuffer B", src,
                                     vs_sglang ? "anchor " : "")});
      }
    }
    // Against ReplaySSM's verify: verify alone and verify + accept, every draft accepted, every m and batch >= 64.
    for (const bool with_accept : {false, true}) {
      const std::string claim =
          with_accept ? "verify + accept (all accepted, batch >= 64, every m), KVBuffer / ReplaySSM verify + "
                        "commit"
                      : "verify alone (all accepted, batch >= 64, every m), KVBuffer / ReplaySSM verify";
      const double target = with_accept ? kTargetVerifyAcceptVsReplaySsm : kTargetVerifyVsReplaySsm;
      const auto r = worst_verify_ratio(t, spec_verify_csv, with_accept ? "verify_accept_us_median" : "verify_us_median",
                                        with_accept ? replayssm_verify_commit_anchor_us() : replayssm_verify_anchor_us());
      const std::string anchor = with_accept ? "replayssm_verify_flush_commit" : "replayssm_verify";
      if (!r) {
        lines.push_back({claim, "no number", "not measured",
                         src + ": no ok kvbuffer_verify row (all accepted, plain) at a point of the ReplaySSM anchor"});
        continue;
      }
      lines.push_back(
          {claim, "no number",
           fmt::format("worst {:.2f}x (m = {}, batch {}, B = {}: {:.2f} vs {:.1f} us, of {} points); target <= {:.2f}x: "
                       "{}",
                       r->ratio, r->draft_tokens, r->batch, r->buffer_size, r->kvbuffer_us, r->anchor_us, r->points,
                       target, r->ratio <= target ? "met" : "missed"),
           fmt::format("{}: worst (m, batch) of the {} anchor ({}), fastest KVBuffer B, plain launches", src, anchor,
                       anchor_gpu(anchor))});
    }
  } else {
    lines.push_back({verify_claim + "recurrent and SGLang", paper_verify, "not measured",
                     display(spec_verify_csv) + " not found"});
  }
  return lines;
}

std::string format_claims(const std::vector<ClaimLine>& lines) {
  size_t w0 = 5, w1 = 5, w2 = 8;
  for (const auto& l : lines) {
    w0 = std::max(w0, l.claim.size());
    w1 = std::max(w1, l.paper.size());
    w2 = std::max(w2, l.measured.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", "claim", w0, "paper", w1, "measured", w2, "source");
  for (const auto& l : lines)
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", l.claim, w0, l.paper, w1, l.measured, w2, l.source);
  return out;
}

}  // namespace kvb::claims
