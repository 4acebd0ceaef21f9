// Float64 reference of the gated delta rule (DESIGN.md section 2) and of the KVBuffer delta form (section 3), on Eigen.
#include "reference/gdn_reference.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "reference/bf16.h"

namespace kvb::ref {
namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using HeadMap = Eigen::Map<RowMat>;            // one head's K x V state, V contiguous
using ConstHeadMap = Eigen::Map<const RowMat>;
using VecMap = Eigen::Map<Eigen::VectorXd>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXd>;

void require_size(const std::vector<double>& x, size_t n, const char* what) {
  if (x.size() != n) {
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(n) + " values, got " +
                                std::to_string(x.size()));
  }
}

void check_shape(const GdnShape& s) {
  if (s.heads_qk < 1 || s.heads_v < 1 || s.heads_v % s.heads_qk != 0 || s.head_dim_k < 1 || s.head_dim_v < 1) {
    throw std::invalid_argument("GdnShape: heads_qk >= 1, heads_v a positive multiple of heads_qk, head dims >= 1");
  }
}

void check_prepared(const GdnShape& s, const TokenPrepared& t) {
  require_size(t.q_hat, size_t(s.heads_qk) * s.head_dim_k, "TokenPrepared.q_hat [H][K]");
  require_size(t.k_hat, size_t(s.heads_qk) * s.head_dim_k, "TokenPrepared.k_hat [H][K]");
  require_size(t.v, size_t(s.heads_v) * s.head_dim_v, "TokenPrepared.v [HV][V]");
  require_size(t.g, size_t(s.heads_v), "TokenPrepared.g [HV]");
  require_size(t.beta, size_t(s.heads_v), "TokenPrepared.beta [HV]");
}

void check_entry(const GdnShape& s, const BufferEntry& e) {
  require_size(e.k_hat, size_t(s.heads_qk) * s.head_dim_k, "BufferEntry.k_hat [H][K]");
  require_size(e.u, size_t(s.heads_v) * s.head_dim_v, "BufferEntry.u [HV][V]");
  require_size(e.g, size_t(s.heads_v), "BufferEntry.g [HV]");
}

void check_checkpoint(const GdnShape& s, const KVBufferSlot& slot) {
  if (!slot.checkpoint.empty()) require_size(slot.checkpoint, size_t(s.state_elems()), "KVBufferSlot.checkpoint");
  for (const BufferEntry& e : slot.entries) check_entry(s, e);
}

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// Sum of squares of x[0..n) in fp32, accumulated as a vectorised CPU reduction does: element i goes to lane i % 8 of
/// accumulator row (i / 8) % 4; the four rows are added in order, then the eight lanes in order. The squares of
/// bf16 inputs are exact in fp32, so only this order decides the rounding; it reproduces the golden oracle's fp32
/// l2-norm (tests/data/golden/README.md).
float sum_squares_fp32(const double* x, int n) {
  float acc[4][8] = {};
  for (int i = 0; i < n; ++i) {
    const float xi = static_cast<float>(x[i]);
    acc[(i / 8) % 4][i % 8] += xi * xi;
  }
  float total = 0.0f;
  for (int lane = 0; lane < 8; ++lane) total += ((acc[0][lane] + acc[1][lane]) + acc[2][lane]) + acc[3][lane];
  return total;
}

/// l2-normalisation of each of `heads` rows of length n in fp32 (DESIGN.md section 2: prepare in fp32):
/// y = fp32(x / sqrt(|x|^2 + eps)), then out = scale * y in float64.
std::vector<double> normalize_rows(const std::vector<double>& x, int heads, int n, double scale, double eps) {
  std::vector<double> out(x.size());
  for (int h = 0; h < heads; ++h) {
    const double* xi = x.data() + size_t(h) * n;
    const float denom = std::sqrt(sum_squares_fp32(xi, n) + static_cast<float>(eps));
    for (int i = 0; i < n; ++i) out[size_t(h) * n + i] = scale * double(static_cast<float>(xi[i]) / denom);
  }
  return out;
}

/// Decay factors of a token appended after `entries` for value head h: factor[j] = e^{G_t - G_j} =
/// exp(g_{j+1} + ... + g_t) for j < n (entries), and e^{G_t} (from the checkpoint) at index n. Summed from the
/// per-entry g, newest first, so no difference of large cumulative sums appears.
std::vector<double> decay_factors(const std::vector<const BufferEntry*>& entries, int h, double g_t) {
  const size_t n = entries.size();
  std::vector<double> factor(n + 1);
  double sum = g_t;  // G_t - G_j for j = n - 1 .. 0, then G_t
  for (size_t j = n; j-- > 0;) {
    factor[j] = std::exp(sum);
    sum += entries[j]->g[h];
  }
  factor[n] = std::exp(sum);
  return factor;
}

