// Float64 reference of the KVBuffer raw form: the chunkwise (UT) transform of DESIGN.md section 3 on Eigen.
#include "reference/kvbuffer_raw_reference.h"

#include <Eigen/Dense>

#include <stdexcept>
#include <string>

namespace kvb::ref {
namespace {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstHeadMap = Eigen::Map<const RowMat>;
using HeadMap = Eigen::Map<RowMat>;

/// Prepares a raw entry (its q is not read: the key stands in for it).
TokenPrepared prepare_entry(const GdnShape& s, const TokenRaw& e, const GateParams& gp) {
  TokenRaw t = e;
  t.q = e.k;
  return prepare_token(s, t, gp);
}

/// The rebuilt entries of one value head h over T prepared entries: decay[i][j] = e^{G_i - G_j} (i >= j, summed from
/// the per-entry g, never as a difference of large sums), decay0[j] = e^{G_j}, the keys K^ [T x K] and U [T x V].
struct HeadRebuild {
  RowMat decay;
  Eigen::VectorXd decay0;
  RowMat khat;
  RowMat u;
};

HeadRebuild rebuild_head(const GdnShape& s, const std::vector<double>& checkpoint,
                         const std::vector<TokenPrepared>& entries, int h) {
  const int K = s.head_dim_k, V = s.head_dim_v, kh = h / s.group(), T = int(entries.size());
  HeadRebuild r;
  r.decay = RowMat::Zero(T, T);
  r.decay0.resize(T);
  for (int i = 0; i < T; ++i) {
    double sum = 0;  // G_i - G_j for j = i, i-1, ..., then G_i
    for (int j = i; j >= 0; --j) {
      r.decay(i, j) = std::exp(sum);
      sum += entries[j].g[h];
    }
    r.decay0(i) = std::exp(sum);
  }
  r.khat.resize(T, K);
  RowMat vals(T, V);
  Eigen::VectorXd beta(T);
  for (int j = 0; j < T; ++j) {
    r.khat.row(j) = Eigen::Map<const Eigen::RowVectorXd>(entries[j].k_hat.data() + size_t(kh) * K, K);
    vals.row(j) = Eigen::Map<const Eigen::RowVectorXd>(entries[j].v.data() + size_t(h) * V, V);
    beta(j) = entries[j].beta[h];
  }
  RowMat P = RowMat::Zero(T, V);  // K^ S0
  if (!checkpoint.empty()) P = r.khat * ConstHeadMap(checkpoint.data() + size_t(h) * K * V, K, V);
  const RowMat R = beta.asDiagonal() * (vals - r.decay0.asDiagonal() * P);
  RowMat IA = RowMat::Identity(T, T);
  const RowMat gram = r.khat * r.khat.transpose();
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < i; ++j) IA(i, j) = beta(i) * r.decay(i, j) * gram(i, j);
  r.u = IA.triangularView<Eigen::UnitLower>().solve(R);
  return r;
}

/// o [HV][V] of entry t (the last of `entries`) from the checkpoint and all entries up to it.
void output_of_last(const GdnShape& s, const std::vector<double>& checkpoint,
                    const std::vector<TokenPrepared>& entries, const TokenPrepared& query, double* o) {
  const int K = s.head_dim_k, V = s.head_dim_v, T = int(entries.size());
  for (int h = 0; h < s.heads_v; ++h) {
    const HeadRebuild r = rebuild_head(s, checkpoint, entries, h);
    const Eigen::Map<const Eigen::VectorXd> q(query.q_hat.data() + size_t(h / s.group()) * K, K);
    Eigen::VectorXd out = Eigen::VectorXd::Zero(V);
    if (!checkpoint.empty())
      out = r.decay0(T - 1) * (ConstHeadMap(checkpoint.data() + size_t(h) * K * V, K, V).transpose() * q);
    for (int j = 0; j < T; ++j) out += (r.decay(T - 1, j) * r.khat.row(j).dot(q)) * r.u.row(j).transpose();
    Eigen::Map<Eigen::VectorXd>(o + size_t(h) * V, V) = out;
  }
}

/// e^{G_T} S0 + sum_j e^{G_T - G_j} k^_j u_j^T over all entries (S0 = 0 when the checkpoint is empty).
std::vector<double> fold(const GdnShape& s, const std::vector<double>& checkpoint,
                         const std::vector<TokenPrepared>& entries) {
  const int K = s.head_dim_k, V = s.head_dim_v, T = int(entries.size());
  std::vector<double> state = checkpoint;
  if (state.empty()) state.assign(size_t(s.state_elems()), 0.0);
  if (T == 0) return state;
  for (int h = 0; h < s.heads_v; ++h) {
    const HeadRebuild r = rebuild_head(s, checkpoint, entries, h);
    HeadMap S(state.data() + size_t(h) * K * V, K, V);
    S *= r.decay0(T - 1);
    S.noalias() += r.khat.transpose() * (r.decay.row(T - 1).transpose().asDiagonal() * r.u);
  }
  return state;
}

std::vector<TokenPrepared> prepare_all(const GdnShape& s, const GateParams& gp, const RawKVBufferSlot& slot) {
  if (!slot.checkpoint.empty() && slot.checkpoint.size() != size_t(s.state_elems()))
    throw std::invalid_argument("RawKVBufferSlot.checkpoint: expected " + std::to_string(s.state_elems()) +
                                " values, got " + std::to_string(slot.checkpoint.size()));
  std::vector<TokenPrepared> out;
  for (const TokenRaw& e : slot.entries) out.push_back(prepare_entry(s, e, gp));
  return out;
}

}  // namespace

