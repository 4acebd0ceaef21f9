#include "harness/runners/decode_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/runners/axis_checks.h"
#include "harness/runners/decode_check.h"
#include "harness/runners/decode_problem.h"
#include "harness/runners/graph_timer.h"
#include "harness/runners/point_profiler.h"
#include "harness/profile/gpu_clock.h"
#include "harness/profile/l2_flush.h"
#include "harness/profile/nvtx.h"
#include "kernels/byte_model.h"
#include "kernels/cuda_check.h"

namespace kvb {
namespace {

DecodeConfig decode_config(const Point& pt) {
  DecodeConfig c;
  c.variant = pt.get("variant") == "kvbuffer" ? DecodeVariant::kvbuffer : DecodeVariant::recurrent;
  c.batch = int(pt.get_int("batch"));
  c.layers = int(pt.get_int("layers"));
  c.shape.heads_qk = int(pt.get_int("heads_qk"));
  c.shape.heads_v = int(pt.get_int("heads_v"));
  c.shape.head_dim_k = int(pt.get_int("head_dim_k"));
  c.shape.head_dim_v = int(pt.get_int("head_dim_v"));
  c.seed = uint64_t(pt.get_int("seed"));
  if (c.variant == DecodeVariant::kvbuffer) {
    c.buffer_size = int(pt.get_int("buffer_size"));
    c.staggered = pt.get("phase") != "aligned";
  }
  return c;
}

std::string fmt_num(double x) { return fmt::format("{:.6g}", x); }

Row run_decode_point(const Point& pt, SweepContext& ctx) {
  DecodeConfig cfg = decode_config(pt);
  KVB_CUDA_CHECK(cudaSetDevice(ctx.device));
  int l2_bytes = 0;
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, ctx.device));
  const bool hot = ctx.l2_mode == "hot";
  if (hot) {
    cfg.share_pools = true;
  } else {
    // Cold L2: replicate the model until one step's states span at least 3x the L2, so no state is still
    // resident when its layer comes round again.
    const double step_state_bytes = double(cfg.batch) * double(cfg.shape.state_bytes()) * cfg.layers;
    cfg.groups = int(std::clamp(std::ceil(3.0 * l2_bytes / step_state_bytes), 1.0, 16.0));
  }

  ScopedRange point_range(pt.label());
  CudaStream stream;
  DecodeProblem prob(cfg);
  DecodeCheck chk;
  {
    ScopedRange r("check");
    chk = check_decode_step(prob, stream.get());
  }
  if (!chk.pass()) throw std::runtime_error("check failed: " + chk.detail);

  const CudaGraph graph = CudaGraph::capture(stream.get(), [&](cudaStream_t s) { prob.enqueue_step(s); });
  const int cycle = prob.cycle_steps();
  auto replay = [&](int steps) {
    return time_ms(stream.get(), [&](cudaStream_t s) {
      for (int i = 0; i < steps; ++i) graph.launch(s);
    });
  };
  // Warm-up: whole cycles for at least 3 cycles and 30 ms; gives the replay time that sizes a sample.
  double warm_ms = 0;
  int warm_steps = 0;
  {
    ScopedRange r("warm-up");
    while (warm_steps < 3 * cycle || warm_ms < 30.0) {
      warm_ms += replay(cycle);
      warm_steps += cycle;
    }
  }
  const ClockSample clock_before = sample_sm_clock(ctx.device);
  const double step_ms = warm_ms / warm_steps;
  // A sample is a whole number of flush cycles lasting at least 2 ms (event resolution is about 0.5 us).
  const int cycles_per_sample = std::max(1, int(std::ceil(2.0 / (step_ms * cycle))));
  const int steps_per_sample = cycles_per_sample * cycle;
  const double layer_steps_per_sample = double(steps_per_sample) * prob.layer_steps();

  SamplingRule rule;
  rule.min_samples = ctx.min_samples;
  rule.max_seconds = ctx.max_seconds_per_point;
  rule.target_noise_pct = ctx.target_noise_pct;
  std::unique_ptr<L2Flusher> flusher;
  if (!hot) flusher = std::make_unique<L2Flusher>();
  SampleStats st;
  {
    ScopedRange r("timing");
    st = sample_until(
        [&] {
          if (flusher) flusher->flush(stream.get());  // untimed: no state resident when the sample starts
          return replay(steps_per_sample) * 1e3 / layer_steps_per_sample;
        },
        rule);
  }
  const ClockSample clock_after = sample_sm_clock(ctx.device);
  flusher.reset();

  // DRAM bytes of one whole flush cycle, from the same starting positions on every CUPTI pass.
  RangeMeasurement dram;
  dram.status.reason = "skipped (--no-cupti)";
  if (ctx.cupti) {
    ScopedRange r("profile");
    dram = profile_range(
        ctx.device,
        [&] {
          for (int i = 0; i < cycle; ++i) graph.launch(stream.get());
          KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        },
        [&] {
          prob.restore_fill(stream.get());
          KVB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        });
  }
  const double per_layer_step = 1.0 / (double(cycle) * prob.layer_steps());

