#include "harness/workloads/verify_check.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/workloads/check_support.h"
#include "harness/workloads/device_random.h"
#include "harness/workloads/raw_verify_check.h"
#include "byte_model/verify_bytes.h"
#include "core/cuda_check.h"
#include "reference/gdn_reference.h"
#include "core/tolerances.h"

namespace kvb {
namespace {

/// One field of every draft entry, concatenated: u as [m][HV][V], g as [m][HV].
std::vector<double> concat(const std::vector<ref::BufferEntry>& entries, std::vector<double> ref::BufferEntry::*field) {
  std::vector<double> x;
  for (const ref::BufferEntry& e : entries) x.insert(x.end(), (e.*field).begin(), (e.*field).end());
  return x;
}

/// State-side errors of a KVBuffer verify check, by whether a fold's rounding can move them (DESIGN.md section 4).
/// shared: values both sides compute from the same stored checkpoint and entries (a row that did not fold: its
/// drafts' deltas, its state after accept), fp32-accurate with either state dtype. folded: a row that folded: its
/// stored checkpoint, its drafts' deltas and its state, which with bf16 checkpoints start from a fold that the kernel
/// (from fp32) and the reference (from float64) may round to neighbouring bf16 values.
struct KVBufferErrors {
  double shared = 0, folded = 0;
  std::string shared_at;  ///< which value holds the largest shared error (row, quantity)
  void add(bool from_fold, double err, const std::string& what) {
    double& e = from_fold ? folded : shared;
    if (!from_fold && err > shared) shared_at = what;
    e = std::max(e, err);
  }
};

/// The reference's verify of `drafts` from `slot` as the kernel runs it with checkpoints of `d`: a due slot (B
/// entries or more) is folded first and its checkpoint stored as `d` (ref::kvbuffer_flush), so that the drafts read
/// the rounded checkpoint, as the bf16 kernel's do; with fp32 the same as ref::kvbuffer_verify alone. Returns whether
/// the slot was due.
bool reference_verify(const GdnShape& s, int B, StateDtype d, const std::vector<ref::TokenPrepared>& drafts,
                      ref::KVBufferSlot& slot, std::vector<double>& o, std::vector<ref::BufferEntry>& entries) {
  const bool due = int(slot.entries.size()) >= B;
  if (due) ref::kvbuffer_flush(s, slot, d);
  ref::kvbuffer_verify(s, B, drafts, slot, o, entries);
  return due;
}

/// The bf16-checkpoint part of the verdict: the shared values within the fp32 bar, and no stored element of a folded
/// checkpoint (or, with bf16 deltas, of the drafts' stored deltas) more than one bf16 unit off. "" or one line.
std::string bf16_verdict(const KVBufferErrors& e, const Bf16StateUnits& units, const Bf16StateUnits& deltas) {
  if (!(e.shared <= tol::kStateFp32))
    return fmt::format("state error {:.3g} above {:.1g} in values computed from the stored bf16 checkpoint ({})",
                       e.shared, tol::kStateFp32, e.shared_at);
  if (units.more > 0)
    return fmt::format("{} of {} stored checkpoint elements more than one bf16 unit from the reference's fold",
                       units.more, units.compared());
  if (deltas.more > 0)
    return fmt::format("{} of {} stored bf16 draft deltas more than one bf16 unit from the reference's", deltas.more,
                       deltas.compared());
  return "";
}

}  // namespace

int verify_check_row(const VerifyProblem& p, const std::vector<int32_t>& fill) {
  const int N = p.config().batch, B = p.config().buffer_size;
  const std::vector<int32_t>& a = p.accepted();
  if (p.kvbuffer()) {
    auto first = [&](auto pred) {
      for (int r = 0; r < N; ++r)
        if (pred(fill[p.host_slots()[r]] + a[r])) return r;
      return -1;
    };
    const int overflow = first([&](int end) { return end > B; });
    return overflow >= 0 ? overflow : first([&](int end) { return end == B; });
  }
  for (int r = 0; r < N; ++r)
    if (a[r] != a[0] && a[r] != a[N - 1]) return r;
  return -1;
}

VerifyCheck check_verify_step(const VerifyProblem& p, cudaStream_t stream) {
  if (p.raw()) return VerifyCheck{check_raw_verify_step(p, stream), {}};
  const VerifyConfig& cfg = p.config();
  const GdnShape& s = cfg.shape;
  const int N = cfg.batch, m = cfg.draft_tokens, HV = s.heads_v, B = cfg.buffer_size;
  const size_t vv = size_t(HV) * s.head_dim_v, se = size_t(s.state_elems());
  const bool kvb = p.kvbuffer(), bf16_states = cfg.state_dtype == StateDtype::bf16;
  // bf16 deltas (with bf16 checkpoints only): the drafts' deltas are stored rounded; the reference rounds its own the
  // same way before it accepts them, and what the device and the reference then compute from them (the stored
  // deltas, the state after accept) is held to the bf16 bar, as a fold's values are.
  const bool bf16_deltas = kvb && cfg.delta_dtype == StateDtype::bf16;
  const size_t delta_bytes = size_t(state_elem_bytes(cfg.delta_dtype));
  const std::vector<int32_t>& slots = p.host_slots();
  const std::vector<int32_t>& accepted = p.accepted();
  const std::vector<int32_t> fill = kvb ? download(p.fill(0), size_t(N)) : std::vector<int32_t>();
  const KVBufferVerifyParams kp = kvb ? p.kvbuffer_verify_params(0) : KVBufferVerifyParams{};
  const TokenInputs in = kvb ? kp.in : p.recurrent_verify_params(0).in;
  const ref::GateParams gp = download_gate_params(in, s);

  // Snapshot the rows' drafts and state before the launches.
  struct RowCase {
    int row = 0, slot = 0, a = 0, n = 0;
    std::vector<ref::TokenPrepared> drafts;
    std::vector<double> state;  // recurrent
    ref::KVBufferSlot buf;      // kvbuffer (its checkpoint: the stored values, bf16 ones widened exactly)
  };
  std::vector<RowCase> cases;
  for (int r : rows_to_check(N, verify_check_row(p, fill))) {
    RowCase c;
    c.row = r;
    c.slot = slots[r];
    c.a = accepted[r];
    for (int i = 0; i < m; ++i) c.drafts.push_back(ref::prepare_token(s, download_token(in, s, size_t(r) * m + i), gp));
    if (kvb) {
      c.n = fill[c.slot];
      c.buf = download_kvbuffer_slot(kp.pool, s, c.slot, c.n);
    } else {
      c.state = download_state(p.state(0), StateDtype::fp32, c.slot * se, se);
    }
    cases.push_back(std::move(c));
  }

  const int cap = kvb ? kp.pool.capacity : 0;
  // Where verify puts the drafts of a row holding n entries in its slot's buffer: after them, or at 0 when it is due.
  auto draft_entry = [&](int slot, int n) { return size_t(slot) * cap + (n >= B ? 0 : n); };
  // Row c's outputs [m][HV][V] within a launch's outputs, and its slot's state materialised from the device's
  // checkpoint and its first `entries` buffer entries.
  auto row_outputs = [&](const std::vector<double>& o, const RowCase& c) {
    const size_t first = size_t(c.row) * m;
    return std::vector<double>(o.begin() + first * vv, o.begin() + (first + m) * vv);
  };
  auto device_state = [&](const RowCase& c, int entries) {
    return ref::kvbuffer_state(s, download_kvbuffer_slot(kp.pool, s, c.slot, entries));
  };
  // The positions that receive the drafts' entries of the rows at positions n(c) hold NaN before a verify (a due
  // row's still hold entries verify reads).
  auto poison_draft_entries = [&](const std::function<int(const RowCase&)>& n_of) {
    const size_t key = size_t(s.heads_qk) * s.head_dim_k;
    for (const RowCase& c : cases) {
      const int n = n_of(c);
      if (n >= B) continue;
      fill_bytes(static_cast<unsigned char*>(kp.pool.deltas) + draft_entry(c.slot, n) * vv * delta_bytes,
                 size_t(m) * vv * delta_bytes, 0xff, stream);
      fill_bytes(kp.pool.log_decay + draft_entry(c.slot, n) * HV, size_t(m) * HV * 4, 0xff, stream);
      fill_bytes(kp.pool.keys + draft_entry(c.slot, n) * key, size_t(m) * key * 2, 0xff, stream);
    }
  };
  VerifyCheck out;
  KVBufferErrors errs;
  // Verifies row c's drafts in the reference from `slot`, which holds n entries, as the kernel does with
  // cfg.state_dtype, and compares the drafts' log-decays the launch wrote, their deltas where `judge_deltas`, and,
  // for a due row, its stored checkpoint; `slot` is left as verify leaves it (a due one folded). The check's second
  // verify re-verifies drafts the buffer already holds, which no serving step does: their deltas are then small
  // differences of nearly equal terms, ill-conditioned, and are not held to the state bar (the state is).
  auto verify_row = [&](const RowCase& c, int n, ref::KVBufferSlot& slot, std::vector<double>& o_ref,
                        std::vector<ref::BufferEntry>& entries, bool judge_deltas) {
    const bool due = reference_verify(s, B, cfg.state_dtype, c.drafts, slot, o_ref, entries);
    if (bf16_deltas)
      for (ref::BufferEntry& e : entries) ref::round_stored_state(e.u, cfg.delta_dtype);  // as the pool stores them
    const size_t at = draft_entry(c.slot, n);
    if (judge_deltas) {
      const std::vector<double> want = concat(entries, &ref::BufferEntry::u);
      const std::vector<double> u = download_state(kp.pool.deltas, cfg.delta_dtype, at * vv, m * vv);
      errs.add(due || bf16_deltas, ref::max_rel_err(want, u, int64_t(m) * HV),
               fmt::format("row {} at {} entries: its drafts' deltas", c.row, n));
      if (bf16_deltas) out.stored_deltas.add(want, u, int64_t(m) * HV);
    }
    const std::string g_bad =
        log_decay_mismatch(concat(entries, &ref::BufferEntry::g),
                           download_double(kp.pool.log_decay + at * HV, size_t(m) * HV),
                           fmt::format("draft log-decay [m, HV] of row {}", c.row));
    if (!g_bad.empty() && out.detail.empty()) out.detail = g_bad;
    if (due) {
      const std::vector<double> stored = download_state(kp.pool.checkpoint, cfg.state_dtype, c.slot * se, se);
      errs.add(true, ref::max_rel_err(slot.checkpoint, stored, HV), "");
      if (bf16_states) out.folded_checkpoints.add(slot.checkpoint, stored, HV);
    }
    return due;
  };

  // Outputs: a row that folded with bf16 checkpoints reads its own rounded fold, which can sit one bf16 unit from the
  // reference's in a few elements: its outputs, like its drafts' deltas, are held to 2^-7 (DESIGN.md section 4);
  // every other row's to the output tolerance (KVBuffer verify's own for fp32 outputs).
  double o_err_folded = 0.0;
  const auto add_outputs = [&](bool folded_bf16, double err) {
    double& into = folded_bf16 ? o_err_folded : out.o_err;
    into = std::max(into, err);
  };
  const double o_tol = kvb ? tol::verify_output(cfg.o_dtype) : tol::output(cfg.o_dtype);

  if (kvb) poison_draft_entries([](const RowCase& c) { return c.n; });
  else fill_bytes(p.scratch(0), size_t(N) * m * se * 4, 0xff, stream);
  const std::vector<double> o_all =
      outputs_of_poisoned_launch(p.o(0), p.o_bytes_per_set(), cfg.o_dtype, stream,
                                 [&] { p.enqueue_verify_layer(0, stream); }, out.outputs_written);
  // Per row, the state after accept: recurrent, the pool's state; kvbuffer, the materialised state.
  std::vector<std::vector<double>> expected;
  std::vector<ref::KVBufferSlot> accepted_slots;  // kvbuffer: each row's reference slot after its accept
  std::vector<bool> folded;                       // kvbuffer: whether the row folded in the first verify
  for (RowCase& c : cases) {
    std::vector<double> o_ref;
    if (!kvb) {
      std::vector<double> inter;
      ref::recurrent_verify(s, c.drafts, c.state, o_ref, inter);
      const std::vector<double> got = download_double(p.scratch(0) + size_t(c.slot) * m * se, m * se);
      errs.add(false, ref::max_rel_err(inter, got, int64_t(m) * HV), "");
      expected.push_back(c.a == 0 ? c.state
                                  : std::vector<double>(inter.begin() + (c.a - 1) * se, inter.begin() + c.a * se));
    } else {
      std::vector<ref::BufferEntry> entries;
      ref::KVBufferSlot after = c.buf;
      folded.push_back(verify_row(c, c.n, after, o_ref, entries, true));
      ref::kvbuffer_accept(s, B, entries, c.a, after);
      expected.push_back(ref::kvbuffer_state(s, after));
      accepted_slots.push_back(std::move(after));
    }
    add_outputs(kvb && bf16_states && folded.back(), ref::max_rel_err(o_ref, row_outputs(o_all, c), int64_t(m) * HV));
    ++out.rows;
  }

  p.enqueue_accept_layer(0, stream);
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < cases.size(); ++i) {
    const RowCase& c = cases[i];
    const std::vector<double> got = kvb ? device_state(c, fill_after_commit(c.n, c.a, B))
                                        : download_state(p.state(0), StateDtype::fp32, c.slot * se, se);
    errs.add(kvb && (folded[i] || bf16_deltas), ref::max_rel_err(expected[i], got, HV),
             fmt::format("row {} at {} entries: its state after accepting {}", c.row, c.n, c.a));
  }
  if (kvb) {
    // The step's commit, then the next verify of the same drafts: a row the commit took to B entries or more is
    // due, and that verify folds its entries into the checkpoint before it writes the new drafts at position 0.
    p.enqueue_advance_positions(0, stream);
    KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<int32_t> fill_next = download(p.fill(0), size_t(N));
    for (size_t i = 0; i < cases.size(); ++i) {
      const RowCase& c = cases[i];
      const int want = fill_after_commit(c.n, c.a, B), n = fill_next[c.slot];
      if (n != want && out.detail.empty())
        out.detail = fmt::format("commit put row {} at position {} (expected {})", c.row, n, want);
      // bf16: start from what the device holds, so that a fold's rounding difference is not carried along.
      if (bf16_states) accepted_slots[i] = download_kvbuffer_slot(kp.pool, s, c.slot, n);
    }
    poison_draft_entries([&](const RowCase& c) { return fill_next[c.slot]; });
    bool written_next = false;
    const std::vector<double> o_next =
        outputs_of_poisoned_launch(p.o(0), p.o_bytes_per_set(), cfg.o_dtype, stream,
                                   [&] { p.enqueue_verify_layer(0, stream); }, written_next);
    out.outputs_written = out.outputs_written && written_next;
    for (size_t i = 0; i < cases.size(); ++i) {
      const RowCase& c = cases[i];
      const int n = fill_next[c.slot];
      ref::KVBufferSlot& slot = accepted_slots[i];
      std::vector<double> o_ref;
      std::vector<ref::BufferEntry> entries;
      const bool due = verify_row(c, n, slot, o_ref, entries, false);  // folds a due slot, as the kernel does
      add_outputs(bf16_states && due, ref::max_rel_err(o_ref, row_outputs(o_next, c), int64_t(m) * HV));
      errs.add(due, ref::max_rel_err(ref::kvbuffer_state(s, slot), device_state(c, due ? 0 : n), HV),
               fmt::format("row {} at {} entries: its state after the next verify", c.row, n));
      if (due) ++out.folded_rows;
    }
  }
  out.state_err = std::max(errs.shared, errs.folded);
  if (out.detail.empty())
    out.detail = check_verdict(out.outputs_written, out.state_err, out.o_err, o_tol, tol::state(cfg.state_dtype));
  const double o_tol_folded = tol::folded_bf16_verify_output(cfg.o_dtype);
  if (out.detail.empty() && !(o_err_folded <= o_tol_folded))
    out.detail = fmt::format("output error {:.3g} above {:.3g} in a row that folded its bf16 checkpoint", o_err_folded,
                             o_tol_folded);
  out.o_err = std::max(out.o_err, o_err_folded);
  if (out.detail.empty() && bf16_states) out.detail = bf16_verdict(errs, out.folded_checkpoints, out.stored_deltas);
  return out;
}

}  // namespace kvb
