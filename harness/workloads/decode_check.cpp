#include "harness/workloads/decode_check.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "harness/workloads/check_support.h"
#include "harness/workloads/raw_decode_check.h"
#include "core/cuda_check.h"
#include "reference/gdn_reference.h"
#include "core/tolerances.h"

namespace kvb {

DecodeCheck check_decode_step(const DecodeProblem& p, cudaStream_t stream) {
  const DecodeConfig& cfg = p.config();
  if (cfg.variant == DecodeVariant::kvbuffer && cfg.form == BufferForm::raw) return check_raw_decode_step(p, stream);
  const GdnShape& s = cfg.shape;
  const int N = cfg.batch, H = s.heads_qk, HV = s.heads_v, K = s.head_dim_k, V = s.head_dim_v;
  const size_t qk = size_t(H) * K, vv = size_t(HV) * V, se = size_t(s.state_elems());
  const bool kvb = cfg.variant == DecodeVariant::kvbuffer;
  const int B = cfg.buffer_size;
  const std::vector<int32_t>& slots = p.host_slots();
  const std::vector<int32_t> fill = kvb ? download(p.fill(0), size_t(N)) : std::vector<int32_t>();

  int flushing = -1;
  if (kvb)
    for (int r = 0; r < N && flushing < 0; ++r)
      if (fill[slots[r]] == B - 1) flushing = r;

  const RecurrentDecodeParams rp = kvb ? RecurrentDecodeParams{} : p.recurrent_params(0);
  const KVBufferDecodeParams kp = kvb ? p.kvbuffer_params(0) : KVBufferDecodeParams{};
  const KVBufferPool& pool = kp.pool;
  const TokenInputs in = kvb ? kp.in : rp.in;
  const ref::GateParams gp = download_gate_params(in, s);

  // Snapshot the rows' inputs and state before the launch.
  struct RowCase {
    int row, slot, n = 0;
    ref::TokenRaw tok;
    std::vector<double> state;  // recurrent state or checkpoint, kv order
    ref::KVBufferSlot buf;
  };
  std::vector<RowCase> cases;
  for (int r : rows_to_check(N, flushing)) {
    RowCase c;
    c.row = r;
    c.slot = slots[r];
    c.tok = download_token(in, s, size_t(r));
    if (!kvb) {
      c.state = download_state(rp.state, rp.state_dtype, c.slot * se, se);
      if (cfg.layout == StateLayout::vk) c.state = ref::vk_to_kv(s, c.state);
    } else {
      c.n = fill[c.slot];
      // Stateless: S0 = 0 and no checkpoint row yet; a flush materialises it at the row's slot.
      c.buf = download_kvbuffer_slot(pool, s, c.slot, c.n, !p.stateless());
    }
    cases.push_back(std::move(c));
  }

  DecodeCheck out;
  const std::vector<double> o_all = outputs_of_poisoned_launch(
      p.o(0), p.o_bytes_per_set(), cfg.o_dtype, stream, [&] { p.enqueue_layer(0, stream); }, out.outputs_written);
  const double tol_o = tol::output(cfg.o_dtype);
  for (RowCase& c : cases) {
    const ref::TokenPrepared t = ref::prepare_token(s, c.tok, gp);
    std::vector<double> o_ref;
    std::vector<double> o_got(o_all.begin() + c.row * vv, o_all.begin() + (c.row + 1) * vv);
    if (!kvb) {
      ref::recurrent_decode(s, t, c.state, o_ref, cfg.state_dtype);
      std::vector<double> got = download_state(rp.state, rp.state_dtype, c.slot * se, se);
      if (cfg.layout == StateLayout::vk) got = ref::vk_to_kv(s, got);
      out.state_err = std::max(out.state_err, ref::max_rel_err(c.state, got, HV));
    } else {
      ref::kvbuffer_decode(s, B, t, c.buf, o_ref, cfg.state_dtype);
      if (c.n + 1 == B) {
        const std::vector<double> got = download_state(pool.checkpoint, pool.state_dtype, c.slot * se, se);
        out.state_err = std::max(out.state_err, ref::max_rel_err(c.buf.checkpoint, got, HV));
      } else {
        const size_t e = size_t(c.slot) * pool.capacity + c.n;
        const std::vector<double> u = download_double(pool.fp32_deltas() + e * vv, vv);
        out.state_err = std::max(out.state_err, ref::max_rel_err(c.buf.entries.back().u, u, HV));
        const std::string g_bad = log_decay_mismatch(t.g, download_double(pool.log_decay + e * HV, size_t(HV)),
                                                     fmt::format("appended log-decay [HV] of row {}", c.row));
        if (!g_bad.empty()) out.detail = g_bad;
        const std::vector<double> key = to_double(download(pool.keys + e * qk, qk));
        if (key != c.tok.k) out.detail = fmt::format("appended key of row {} differs from the input key", c.row);
      }
    }
    out.o_err = std::max(out.o_err, ref::max_rel_err(o_ref, o_got, HV));
    ++out.rows;
  }
  if (out.detail.empty())
    out.detail = check_verdict(out.outputs_written, out.state_err, out.o_err, tol_o, tol::state(cfg.state_dtype));
  return out;
}

}  // namespace kvb