/// The delta-form step of DESIGN.md section 3 for one token after `entries` (buffer entries, then earlier drafts),
/// from checkpoint S0 (empty = zero). Returns the new entry; writes o [HV][V].
BufferEntry delta_step(const GdnShape& s, const std::vector<double>& checkpoint,
                       const std::vector<const BufferEntry*>& entries, const TokenPrepared& t, double* o) {
  const int K = s.head_dim_k, V = s.head_dim_v, group = s.group();
  BufferEntry e;
  e.k_hat = t.k_hat;
  e.g = t.g;
  e.u.assign(size_t(s.heads_v) * V, 0.0);
  for (int h = 0; h < s.heads_v; ++h) {
    const int kh = h / group;
    ConstVecMap k_t(t.k_hat.data() + size_t(kh) * K, K);
    ConstVecMap q_t(t.q_hat.data() + size_t(kh) * K, K);
    ConstVecMap v_t(t.v.data() + size_t(h) * V, V);
    const std::vector<double> factor = decay_factors(entries, h, t.g[h]);
    const size_t n = entries.size();

    Eigen::VectorXd s0k = Eigen::VectorXd::Zero(V), s0q = Eigen::VectorXd::Zero(V);
    if (!checkpoint.empty()) {
      ConstHeadMap S0(checkpoint.data() + size_t(h) * K * V, K, V);
      s0k.noalias() = S0.transpose() * k_t;  // one pass over S0 gives both products
      s0q.noalias() = S0.transpose() * q_t;
    }
    Eigen::VectorXd pred = factor[n] * s0k;  // e^{G_t} S0^T k^_t + sum_{j<t} e^{G_t-G_j} (k^_j . k^_t) u_j
    Eigen::VectorXd out = factor[n] * s0q;   // e^{G_t} S0^T q^_t + sum_{j<t} e^{G_t-G_j} (k^_j . q^_t) u_j
    for (size_t j = 0; j < n; ++j) {
      ConstVecMap k_j(entries[j]->k_hat.data() + size_t(kh) * K, K);
      ConstVecMap u_j(entries[j]->u.data() + size_t(h) * V, V);
      pred += (factor[j] * k_j.dot(k_t)) * u_j;
      out += (factor[j] * k_j.dot(q_t)) * u_j;
    }
    VecMap u_t(e.u.data() + size_t(h) * V, V);
    u_t = t.beta[h] * (v_t - pred);
    out += k_t.dot(q_t) * u_t;  // j = t term, decay 1
    VecMap(o + size_t(h) * V, V) = out;
  }
  return e;
}

/// S0 <- e^{G_n} S0 + sum_j e^{G_n - G_j} k^_j u_j^T over `entries`, into `state` ([HV][K][V], already sized).
void fold_entries(const GdnShape& s, const std::vector<BufferEntry>& entries, std::vector<double>& state) {
  const int K = s.head_dim_k, V = s.head_dim_v, group = s.group();
  std::vector<const BufferEntry*> ptrs;
  for (const BufferEntry& e : entries) ptrs.push_back(&e);
  for (int h = 0; h < s.heads_v; ++h) {
    const int kh = h / group;
    HeadMap S(state.data() + size_t(h) * K * V, K, V);
    if (ptrs.empty()) continue;
    // Factors relative to the last entry n: e^{G_n - G_j} for j < n - 1, 1 for j = n - 1, e^{G_n} for S0.
    const std::vector<const BufferEntry*> head(ptrs.begin(), ptrs.end() - 1);
    const std::vector<double> factor = decay_factors(head, h, ptrs.back()->g[h]);
    S *= factor[head.size()];
    for (size_t j = 0; j < ptrs.size(); ++j) {
      const double f = j < head.size() ? factor[j] : 1.0;
      ConstVecMap k_j(ptrs[j]->k_hat.data() + size_t(kh) * K, K);
      ConstVecMap u_j(ptrs[j]->u.data() + size_t(h) * V, V);
      S.noalias() += (f * k_j) * u_j.transpose();
    }
  }
}

/// Each of the `heads` row-major rows x cols matrices of m, transposed.
std::vector<double> transpose_heads(const std::vector<double>& m, int heads, int rows, int cols) {
  std::vector<double> t(m.size());
  const size_t per = size_t(rows) * cols;
  for (int h = 0; h < heads; ++h)
    HeadMap(t.data() + h * per, cols, rows) = ConstHeadMap(m.data() + h * per, rows, cols).transpose();
  return t;
}

}  // namespace