  const ByteCount model = prob.model_bytes_per_layer_step();
  const double floor = floor_us(model, ctx.copy_gbps, ctx.read_gbps);
  Row r;
  r.emplace_back("state_dtype", "fp32");
  r.emplace_back("buffer_form", cfg.variant == DecodeVariant::kvbuffer ? "delta" : "");
  r.emplace_back("output_dtype", to_string(cfg.o_dtype));
  r.emplace_back("latency_us_median", fmt_num(st.median));
  r.emplace_back("latency_us_p10", fmt_num(st.p10));
  r.emplace_back("latency_us_p90", fmt_num(st.p90));
  r.emplace_back("samples", std::to_string(st.samples));
  r.emplace_back("noise_pct", fmt_num(st.noise_pct));
  r.emplace_back("sample_stop", st.stop);
  r.emplace_back("steps_per_sample", std::to_string(steps_per_sample));
  r.emplace_back("model_bytes", fmt_num(model.total()));
  r.emplace_back("model_read_bytes", fmt_num(model.read));
  r.emplace_back("model_write_bytes", fmt_num(model.write));
  r.emplace_back("floor_us", fmt_num(floor));
  r.emplace_back("latency_over_floor", fmt_num(st.median / floor));
  r.emplace_back("max_rel_err", fmt::format("{:.3g}", chk.state_err));
  r.emplace_back("max_rel_err_o", fmt::format("{:.3g}", chk.o_err));
  r.emplace_back("l2", hot ? "hot" : "cold");
  r.emplace_back("l2_rotation", std::to_string(cfg.groups));
  r.emplace_back("copy_gbps", fmt_num(ctx.copy_gbps));
  r.emplace_back("read_gbps", fmt_num(ctx.read_gbps));
  r.emplace_back("device_bytes", fmt_num(double(prob.device_bytes())));
  if (dram.status.ok()) {
    const double rd = dram.dram_read_bytes * per_layer_step, wr = dram.dram_write_bytes * per_layer_step;
    r.emplace_back("dram_read_bytes", fmt_num(rd));
    r.emplace_back("dram_write_bytes", fmt_num(wr));
    r.emplace_back("measured_over_model", fmt::format("{:.4f}", (rd + wr) / model.total()));
  }
  r.emplace_back("cupti_status", dram.status.reason);
  r.emplace_back("sm_clock_mhz", clock_after.sm_mhz ? std::to_string(*clock_after.sm_mhz) : "");
  r.emplace_back("throttled", clock_fell(clock_before, clock_after) ? "yes" : "no");
  return r;
}

}  // namespace

ExperimentKind decode_experiment_kind() {
  ExperimentKind k;
  k.name = "decode";
  k.axes = {
      {"variant", {"recurrent", "kvbuffer"}, word_axis("variant", {"recurrent", "kvbuffer"})},
      {"batch", {"64"}, int_axis("batch", 1, 4096)},
      {"buffer_size", {"16"}, int_axis("buffer_size", 1, 256)},
      {"phase", {"staggered"}, word_axis("phase", {"staggered", "aligned"})},
      {"layers", {"36"}, int_axis("layers", 1, 128)},
      {"heads_qk", {"16"}, int_axis("heads_qk", 1, 256)},
      {"heads_v", {"32"}, int_axis("heads_v", 1, 256)},
      {"head_dim_k", {"128"}, int_set_axis("head_dim_k", {32, 64, 128, 256})},
      {"head_dim_v", {"128"}, int_axis("head_dim_v", 4, 1024)},
      {"seed", {"0"}, int_axis("seed", 0, (1LL << 62))},
  };
  k.result_columns = {"state_dtype", "buffer_form", "output_dtype", "latency_us_median", "latency_us_p10",
                      "latency_us_p90", "samples", "noise_pct", "sample_stop", "steps_per_sample", "model_bytes",
                      "model_read_bytes", "model_write_bytes", "floor_us", "latency_over_floor", "max_rel_err",
                      "max_rel_err_o", "l2", "l2_rotation", "copy_gbps", "read_gbps", "device_bytes", "dram_read_bytes",
                      "dram_write_bytes", "measured_over_model", "cupti_status", "sm_clock_mhz", "throttled"};
  k.applies = [](const std::string& variant, const std::string& axis) {
    if (variant == "recurrent") return axis != "buffer_size" && axis != "phase";
    return true;
  };
  k.validate = [](const Point& pt) -> std::string {
    GdnShape s;
    s.heads_qk = int(pt.get_int("heads_qk"));
    s.heads_v = int(pt.get_int("heads_v"));
    s.head_dim_k = int(pt.get_int("head_dim_k"));
    s.head_dim_v = int(pt.get_int("head_dim_v"));
    return validate_shape(s);
  };
  k.run = run_decode_point;
  return k;
}

}  // namespace kvb
