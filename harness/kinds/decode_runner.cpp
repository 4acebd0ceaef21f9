#include "harness/kinds/decode_runner.h"

#include <cuda_runtime_api.h>

#include <memory>

#include <fmt/format.h>

#include "harness/kinds/axis_checks.h"
#include "harness/kinds/entry_dtypes.h"
#include "harness/kinds/peer_point.h"
#include "harness/kinds/peer_variants.h"
#include "harness/workloads/decode_check.h"
#include "harness/workloads/decode_problem.h"
#include "harness/kinds/runner_support.h"
#include "harness/measure/l2_flush.h"
#include "harness/measure/nvtx.h"
#include "core/cuda_check.h"

namespace kvb {
namespace {

DecodeConfig decode_config(const Point& pt) {
  DecodeConfig c;
  c.variant = pt.get("variant") == "kvbuffer" ? DecodeVariant::kvbuffer : DecodeVariant::recurrent;
  c.form = point_buffer_form(pt);
  read_model_point(pt, c.variant == DecodeVariant::kvbuffer, c);
  c.state_dtype = point_state_dtype(pt);
  c.pdl = pt.get("launch") == "pdl";
  const std::string order = pt.get("row_order");
  c.row_order = order == "batch" ? DecodeRowOrder::batch : order == "spread" ? DecodeRowOrder::spread
                                                                            : DecodeRowOrder::automatic;
  return c;
}

/// The runner's request for a peer point: the model of a recurrent point at the context's L2 mode and sampling rule.
PeerDecodeRequest peer_request(const Point& pt, const SweepContext& ctx) {
  KVB_CUDA_CHECK(cudaSetDevice(ctx.device));
  PeerDecodeRequest r;
  r.variant = pt.get("variant");
  r.shape = point_shape(pt);
  r.batch = int(pt.get_int("batch"));
  r.layers = int(pt.get_int("layers"));
  r.seed = uint64_t(pt.get_int("seed"));
  r.l2 = ctx.l2_mode == "hot" ? "hot" : "cold";
  if (r.l2 == "cold") r.groups = cold_l2_groups(double(r.batch) * double(r.shape.state_bytes()) * r.layers, ctx.device);
  int l2_bytes = 0;
  KVB_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, ctx.device));
  r.l2_bytes = l2_bytes;
  r.device = ctx.device;
  r.sampling = sampling_rule(ctx);
  return r;
}

Row run_decode_point(const Point& pt, SweepContext& ctx) {
  if (is_peer_variant(pt.get("variant"))) {
    ScopedRange point_range(pt.label());
    return run_peer_decode(peer_request(pt, ctx), default_peer_runner(), ctx);
  }
  return run_decode(decode_config(pt), pt.label(), ctx);
}

/// Whole-point check: validate_launch_point and the row order's buffer form; for a peer point (no launch, tile or row
/// order axis) the shape alone.
std::string validate_decode_point(const Point& pt) {
  if (auto e = validate_state_dtype_point(pt); !e.empty()) return e;
  if (is_peer_variant(pt.get("variant"))) return validate_point_shape(pt);
  // Only the delta form's launches take a row order (KVBufferDecodeParams::row_order).
  if (pt.get("row_order") == "spread" && point_buffer_form(pt) == BufferForm::raw)
    return "row_order = spread is not supported with buffer_form = raw (allowed with raw: automatic, batch)";
  return validate_launch_point(pt);
}

}  // namespace

std::vector<std::string> decode_result_columns() {
  return {"output_dtype", "entry_dtypes", "latency_us_median", "latency_us_p10", "latency_us_p90",
          "samples", "noise_pct", "sample_stop", "steps_per_sample", "model_bytes", "model_read_bytes",
          "model_write_bytes", "floor_us", "latency_over_floor", "max_rel_err", "max_rel_err_o", "l2", "l2_rotation",
          "copy_gbps", "read_gbps", "device_bytes", "dram_read_bytes", "dram_write_bytes", "measured_over_model",
          "cupti_status", "sm_clock_mhz", "throttled", "discarded_samples"};
}