TokenPrepared prepare_token_with_gates(const GdnShape& s, const TokenRaw& t, const GateParams& p,
                                       const std::vector<double>& g, const std::vector<double>& beta) {
  check_shape(s);
  require_size(t.q, size_t(s.heads_qk) * s.head_dim_k, "TokenRaw.q [H][K]");
  require_size(t.k, size_t(s.heads_qk) * s.head_dim_k, "TokenRaw.k [H][K]");
  require_size(t.v, size_t(s.heads_v) * s.head_dim_v, "TokenRaw.v [HV][V]");
  require_size(g, size_t(s.heads_v), "g [HV]");
  require_size(beta, size_t(s.heads_v), "beta [HV]");
  TokenPrepared out;
  out.q_hat = normalize_rows(t.q, s.heads_qk, s.head_dim_k, p.scale, p.l2norm_eps);
  out.k_hat = normalize_rows(t.k, s.heads_qk, s.head_dim_k, 1.0, p.l2norm_eps);
  out.v = t.v;
  out.g = g;
  out.beta = beta;
  return out;
}

TokenPrepared prepare_token(const GdnShape& s, const TokenRaw& t, const GateParams& p) {
  check_shape(s);
  require_size(t.a, size_t(s.heads_v), "TokenRaw.a [HV]");
  require_size(t.b, size_t(s.heads_v), "TokenRaw.b [HV]");
  require_size(p.A_log, size_t(s.heads_v), "GateParams.A_log [HV]");
  require_size(p.dt_bias, size_t(s.heads_v), "GateParams.dt_bias [HV]");
  std::vector<double> g(s.heads_v), beta(s.heads_v);
  for (int h = 0; h < s.heads_v; ++h) {
    g[h] = double(static_cast<float>(-std::exp(p.A_log[h]) * softplus(t.a[h] + p.dt_bias[h])));
    beta[h] = double(static_cast<float>(sigmoid(t.b[h])));
  }
  return prepare_token_with_gates(s, t, p, g, beta);
}

std::vector<double> kv_to_vk(const GdnShape& s, const std::vector<double>& state) {
  require_size(state, size_t(s.state_elems()), "kv_to_vk: state");
  return transpose_heads(state, s.heads_v, s.head_dim_k, s.head_dim_v);
}

std::vector<double> vk_to_kv(const GdnShape& s, const std::vector<double>& state) {
  require_size(state, size_t(s.state_elems()), "vk_to_kv: state");
  return transpose_heads(state, s.heads_v, s.head_dim_v, s.head_dim_k);
}

std::vector<double> l2_normalize(const double* x, int n, double eps) {
  std::vector<double> v(x, x + n);
  return normalize_rows(v, 1, n, 1.0, eps);
}

void round_stored_state(std::vector<double>& state, StateDtype d) {
  if (d == StateDtype::bf16)
    for (double& x : state) x = round_to_bf16(x);
}

void recurrent_decode(const GdnShape& s, const TokenPrepared& t, std::vector<double>& state, std::vector<double>& o,
                      StateDtype state_dtype) {
  check_shape(s);
  check_prepared(s, t);
  require_size(state, size_t(s.state_elems()), "state [HV][K][V]");
  const int K = s.head_dim_k, V = s.head_dim_v, group = s.group();
  o.assign(size_t(s.heads_v) * V, 0.0);
  for (int h = 0; h < s.heads_v; ++h) {
    const int kh = h / group;
    HeadMap S(state.data() + size_t(h) * K * V, K, V);
    ConstVecMap k(t.k_hat.data() + size_t(kh) * K, K);
    ConstVecMap q(t.q_hat.data() + size_t(kh) * K, K);
    ConstVecMap v(t.v.data() + size_t(h) * V, V);
    S *= std::exp(t.g[h]);
    const Eigen::VectorXd u = t.beta[h] * (v - S.transpose() * k);
    S.noalias() += k * u.transpose();
    VecMap(o.data() + size_t(h) * V, V).noalias() = S.transpose() * q;
  }
  round_stored_state(state, state_dtype);
}

