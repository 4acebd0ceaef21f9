#include "harness/runners/decode_check.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "harness/runners/device_random.h"
#include "kernels/cuda_check.h"
#include "reference/gdn_reference.h"
#include "reference/tolerances.h"

namespace kvb {
namespace {

template <typename T>
std::vector<T> download(const T* src, size_t n) {
  std::vector<T> h(n);
  if (n) KVB_CUDA_CHECK(cudaMemcpy(h.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

std::vector<double> to_double(const std::vector<bf16>& x) {
  std::vector<double> d(x.size());
  for (size_t i = 0; i < x.size(); ++i) d[i] = double(__bfloat162float(x[i]));
  return d;
}
std::vector<double> to_double(const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); }

/// Output rows as double, from bf16 or fp32 bytes; `finite` turns false on any NaN/inf (unwritten poison).
std::vector<double> outputs_to_double(const std::vector<unsigned char>& bytes, OutputDtype dt, bool& finite) {
  std::vector<double> d;
  if (dt == OutputDtype::bf16) {
    const bf16* p = reinterpret_cast<const bf16*>(bytes.data());
    d.resize(bytes.size() / 2);
    for (size_t i = 0; i < d.size(); ++i) d[i] = double(__bfloat162float(p[i]));
  } else {
    const float* p = reinterpret_cast<const float*>(bytes.data());
    d.assign(p, p + bytes.size() / 4);
  }
  finite = std::all_of(d.begin(), d.end(), [](double x) { return std::isfinite(x); });
  return d;
}

/// A state [HV][V][K] (vk) as [HV][K][V].
std::vector<double> vk_to_kv(const std::vector<double>& s, const GdnShape& sh) {
  std::vector<double> t(s.size());
  const int K = sh.head_dim_k, V = sh.head_dim_v;
  for (int h = 0; h < sh.heads_v; ++h)
    for (int v = 0; v < V; ++v)
      for (int k = 0; k < K; ++k) t[(size_t(h) * K + k) * V + v] = s[(size_t(h) * V + v) * K + k];
  return t;
}

}  // namespace

DecodeCheck check_decode_step(const DecodeProblem& p, cudaStream_t stream) {
  const DecodeConfig& cfg = p.config();
  const GdnShape& s = cfg.shape;
  const int N = cfg.batch, H = s.heads_qk, HV = s.heads_v, K = s.head_dim_k, V = s.head_dim_v;
  const size_t qk = size_t(H) * K, vv = size_t(HV) * V, se = size_t(s.state_elems());
  const bool kvb = cfg.variant == DecodeVariant::kvbuffer;
  const int B = cfg.buffer_size;
  const std::vector<int32_t>& slots = p.host_slots();
  const std::vector<int32_t> fill = kvb ? download(p.fill(0), size_t(N)) : std::vector<int32_t>();

  std::vector<int> rows = {0, N - 1};
  if (kvb)
    for (int r = 0; r < N; ++r)
      if (fill[slots[r]] == B - 1) {
        rows.push_back(r);
        break;
      }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());

  ref::GateParams gp;
  gp.A_log = to_double(download(p.A_log(0), HV));
  gp.dt_bias = to_double(download(p.dt_bias(0), HV));
  gp.scale = 1.0 / std::sqrt(double(K));
  const RecurrentDecodeParams rp = kvb ? RecurrentDecodeParams{} : p.recurrent_params(0);
  const KVBufferDecodeParams kp = kvb ? p.kvbuffer_params(0) : KVBufferDecodeParams{};
  const KVBufferPool& pool = kp.pool;

  // Snapshot the rows' inputs and state before the launch.
  struct RowCase {
    int row, slot, n = 0;
    ref::TokenRaw tok;
    std::vector<double> state;  // recurrent state or checkpoint, kv order
    ref::KVBufferSlot buf;
  };
  std::vector<RowCase> cases;
  for (int r : rows) {
    RowCase c;
    c.row = r;
    c.slot = slots[r];
    c.tok.q = to_double(download(p.q(0) + r * qk, qk));
    c.tok.k = to_double(download(p.k(0) + r * qk, qk));
    c.tok.v = to_double(download(p.v(0) + r * vv, vv));
    c.tok.a = to_double(download(p.a(0) + size_t(r) * HV, HV));
    c.tok.b = to_double(download(p.b(0) + size_t(r) * HV, HV));
    if (!kvb) {
      c.state = to_double(download(rp.state + c.slot * se, se));
      if (cfg.layout == StateLayout::vk) c.state = vk_to_kv(c.state, s);
    } else {
      c.n = fill[c.slot];
      c.buf.checkpoint = to_double(download(pool.checkpoint + c.slot * se, se));
      for (int j = 0; j < c.n; ++j) {
        const size_t e = size_t(c.slot) * pool.capacity + j;
        const std::vector<double> raw = to_double(download(pool.keys + e * qk, qk));
        ref::BufferEntry be;
        for (int h = 0; h < H; ++h) {
          const std::vector<double> kh = ref::l2_normalize(raw.data() + size_t(h) * K, K);
          be.k_hat.insert(be.k_hat.end(), kh.begin(), kh.end());
        }
        be.u = to_double(download(pool.deltas + e * vv, vv));
        be.g = to_double(download(pool.log_decay + e * HV, HV));
        c.buf.entries.push_back(std::move(be));
      }
    }
    cases.push_back(std::move(c));
  }

  fill_bytes(p.o(0), p.o_bytes_per_set(), 0xff, stream);  // NaN in bf16 and fp32
  p.enqueue_layer(0, stream);
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));

