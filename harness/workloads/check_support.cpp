#include "harness/workloads/check_support.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "harness/workloads/device_random.h"
#include "core/cuda_check.h"
#include "core/tolerances.h"
#include "reference/bf16.h"

namespace kvb {

std::vector<double> to_double(const std::vector<bf16>& x) {
  std::vector<double> d(x.size());
  for (size_t i = 0; i < x.size(); ++i) d[i] = double(__bfloat162float(x[i]));
  return d;
}

std::vector<double> to_double(const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); }

std::vector<double> download_double(const float* p, size_t n) { return to_double(download(p, n)); }

std::vector<double> outputs_of_poisoned_launch(void* o, size_t bytes, OutputDtype dt, cudaStream_t stream,
                                               const std::function<void()>& launch, bool& written) {
  fill_bytes(o, bytes, 0xff, stream);  // NaN in bf16 and fp32
  launch();
  KVB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<double> d = dt == OutputDtype::bf16
                                    ? to_double(download(static_cast<const bf16*>(o), bytes / 2))
                                    : to_double(download(static_cast<const float*>(o), bytes / 4));
  written = std::all_of(d.begin(), d.end(), [](double x) { return std::isfinite(x); });
  return d;
}

ref::TokenRaw download_token(const TokenInputs& in, const GdnShape& s, size_t index) {
  const size_t qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(s.heads_v) * s.head_dim_v, HV = s.heads_v;
  ref::TokenRaw t;
  t.q = to_double(download(in.q + index * qk, qk));
  t.k = to_double(download(in.k + index * qk, qk));
  t.v = to_double(download(in.v + index * vv, vv));
  t.a = to_double(download(in.a + index * HV, HV));
  t.b = to_double(download(in.b + index * HV, HV));
  return t;
}

std::vector<double> download_state(const void* p, StateDtype d, size_t first, size_t n) {
  if (d == StateDtype::bf16) return to_double(download(static_cast<const bf16*>(p) + first, n));
  return download_double(static_cast<const float*>(p) + first, n);
}

DeviceBuffer<unsigned char> upload_state(const std::vector<double>& x, StateDtype d) {
  std::vector<unsigned char> bytes(x.size() * size_t(state_elem_bytes(d)));
  for (size_t i = 0; i < x.size(); ++i) {
    if (d == StateDtype::bf16) {
      const uint16_t b = ref::bf16_bits(static_cast<float>(x[i]));
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    } else {
      const float f = static_cast<float>(x[i]);
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    }
  }
  return upload(bytes);
}

ref::GateParams download_gate_params(const TokenInputs& in, const GdnShape& s) {
  ref::GateParams gp;
  gp.A_log = download_double(in.A_log, size_t(s.heads_v));
  gp.dt_bias = download_double(in.dt_bias, size_t(s.heads_v));
  gp.scale = 1.0 / std::sqrt(double(s.head_dim_k));
  return gp;
}

ref::KVBufferSlot download_kvbuffer_slot(const KVBufferPool& pool, const GdnShape& s, int slot, int entries,
                                         bool with_checkpoint) {
  const int H = s.heads_qk, K = s.head_dim_k, HV = s.heads_v;
  const size_t qk = size_t(H) * K, vv = size_t(HV) * s.head_dim_v, se = size_t(s.state_elems());
  ref::KVBufferSlot buf;
  if (with_checkpoint) buf.checkpoint = download_state(pool.checkpoint, pool.state_dtype, size_t(slot) * se, se);
  for (int j = 0; j < entries; ++j) {
    const size_t e = size_t(slot) * pool.capacity + j;
    const std::vector<double> raw = to_double(download(pool.keys + e * qk, qk));
    ref::BufferEntry be;
    for (int h = 0; h < H; ++h) {
      const std::vector<double> kh = ref::l2_normalize(raw.data() + size_t(h) * K, K);
      be.k_hat.insert(be.k_hat.end(), kh.begin(), kh.end());
    }
    be.u = download_state(pool.deltas, pool.delta_dtype, e * vv, vv);
    be.g = download_double(pool.log_decay + e * HV, size_t(HV));
    buf.entries.push_back(std::move(be));
  }
  return buf;
}

std::string log_decay_mismatch(const std::vector<double>& want, const std::vector<double>& got,
                               const std::string& what) {
  if (want.size() != got.size()) return fmt::format("{}: {} values, reference {}", what, got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-5 * std::max(1.0, std::abs(want[i]))))
      return fmt::format("{} element {} is {} (reference {})", what, i, got[i], want[i]);
  return "";
}

void Bf16StateUnits::add(const std::vector<double>& want_rounded, const std::vector<double>& got, int64_t heads) {
  if (want_rounded.size() != got.size() || heads < 1 || got.size() % size_t(heads) != 0)
    throw std::invalid_argument(fmt::format("Bf16StateUnits: {} values against {} reference values in {} heads",
                                            got.size(), want_rounded.size(), heads));
  const size_t per_head = got.size() / size_t(heads);
  for (size_t h0 = 0; h0 < got.size(); h0 += per_head) {
    double head_max = 0;
    for (size_t i = h0; i < h0 + per_head; ++i) head_max = std::max(head_max, std::abs(want_rounded[i]));
    for (size_t i = h0; i < h0 + per_head; ++i) {
      if (got[i] == want_rounded[i]) {
        ++equal;
        continue;
      }
      if (!std::isfinite(got[i])) {
        ++more;
        continue;
      }
      // One unit in the last place of the larger magnitude: 2^(exponent - 7), 8 significant bits (0 for zero).
      const double mag = std::max(std::abs(got[i]), std::abs(want_rounded[i]));
      const double ulp = mag > 0 ? std::ldexp(1.0, std::ilogb(mag) - 7) : 0.0;
      (std::abs(got[i] - want_rounded[i]) <= ulp + tol::kStateFp32 * head_max ? one : more) += 1;
    }
  }
}

std::string check_verdict(bool outputs_written, double state_err, double o_err, double tol_o, double tol_state) {
  if (!outputs_written) return "some output elements were not written (NaN poison left)";
  if (!(state_err <= tol_state)) return fmt::format("state error {:.3g} above {:.1g}", state_err, tol_state);
  if (!(o_err <= tol_o)) return fmt::format("output error {:.3g} above {:.1g}", o_err, tol_o);
  return "";
}

std::vector<int> rows_to_check(int rows, int extra) {
  std::vector<int> r = {0, rows - 1};
  if (extra >= 0 && extra < rows) r.push_back(extra);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

}  // namespace kvb
