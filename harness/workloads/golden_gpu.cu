// GPU side of `kvb check-golden`: the recurrent kernel and the KVBuffer kernel (B = 4, so flushes land at several
// positions) run token by token on a golden case with its prepared gates, fp32 outputs, and are compared with it.
#include "harness/workloads/golden_gpu.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "core/cuda_check.h"
#include "kernels/gdn_params.h"
#include "reference/gdn_reference.h"
#include "core/tolerances.h"

namespace kvb {
namespace {

constexpr int kGoldenBufferSize = 4;

/// Token t of a [N, T, X] golden tensor as [N, X] in element type T.
template <typename T>
std::vector<T> token_slice(const ref::GoldenTensor& x, int N, int Tn, int t) {
  const int64_t inner = x.numel() / (int64_t(N) * Tn);
  std::vector<T> out(size_t(N) * inner);
  for (int n = 0; n < N; ++n)
    for (int64_t i = 0; i < inner; ++i) {
      const double v = x.values[(size_t(n) * Tn + t) * inner + i];
      if constexpr (std::is_same_v<T, float>) out[n * inner + i] = float(v);
      else out[n * inner + i] = __float2bfloat16_rn(float(v));
    }
  return out;
}

/// Device inputs of one token for every row, with the golden prepared gates.
struct GoldenToken {
  DeviceBuffer<bf16> q, k, v;
  DeviceBuffer<float> g, beta;
  TokenInputs inputs(double scale) const {
    TokenInputs in;
    in.q = q.get();
    in.k = k.get();
    in.v = v.get();
    in.g = g.get();
    in.beta = beta.get();
    in.scale = float(scale);
    return in;
  }
};

GoldenToken golden_token(const ref::GoldenCase& c, int t) {
  GoldenToken tok;
  tok.q = upload(token_slice<bf16>(c.tensor("q"), c.N, c.T, t));
  tok.k = upload(token_slice<bf16>(c.tensor("k"), c.N, c.T, t));
  tok.v = upload(token_slice<bf16>(c.tensor("v"), c.N, c.T, t));
  tok.g = upload(token_slice<float>(c.tensor("g"), c.N, c.T, t));
  tok.beta = upload(token_slice<float>(c.tensor("beta"), c.N, c.T, t));
  return tok;
}

std::vector<float> initial_state(const ref::GoldenCase& c) {
  const size_t n = size_t(c.N) * c.shape.state_elems();
  if (!c.has_initial_state) return std::vector<float>(n, 0.f);
  const auto& v = c.tensor("initial_state").values;
  return std::vector<float>(v.begin(), v.end());
}

std::vector<double> as_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

}  // namespace

std::string golden_gpu_skip_reason(const ref::GoldenCase& c) {
  const std::string why = validate_shape(c.shape);
  return why.empty() ? "" : "the GPU kernels do not take this shape: " + why;
}

std::vector<ref::TensorCheck> check_golden_gpu(const ref::GoldenCase& c) {
  if (const std::string why = golden_gpu_skip_reason(c); !why.empty()) throw std::invalid_argument(c.path + ": " + why);
  const GdnShape& s = c.shape;
  const int N = c.N, Tn = c.T, HV = s.heads_v, V = s.head_dim_v;
  const size_t o_tok = size_t(N) * HV * V;
  std::vector<int32_t> slot_h(N);
  std::iota(slot_h.begin(), slot_h.end(), 0);
  const DeviceBuffer<int32_t> slot = upload(slot_h);
  std::vector<GoldenToken> tokens;
  for (int t = 0; t < Tn; ++t) tokens.push_back(golden_token(c, t));

  std::vector<ref::TensorCheck> checks;
  auto add = [&](const char* tensor, const std::vector<double>& got, int64_t heads, double tol) {
    ref::TensorCheck chk;
    chk.engine = "gpu";
    chk.tensor = tensor;
    chk.tolerance = tol;
    chk.max_rel_err = ref::max_rel_err(c.tensor(tensor).values, got, heads);
    checks.push_back(chk);
  };

  // Recurrent decode, fp32 outputs, every intermediate state kept.
  {
    DeviceBuffer<float> state = upload(initial_state(c));
    DeviceBuffer<float> o(o_tok);
    std::vector<double> o_all(o_tok * Tn), states_all;
    for (int t = 0; t < Tn; ++t) {
      RecurrentDecodeParams p;
      p.shape = s;
      p.batch = N;
      p.in = tokens[t].inputs(c.scale);
      p.state = state.get();
      p.num_slots = N;
      p.slot = slot.get();
      p.o = o.get();
      p.o_dtype = OutputDtype::fp32;
      KVB_CUDA_CHECK(launch_recurrent_decode(p, nullptr));
      const std::vector<float> ot = download(o.get(), o.size());
      for (int n = 0; n < N; ++n)
        std::copy(ot.begin() + size_t(n) * HV * V, ot.begin() + size_t(n + 1) * HV * V,
                  o_all.begin() + (size_t(n) * Tn + t) * HV * V);
      if (c.has("states")) {
        const std::vector<float> st = download(state.get(), state.size());
        states_all.resize(st.size() * Tn);
        const size_t per = size_t(s.state_elems());
        for (int n = 0; n < N; ++n)
          std::copy(st.begin() + n * per, st.begin() + (n + 1) * per, states_all.begin() + (size_t(n) * Tn + t) * per);
      }
    }
    add("o", o_all, int64_t(N) * Tn * HV, tol::kOutputFp32);
    add("final_state", as_double(download(state.get(), state.size())), int64_t(N) * HV, tol::kStateFp32);
    if (c.has("states")) add("states", states_all, int64_t(N) * Tn * HV, tol::kStateFp32);
    for (auto& chk : checks) chk.engine = "gpu-recurrent";
  }

  // KVBuffer decode (delta form, B = 4), then a standalone flush to materialise the final state.
  {
    const int B = kGoldenBufferSize;
    const size_t qk = size_t(s.heads_qk) * s.head_dim_k;
    DeviceBuffer<float> ckpt = upload(initial_state(c));
    DeviceBuffer<bf16> keys(size_t(N) * B * qk);
    DeviceBuffer<float> deltas(size_t(N) * B * HV * V), log_decay(size_t(N) * B * HV);
    DeviceBuffer<int32_t> fill = upload(std::vector<int32_t>(N, 0));
    DeviceBuffer<float> o(o_tok);
    KVBufferPool pool;
    pool.checkpoint = ckpt.get();
    pool.keys = keys.get();
    pool.deltas = deltas.get();
    pool.log_decay = log_decay.get();
    pool.fill = fill.get();
    pool.num_slots = N;
    pool.capacity = B;
    pool.buffer_size = B;
    std::vector<double> o_all(o_tok * Tn);
    for (int t = 0; t < Tn; ++t) {
      KVBufferDecodeParams p;
      p.shape = s;
      p.batch = N;
      p.in = tokens[t].inputs(c.scale);
      p.pool = pool;
      p.slot = slot.get();
      p.o = o.get();
      p.o_dtype = OutputDtype::fp32;
      KVB_CUDA_CHECK(launch_kvbuffer_decode(p, nullptr));
      KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), slot.get(), N, B, nullptr));
      const std::vector<float> ot = download(o.get(), o.size());
      for (int n = 0; n < N; ++n)
        std::copy(ot.begin() + size_t(n) * HV * V, ot.begin() + size_t(n + 1) * HV * V,
                  o_all.begin() + (size_t(n) * Tn + t) * HV * V);
    }
    KVBufferFlushParams f;
    f.shape = s;
    f.count = N;
    f.slot = slot.get();
    f.pool = pool;
    KVB_CUDA_CHECK(launch_kvbuffer_flush(f, nullptr));
    KVB_CUDA_CHECK(launch_kvbuffer_clear(fill.get(), slot.get(), N, nullptr));
    const size_t before = checks.size();
    add("o", o_all, int64_t(N) * Tn * HV, tol::kOutputFp32);
    add("final_state", as_double(download(ckpt.get(), ckpt.size())), int64_t(N) * HV, tol::kStateFp32);
    for (size_t i = before; i < checks.size(); ++i) checks[i].engine = "gpu-kvbuffer";
  }
  KVB_CUDA_CHECK(cudaDeviceSynchronize());
  return checks;
}

}  // namespace kvb