void kvbuffer_raw_decode(const GdnShape& s, int buffer_size, const GateParams& gp, const TokenRaw& t,
                         RawKVBufferSlot& slot, std::vector<double>& o) {
  if (buffer_size < 1) throw std::invalid_argument("kvbuffer_raw_decode: buffer_size must be >= 1");
  if (int(slot.entries.size()) >= buffer_size)
    throw std::invalid_argument("kvbuffer_raw_decode: the buffer already holds buffer_size entries (flush missed)");
  std::vector<TokenPrepared> entries = prepare_all(s, gp, slot);
  const TokenPrepared pt = prepare_token(s, t, gp);
  entries.push_back(pt);
  o.assign(size_t(s.heads_v) * s.head_dim_v, 0.0);
  output_of_last(s, slot.checkpoint, entries, pt, o.data());
  slot.entries.push_back(t);
  if (int(slot.entries.size()) == buffer_size) {
    slot.checkpoint = fold(s, slot.checkpoint, entries);
    slot.entries.clear();
  }
}

void kvbuffer_raw_verify(const GdnShape& s, const GateParams& gp, const std::vector<TokenRaw>& drafts,
                         const RawKVBufferSlot& slot, std::vector<double>& o) {
  std::vector<TokenPrepared> entries = prepare_all(s, gp, slot);
  const size_t head_out = size_t(s.heads_v) * s.head_dim_v;
  o.assign(drafts.size() * head_out, 0.0);
  for (size_t i = 0; i < drafts.size(); ++i) {
    const TokenPrepared pt = prepare_token(s, drafts[i], gp);
    entries.push_back(pt);
    output_of_last(s, slot.checkpoint, entries, pt, o.data() + i * head_out);
  }
}

void kvbuffer_raw_accept(const GdnShape& s, int buffer_size, const GateParams& gp, const std::vector<TokenRaw>& drafts,
                         int accepted, RawKVBufferSlot& slot) {
  if (buffer_size < 1) throw std::invalid_argument("kvbuffer_raw_accept: buffer_size must be >= 1");
  if (accepted < 0 || accepted > int(drafts.size()))
    throw std::invalid_argument("kvbuffer_raw_accept: accepted must be in [0, " + std::to_string(drafts.size()) +
                                "], got " + std::to_string(accepted));
  if (int(slot.entries.size()) >= buffer_size)
    throw std::invalid_argument("kvbuffer_raw_accept: the buffer already holds buffer_size entries (flush missed)");
  for (int i = 0; i < accepted; ++i) slot.entries.push_back(drafts[i]);
  if (int(slot.entries.size()) >= buffer_size) {
    slot.checkpoint = fold(s, slot.checkpoint, prepare_all(s, gp, slot));
    slot.entries.clear();
  }
}

std::vector<double> kvbuffer_raw_state(const GdnShape& s, const GateParams& gp, const RawKVBufferSlot& slot) {
  return fold(s, slot.checkpoint, prepare_all(s, gp, slot));
}

}  // namespace kvb::ref