Row run_decode(DecodeConfig cfg, const std::string& label, SweepContext& ctx) {
  place_for_l2(ctx, cfg);
  // Cold L2: replicas against what a step touches (stateless requests touch their buffers, not states).
  if (!cfg.share_pools) cfg.groups = cold_l2_groups(step_working_set_bytes(cfg), ctx.device);
  ScopedRange point_range(label);
  CudaStream stream;
  DecodeProblem prob(cfg);
  const DecodeCheck chk = run_check([&] { return check_decode_step(prob, stream.get()); });

  const CudaGraph graph = CudaGraph::capture(stream.get(), [&](cudaStream_t s) { prob.enqueue_step(s); });
  const int cycle = prob.cycle_steps();
  std::unique_ptr<L2Flusher> flusher;
  // Untimed flush before each sample (cold L2): no state resident when a sample starts.
  if (!cfg.share_pools) flusher = std::make_unique<L2Flusher>();
  const StepTiming timing =
      time_model_steps(ctx.device, graph, stream.get(), cycle, prob.layer_steps(), sampling_rule(ctx), flusher.get());
  const ClockSample clock_after = sample_sm_clock(ctx.device);
  flusher.reset();

  // DRAM bytes of one whole flush cycle, from the same starting positions on every CUPTI pass.
  RangeMeasurement dram;
  {
    ScopedRange r("profile");
    dram = profile_model_steps(ctx, graph, stream.get(), cycle, [&](cudaStream_t s) { prob.restore_fill(s); });
  }

  const ByteCount model = prob.model_bytes_per_layer_step();
  Row r;
  r.emplace_back("output_dtype", to_string(cfg.o_dtype));
  // The variant as the decode and short_context kinds name it.
  const char* variant = cfg.variant == DecodeVariant::kvbuffer ? "kvbuffer" : "recurrent";
  r.emplace_back("entry_dtypes", entry_dtypes(variant, cfg.form));
  add_timing_columns(r, "latency", "", timing);
  add_model_columns(r, "", "latency_over_floor", model, timing.stats.median, ctx);
  r.emplace_back("max_rel_err", fmt::format("{:.3g}", chk.state_err));
  r.emplace_back("max_rel_err_o", fmt::format("{:.3g}", chk.o_err));
  add_run_columns(r, ctx, cfg.groups, double(prob.device_bytes()), dram, 1.0 / (double(cycle) * prob.layer_steps()),
                  model, timing.clock_before, clock_after);
  return r;
}

ExperimentKind decode_experiment_kind() {
  ExperimentKind k;
  k.name = "decode";
  std::vector<std::string> variants{"recurrent", "kvbuffer"};
  variants.insert(variants.end(), decode_peer_variants().begin(), decode_peer_variants().end());
  k.axes = {
      {"variant", {"recurrent", "kvbuffer"}, word_axis("variant", variants)},
      {"batch", {"64"}, int_axis("batch", 1, 4096)},
      {"buffer_size", {"16"}, int_axis("buffer_size", 1, kMaxBuffer)},
      buffer_form_axis(),
      {"phase", {"staggered"}, word_axis("phase", {"staggered", "aligned"})},
      launch_axis(),
      tile_axis({recurrent_decode_tiles(), kvbuffer_decode_tiles(), raw_tiles()}),
      // Rows written before the axis ran batch order, which automatic is with fp32 checkpoints.
      {"row_order", {"automatic"}, word_axis("row_order", {"automatic", "batch", "spread"}), /*added_later=*/true},
  };
  for (AxisSpec& a : model_axes()) k.axes.push_back(std::move(a));
  k.axes.push_back(state_dtype_axis());
  k.result_columns = decode_result_columns();
  k.result_columns.insert(k.result_columns.end(), peer_result_columns().begin(), peer_result_columns().end());
  k.results_added_later = peer_result_columns();
  k.results_added_later.push_back("discarded_samples");
  k.results_added_later.push_back("entry_dtypes");
  k.applies = [](const std::string& variant, const std::string& axis) {
    if (is_peer_variant(variant))  // the peer's own launches and tiles
      return axis != "buffer_size" && axis != "buffer_form" && axis != "phase" && axis != "launch" && axis != "tile" &&
             axis != "row_order";
    if (variant == "recurrent")
      return axis != "buffer_size" && axis != "buffer_form" && axis != "phase" && axis != "row_order";
    return true;
  };
  k.validate = validate_decode_point;
  k.run = run_decode_point;
  return k;
}

}  // namespace kvb
