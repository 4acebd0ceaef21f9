#include "harness/workloads/raw_verify_check.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/tolerances.h"
#include "harness/workloads/raw_entry_sets.h"
#include "byte_model/verify_bytes.h"
#include "harness/workloads/verify_check.h"
#include "core/cuda_check.h"
#include "reference/kvbuffer_raw_reference.h"
#include "core/tolerances.h"

namespace kvb {
namespace {

/// "" when every raw entry of `got` (k, v, a, b) equals the reference's `want` exactly, else the reason.
std::string entries_mismatch(const ref::RawKVBufferSlot& want, const ref::RawKVBufferSlot& got, int row) {
  for (size_t j = 0; j < want.entries.size(); ++j) {
    const ref::TokenRaw &w = want.entries[j], &g = got.entries[j];
    if (g.k != w.k || g.v != w.v || g.a != w.a || g.b != w.b)
      return fmt::format("raw entry {} of row {} after accept differs from the reference's", j, row);
  }
  return "";
}

}  // namespace

LaunchCheck check_raw_verify_step(const VerifyProblem& p, cudaStream_t stream) {
  const VerifyConfig& cfg = p.config();
  const GdnShape& s = cfg.shape;
  const int N = cfg.batch, m = cfg.draft_tokens, HV = s.heads_v, B = cfg.buffer_size;
  const size_t vv = size_t(HV) * s.head_dim_v;
  const std::vector<int32_t> fill = download(p.fill(0), size_t(N));
  const RawKVBufferVerifyParams rp = p.raw_verify_params(0);
  const ref::GateParams gp = download_gate_params(rp.in, s);

  // Snapshot the rows' drafts and buffers before the launches.
  struct RowCase {
    int row = 0, slot = 0, a = 0, n = 0;
    std::vector<ref::TokenRaw> drafts;
    ref::RawKVBufferSlot buf;
  };
  std::vector<RowCase> cases;
  for (int r : rows_to_check(N, verify_check_row(p, fill))) {
    RowCase c;
    c.row = r;
    c.slot = p.host_slots()[r];
    c.a = p.accepted()[r];
    c.n = fill[c.slot];
    for (int i = 0; i < m; ++i) c.drafts.push_back(download_token(rp.in, s, size_t(r) * m + i));
    c.buf = download_raw_kvbuffer_slot(rp.pool, s, c.slot, c.n);
    cases.push_back(std::move(c));
  }

  LaunchCheck out;
  const std::vector<double> o_all =
      outputs_of_poisoned_launch(p.o(0), p.o_bytes_per_set(), cfg.o_dtype, stream,
                                 [&] { p.enqueue_verify_layer(0, stream); }, out.outputs_written);
  for (const RowCase& c : cases) {
    std::vector<double> o_ref;
    ref::kvbuffer_raw_verify(s, gp, c.drafts, c.buf, o_ref);
    const size_t first = size_t(c.row) * m;
    const std::vector<double> o_got(o_all.begin() + first * vv, o_all.begin() + (first + m) * vv);
    out.o_err = std::max(out.o_err, ref::max_rel_err(o_ref, o_got, int64_t(m) * HV));
    ++out.rows;
  }

  p.enqueue_accept_layer(0, stream);
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (const RowCase& c : cases) {
    ref::RawKVBufferSlot want = c.buf;
    ref::kvbuffer_raw_accept(s, B, gp, c.drafts, c.a, want);
    const int n_after = fill_after_accept(c.n, c.a, B);  // 0 after an accept that flushed
    const ref::RawKVBufferSlot got = download_raw_kvbuffer_slot(rp.pool, s, c.slot, n_after);
    std::string bad;
    if (c.n + c.a >= B) out.state_err = std::max(out.state_err, ref::max_rel_err(want.checkpoint, got.checkpoint, HV));
    else if (got.checkpoint != want.checkpoint)
      bad = fmt::format("checkpoint of row {} changed by an accept that does not flush", c.row);
    else bad = entries_mismatch(want, got, c.row);
    if (out.detail.empty()) out.detail = bad;
  }
  if (out.detail.empty())
    out.detail = check_verdict(out.outputs_written, out.state_err, out.o_err, tol::output(cfg.o_dtype),
                               tol::kStateFp32);
  return out;
}

}  // namespace kvb