  DecodeCheck out;
  bool finite = true;
  const std::vector<double> o_all =
      outputs_to_double(download(static_cast<const unsigned char*>(p.o(0)), p.o_bytes_per_set()), cfg.o_dtype, finite);
  out.outputs_written = finite;
  const double tol_o = tol::output(cfg.o_dtype);
  for (RowCase& c : cases) {
    const ref::TokenPrepared t = ref::prepare_token(s, c.tok, gp);
    std::vector<double> o_ref;
    std::vector<double> o_got(o_all.begin() + c.row * vv, o_all.begin() + (c.row + 1) * vv);
    if (!kvb) {
      ref::recurrent_decode(s, t, c.state, o_ref);
      std::vector<double> got = to_double(download(rp.state + c.slot * se, se));
      if (cfg.layout == StateLayout::vk) got = vk_to_kv(got, s);
      out.state_err = std::max(out.state_err, ref::max_rel_err(c.state, got, HV));
    } else {
      ref::kvbuffer_decode(s, B, t, c.buf, o_ref);
      if (c.n + 1 == B) {
        const std::vector<double> got = to_double(download(pool.checkpoint + c.slot * se, se));
        out.state_err = std::max(out.state_err, ref::max_rel_err(c.buf.checkpoint, got, HV));
      } else {
        const size_t e = size_t(c.slot) * pool.capacity + c.n;
        const std::vector<double> u = to_double(download(pool.deltas + e * vv, vv));
        out.state_err = std::max(out.state_err, ref::max_rel_err(c.buf.entries.back().u, u, HV));
        const std::vector<double> g = to_double(download(pool.log_decay + e * HV, HV));
        const std::vector<double> key = to_double(download(pool.keys + e * qk, qk));
        for (int h = 0; h < HV; ++h)
          if (std::abs(g[h] - t.g[h]) > 1e-5 * std::max(1.0, std::abs(t.g[h])))
            out.detail = fmt::format("appended log-decay of row {} head {} is {} (reference {})", c.row, h, g[h], t.g[h]);
        if (key != c.tok.k) out.detail = fmt::format("appended key of row {} differs from the input key", c.row);
      }
    }
    out.o_err = std::max(out.o_err, ref::max_rel_err(o_ref, o_got, HV));
    ++out.rows;
  }
  if (!out.outputs_written) out.detail = "some output elements were not written (NaN poison left)";
  else if (!(out.state_err <= tol::kStateFp32))
    out.detail = fmt::format("state error {:.3g} above {:.1g}", out.state_err, tol::kStateFp32);
  else if (!(out.o_err <= tol_o))
    out.detail = fmt::format("output error {:.3g} above {:.1g}", out.o_err, tol_o);
  return out;
}

}  // namespace kvb