void kvbuffer_decode(const GdnShape& s, int buffer_size, const TokenPrepared& t, KVBufferSlot& slot,
                     std::vector<double>& o, StateDtype state_dtype) {
  check_shape(s);
  check_prepared(s, t);
  check_checkpoint(s, slot);
  if (buffer_size < 1) throw std::invalid_argument("kvbuffer_decode: buffer_size must be >= 1");
  std::vector<const BufferEntry*> ptrs;
  for (const BufferEntry& e : slot.entries) ptrs.push_back(&e);
  o.assign(size_t(s.heads_v) * s.head_dim_v, 0.0);
  slot.entries.push_back(delta_step(s, slot.checkpoint, ptrs, t, o.data()));
  if (int(slot.entries.size()) >= buffer_size) kvbuffer_flush(s, slot, state_dtype);
}

void kvbuffer_flush(const GdnShape& s, KVBufferSlot& slot, StateDtype state_dtype) {
  check_shape(s);
  check_checkpoint(s, slot);
  if (slot.checkpoint.empty()) slot.checkpoint.assign(size_t(s.state_elems()), 0.0);
  fold_entries(s, slot.entries, slot.checkpoint);
  slot.entries.clear();
  round_stored_state(slot.checkpoint, state_dtype);
}

void kvbuffer_prefill(const GdnShape& s, int buffer_size, const std::vector<TokenPrepared>& prompt, KVBufferSlot& slot,
                      std::vector<double>& o, StateDtype state_dtype) {
  check_shape(s);
  for (const TokenPrepared& t : prompt) check_prepared(s, t);
  const int L = int(prompt.size()), K = s.head_dim_k, V = s.head_dim_v, group = s.group();
  if (L < 1 || L > buffer_size) {
    throw std::invalid_argument("kvbuffer_prefill: prompt length " + std::to_string(L) + " must be in [1, " +
                                std::to_string(buffer_size) + "] (buffer_size)");
  }
  if (!slot.checkpoint.empty() || !slot.entries.empty())
    throw std::invalid_argument("kvbuffer_prefill: the slot must be stateless and empty");
  const size_t head_out = size_t(s.heads_v) * V;
  o.assign(size_t(L) * head_out, 0.0);
  std::vector<BufferEntry> entries(L);
  for (int t = 0; t < L; ++t) {
    entries[t].k_hat = prompt[t].k_hat;
    entries[t].g = prompt[t].g;
    entries[t].u.assign(head_out, 0.0);
  }
  for (int h = 0; h < s.heads_v; ++h) {
    const int kh = h / group;
    RowMat Kh(L, K), Qh(L, K), Vh(L, V);
    for (int t = 0; t < L; ++t) {
      Kh.row(t) = ConstVecMap(prompt[t].k_hat.data() + size_t(kh) * K, K).transpose();
      Qh.row(t) = ConstVecMap(prompt[t].q_hat.data() + size_t(kh) * K, K).transpose();
      Vh.row(t) = prompt[t].beta[h] * ConstVecMap(prompt[t].v.data() + size_t(h) * V, V).transpose();
    }
    RowMat W = RowMat::Zero(L, L);  // w_tj = exp(g_{j+1} + ... + g_t), j <= t
    for (int t = 0; t < L; ++t) {
      double sum = 0.0;
      for (int j = t; j >= 0; --j) {
        W(t, j) = std::exp(sum);
        sum += prompt[j].g[h];
      }
    }
    RowMat A = W.cwiseProduct(Kh * Kh.transpose());  // the unit diagonal of I + A replaces A's own diagonal
    for (int t = 0; t < L; ++t) A.row(t) *= prompt[t].beta[h];
    const RowMat Uh = A.triangularView<Eigen::UnitLower>().solve(Vh);
    const RowMat QK = W.cwiseProduct(Qh * Kh.transpose());  // zero above the diagonal (W is)
    const RowMat Oh = QK * Uh;
    for (int t = 0; t < L; ++t) {
      VecMap(entries[t].u.data() + size_t(h) * V, V) = Uh.row(t).transpose();
      VecMap(o.data() + size_t(t) * head_out + size_t(h) * V, V) = Oh.row(t).transpose();
    }
  }
  slot.entries = std::move(entries);
  if (L == buffer_size) kvbuffer_flush(s, slot, state_dtype);
}

std::vector<double> kvbuffer_state(const GdnShape& s, const KVBufferSlot& slot) {
  check_shape(s);
  check_checkpoint(s, slot);
  std::vector<double> state = slot.checkpoint;
  if (state.empty()) state.assign(size_t(s.state_elems()), 0.0);
  fold_entries(s, slot.entries, state);
  return state;
}

