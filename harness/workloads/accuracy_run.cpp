#include "harness/workloads/accuracy_run.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "harness/workloads/check_support.h"
#include "harness/workloads/device_tokens.h"
#include "harness/workloads/problem_setup.h"
#include "core/cuda_check.h"
#include "kernels/gdn_params.h"
#include "reference/gdn_reference.h"
#include "reference/qwen3_next_inputs.h"

namespace kvb {

std::vector<AccuracyPoint> run_accuracy(const AccuracyConfig& cfg) {
  const GdnShape& s = cfg.shape;
  if (auto e = validate_shape(s); !e.empty()) throw std::invalid_argument(e);
  if (cfg.batch < 1 || cfg.tokens < 1 || cfg.buffer_size < 1)
    throw std::invalid_argument("accuracy run: batch, tokens and buffer_size must be >= 1");
  const int N = cfg.batch, HV = s.heads_v, B = cfg.buffer_size, cap = std::max(B - 1, 1);
  const size_t se = size_t(s.state_elems()), vv = size_t(HV) * s.head_dim_v;
  ref::Qwen3NextInputs gen(s, cfg.seed);
  const ref::GateParams gp = gen.gate_params();

  std::vector<double> init;
  for (int r = 0; r < N; ++r) {
    const std::vector<double> st = gen.state();
    init.insert(init.end(), st.begin(), st.end());
  }
  DeviceBuffer<unsigned char> states = upload_state(init, cfg.state_dtype);
  std::vector<int32_t> slot_h(N);
  for (int r = 0; r < N; ++r) slot_h[r] = r;
  const DeviceBuffer<int32_t> slot = upload(slot_h);
  DeviceBuffer<float> o(N * vv);
  DeviceBuffer<bf16> keys;
  DeviceBuffer<float> deltas, log_decay;
  DeviceBuffer<int32_t> fill;
  KVBufferPool pool;
  if (cfg.kvbuffer) {
    keys = DeviceBuffer<bf16>(size_t(N) * cap * s.heads_qk * s.head_dim_k);
    deltas = DeviceBuffer<float>(size_t(N) * cap * vv);
    log_decay = DeviceBuffer<float>(size_t(N) * cap * HV);
    fill = upload(std::vector<int32_t>(N, 0));
    pool = KVBufferPool{states.get(), keys.get(), deltas.get(), log_decay.get(), fill.get(), N, cap, B};
    pool.state_dtype = cfg.state_dtype;
  }

  // The reference starts from the states as stored (their initial rounding is not drift).
  std::vector<std::vector<double>> ref_state(N);
  std::vector<ref::KVBufferSlot> ref_slot(N);
  for (int r = 0; r < N; ++r) {
    std::vector<double> st = download_state(states.get(), cfg.state_dtype, size_t(r) * se, se);
    if (cfg.kvbuffer) ref_slot[r].checkpoint = std::move(st);
    else ref_state[r] = std::move(st);
  }

  std::vector<AccuracyPoint> out;
  double o_err = 0;
  const std::vector<int>& marks = accuracy_checkpoints();
  for (int t = 1; t <= cfg.tokens; ++t) {
    const std::vector<ref::TokenRaw> toks = gen.tokens(N);
    const DeviceTokens dt(toks, gp);
    KVB_CUDA_CHECK(cudaMemset(o.get(), 0xff, o.bytes()));  // NaN: an output left unwritten shows as an error
    if (cfg.kvbuffer) {
      auto p = token_launch<KVBufferDecodeParams>(s, N, dt.inputs(), slot.get(), o.get(), OutputDtype::fp32);
      p.pool = pool;
      KVB_CUDA_CHECK(launch_kvbuffer_decode(p, nullptr));
      KVB_CUDA_CHECK(launch_kvbuffer_advance(fill.get(), slot.get(), N, B, nullptr));
    } else {
      auto p = token_launch<RecurrentDecodeParams>(s, N, dt.inputs(), slot.get(), o.get(), OutputDtype::fp32);
      p.state = states.get();
      p.state_dtype = cfg.state_dtype;
      p.num_slots = N;
      KVB_CUDA_CHECK(launch_recurrent_decode(p, nullptr));
    }
    const std::vector<float> o_got = download(o.get(), o.size());
    for (int r = 0; r < N; ++r) {
      const ref::TokenPrepared tp = ref::prepare_token(s, toks[r], gp);
      std::vector<double> o_ref;
      if (cfg.kvbuffer) ref::kvbuffer_decode(s, B, tp, ref_slot[r], o_ref);
      else ref::recurrent_decode(s, tp, ref_state[r], o_ref);
      const std::vector<double> got(o_got.begin() + r * vv, o_got.begin() + (r + 1) * vv);
      o_err = std::max(o_err, ref::max_rel_err(o_ref, got, HV));
    }
    const bool mark = std::find(marks.begin(), marks.end(), t) != marks.end() || t == cfg.tokens;
    if (mark) {
      AccuracyPoint pt;
      pt.tokens = t;
      pt.o_err = o_err;
      const std::vector<int32_t> fill_h = cfg.kvbuffer ? download(fill.get(), fill.size()) : std::vector<int32_t>();
      for (int r = 0; r < N; ++r) {
        if (cfg.kvbuffer) {
          const ref::KVBufferSlot got = download_kvbuffer_slot(pool, s, r, fill_h[r], true);
          if (got.entries.size() != ref_slot[r].entries.size())
            throw std::runtime_error("accuracy run: row " + std::to_string(r) + " holds " +
                                     std::to_string(got.entries.size()) + " entries, the reference " +
                                     std::to_string(ref_slot[r].entries.size()));
          pt.state_err = std::max(pt.state_err,
                                  ref::max_rel_err(ref::kvbuffer_state(s, ref_slot[r]), ref::kvbuffer_state(s, got), HV));
        } else {
          const std::vector<double> got = download_state(states.get(), cfg.state_dtype, size_t(r) * se, se);
          pt.state_err = std::max(pt.state_err, ref::max_rel_err(ref_state[r], got, HV));
        }
      }
      out.push_back(pt);
    }
  }
  return out;
}

}  // namespace kvb
