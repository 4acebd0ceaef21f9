#include "harness/workloads/device_tokens.h"

namespace kvb {

std::vector<bf16> to_bf16(const std::vector<double>& x) {
  std::vector<bf16> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = __float2bfloat16_rn(float(x[i]));
  return r;
}

DeviceTokens::DeviceTokens(const std::vector<ref::TokenRaw>& rows, const ref::GateParams& gp) {
  std::vector<double> Q, K, Vv, A, B;
  for (const auto& t : rows) {
    Q.insert(Q.end(), t.q.begin(), t.q.end());
    K.insert(K.end(), t.k.begin(), t.k.end());
    Vv.insert(Vv.end(), t.v.begin(), t.v.end());
    A.insert(A.end(), t.a.begin(), t.a.end());
    B.insert(B.end(), t.b.begin(), t.b.end());
  }
  q = upload(to_bf16(Q));
  k = upload(to_bf16(K));
  v = upload(to_bf16(Vv));
  a = upload(to_bf16(A));
  b = upload(to_bf16(B));
  A_log = upload(std::vector<float>(gp.A_log.begin(), gp.A_log.end()));
  dt_bias = upload(std::vector<float>(gp.dt_bias.begin(), gp.dt_bias.end()));
  scale = float(gp.scale);
}

TokenInputs DeviceTokens::inputs() const {
  TokenInputs in;
  in.q = q.get();
  in.k = k.get();
  in.v = v.get();
  in.a = a.get();
  in.b = b.get();
  in.A_log = A_log.get();
  in.dt_bias = dt_bias.get();
  in.scale = scale;
  return in;
}

}  // namespace kvb