void kvbuffer_verify(const GdnShape& s, int buffer_size, const std::vector<TokenPrepared>& drafts, KVBufferSlot& slot,
                     std::vector<double>& o, std::vector<BufferEntry>& draft_entries, StateDtype state_dtype) {
  check_shape(s);
  check_checkpoint(s, slot);
  for (const TokenPrepared& t : drafts) check_prepared(s, t);
  if (buffer_size < 1) throw std::invalid_argument("kvbuffer_verify: buffer_size must be >= 1");
  if (drafts.empty()) throw std::invalid_argument("kvbuffer_verify: at least one draft token is required");
  const bool due = int(slot.entries.size()) >= buffer_size;
  if (due) kvbuffer_flush(s, slot);  // a due slot: the flush verify folds in, its drafts reading the unrounded fold
  const size_t m = drafts.size(), head_out = size_t(s.heads_v) * s.head_dim_v;
  o.assign(m * head_out, 0.0);
  draft_entries.clear();
  draft_entries.reserve(m);  // pointers into it stay valid
  std::vector<const BufferEntry*> ptrs;
  for (const BufferEntry& e : slot.entries) ptrs.push_back(&e);
  for (size_t i = 0; i < m; ++i) {
    draft_entries.push_back(delta_step(s, slot.checkpoint, ptrs, drafts[i], o.data() + i * head_out));
    ptrs.push_back(&draft_entries.back());
  }
  if (due) round_stored_state(slot.checkpoint, state_dtype);
}
void kvbuffer_accept(const GdnShape& s, int buffer_size, const std::vector<BufferEntry>& draft_entries, int accepted,
                     KVBufferSlot& slot) {
  check_shape(s);
  if (buffer_size < 1) throw std::invalid_argument("kvbuffer_accept: buffer_size must be >= 1");
  if (accepted < 0 || accepted > int(draft_entries.size())) {
    throw std::invalid_argument("kvbuffer_accept: accepted must be in [0, " + std::to_string(draft_entries.size()) +
                                "], got " + std::to_string(accepted));
  }
  if (int(slot.entries.size()) >= buffer_size) {
    throw std::invalid_argument("kvbuffer_accept: the buffer holds buffer_size entries or more (verify folds them)");
  }
  for (int i = 0; i < accepted; ++i) {
    check_entry(s, draft_entries[i]);
    slot.entries.push_back(draft_entries[i]);
  }
}

void recurrent_verify(const GdnShape& s, const std::vector<TokenPrepared>& drafts, const std::vector<double>& state,
                      std::vector<double>& o, std::vector<double>& intermediate_states, StateDtype state_dtype) {
  check_shape(s);
  require_size(state, size_t(s.state_elems()), "state [HV][K][V]");
  const size_t m = drafts.size(), head_out = size_t(s.heads_v) * s.head_dim_v, se = size_t(s.state_elems());
  o.assign(m * head_out, 0.0);
  intermediate_states.assign(m * se, 0.0);
  std::vector<double> work = state, oi;
  for (size_t i = 0; i < m; ++i) {
    recurrent_decode(s, drafts[i], work, oi);
    std::copy(oi.begin(), oi.end(), o.begin() + i * head_out);
    std::copy(work.begin(), work.end(), intermediate_states.begin() + i * se);
  }
  round_stored_state(intermediate_states, state_dtype);  // the chain above stepped from unrounded states
}

double max_rel_err(const double* ref, const double* got, int64_t heads, int64_t head_elems) {
  double worst = 0.0;
  for (int64_t h = 0; h < heads; ++h) {
    const double* r = ref + h * head_elems;
    const double* x = got + h * head_elems;
    double ref_max = 0.0, err_max = 0.0;
    for (int64_t i = 0; i < head_elems; ++i) {
      if (std::isnan(x[i]) || std::isnan(r[i])) return std::numeric_limits<double>::infinity();
      ref_max = std::max(ref_max, std::abs(r[i]));
      err_max = std::max(err_max, std::abs(x[i] - r[i]));
    }
    // An all-zero reference head is judged on its absolute error.
    const double e = ref_max > 0.0 ? err_max / ref_max : err_max;
    worst = std::max(worst, e);
  }
  return worst;
}

double max_rel_err(const std::vector<double>& ref, const std::vector<double>& got, int64_t heads) {
  if (ref.size() != got.size()) {
    throw std::invalid_argument("max_rel_err: ref has " + std::to_string(ref.size()) + " values, got has " +
                                std::to_string(got.size()));
  }
  if (heads < 1 || int64_t(ref.size()) % heads != 0) {
    throw std::invalid_argument("max_rel_err: " + std::to_string(ref.size()) + " values do not split into " +
                                std::to_string(heads) + " heads");
  }
  return max_rel_err(ref.data(), got.data(), heads, int64_t(ref.size()) / heads);
}

}  // namespace kvb::ref
