#include "harness/workloads/raw_decode_check.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "harness/workloads/raw_entry_sets.h"
#include "core/cuda_check.h"
#include "kernels/kvbuffer_raw_launch.h"
#include "reference/kvbuffer_raw_reference.h"
#include "core/tolerances.h"

namespace kvb {

LaunchCheck check_raw_decode_step(const DecodeProblem& p, cudaStream_t stream) {
  const DecodeConfig& cfg = p.config();
  const GdnShape& s = cfg.shape;
  const int N = cfg.batch, B = cfg.buffer_size, HV = s.heads_v;
  const size_t vv = size_t(HV) * s.head_dim_v, se = size_t(s.state_elems());
  const std::vector<int32_t>& slots = p.host_slots();
  const std::vector<int32_t> fill = download(p.fill(0), size_t(N));
  int flushing = -1;
  for (int r = 0; r < N && flushing < 0; ++r)
    if (fill[slots[r]] == B - 1) flushing = r;
  const RawKVBufferDecodeParams rp = p.raw_params(0);
  const ref::GateParams gp = download_gate_params(rp.in, s);

  struct RowCase {
    int row, slot, n;
    ref::TokenRaw tok;
    ref::RawKVBufferSlot buf;
  };
  std::vector<RowCase> cases;
  for (int r : rows_to_check(N, flushing)) {
    const int slot = slots[r];
    cases.push_back({r, slot, fill[slot], download_token(rp.in, s, size_t(r)),
                     download_raw_kvbuffer_slot(rp.pool, s, slot, fill[slot])});
  }

  LaunchCheck out;
  const std::vector<double> o_all = outputs_of_poisoned_launch(
      p.o(0), p.o_bytes_per_set(), cfg.o_dtype, stream, [&] { p.enqueue_layer(0, stream); }, out.outputs_written);
  for (RowCase& c : cases) {
    std::vector<double> o_ref;
    ref::kvbuffer_raw_decode(s, B, gp, c.tok, c.buf, o_ref);
    const std::vector<double> o_got(o_all.begin() + c.row * vv, o_all.begin() + (c.row + 1) * vv);
    out.o_err = std::max(out.o_err, ref::max_rel_err(o_ref, o_got, HV));
    if (c.n + 1 == B) {
      const std::vector<double> got = download_double(rp.pool.checkpoint + c.slot * se, se);
      out.state_err = std::max(out.state_err, ref::max_rel_err(c.buf.checkpoint, got, HV));
    } else {
      const ref::RawKVBufferSlot after = download_raw_kvbuffer_slot(rp.pool, s, c.slot, c.n + 1);
      const ref::TokenRaw& e = after.entries.back();
      if (e.k != c.tok.k || e.v != c.tok.v || e.a != c.tok.a || e.b != c.tok.b)
        out.detail = fmt::format("appended raw entry of row {} differs from its inputs", c.row);
    }
    ++out.rows;
  }
  if (out.detail.empty()) {
    if (!out.outputs_written) out.detail = "some output elements were not written (NaN poison left)";
    else if (!(out.state_err <= tol::kStateFp32))
      out.detail = fmt::format("checkpoint error {:.3g} above {:.1g}", out.state_err, tol::kStateFp32);
    else if (!(out.o_err <= tol::output(cfg.o_dtype)))
      out.detail = fmt::format("output error {:.3g} above {:.1g}", out.o_err, tol::output(cfg.o_dtype));
  }
  return out;
}

}  // namespace kvb
