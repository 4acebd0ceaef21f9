#include "harness/kinds/runner_support.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/measure/nvtx.h"
#include "harness/kinds/axis_checks.h"
#include "core/cuda_check.h"

namespace kvb {

std::vector<AxisSpec> model_axes() {
  return {
      {"layers", {"36"}, int_axis("layers", 1, 128)},
      {"heads_qk", {"16"}, int_axis("heads_qk", 1, 256)},
      {"heads_v", {"32"}, int_axis("heads_v", 1, 256)},
      {"head_dim_k", {"128"}, int_set_axis("head_dim_k", {32, 64, 128, 256})},
      {"head_dim_v", {"128"}, int_axis("head_dim_v", 4, 1024)},
      {"seed", {"0"}, int_axis("seed", 0, (1LL << 62))},
  };
}

GdnShape point_shape(const Point& pt) {
  GdnShape s;
  s.heads_qk = int(pt.get_int("heads_qk"));
  s.heads_v = int(pt.get_int("heads_v"));
  s.head_dim_k = int(pt.get_int("head_dim_k"));
  s.head_dim_v = int(pt.get_int("head_dim_v"));
  return s;
}

std::string validate_point_shape(const Point& pt) { return validate_shape(point_shape(pt)); }

AxisSpec buffer_form_axis() { return {"buffer_form", {"delta"}, word_axis("buffer_form", {"delta", "raw"})}; }

BufferForm point_buffer_form(const Point& pt) {
  return pt.get("buffer_form") == "raw" ? BufferForm::raw : BufferForm::delta;
}

std::string validate_buffer_form_point(const Point& pt) {
  if (auto e = validate_point_shape(pt); !e.empty()) return e;
  if (point_buffer_form(pt) == BufferForm::raw && pt.get_int("buffer_size") > kMaxRawBuffer)
    return fmt::format("buffer_size = {} is out of range for buffer_form raw (allowed: 1 to {})",
                       pt.get("buffer_size"), kMaxRawBuffer);
  return "";
}

AxisSpec state_dtype_axis() {
  return {"state_dtype", {"fp32"}, word_axis("state_dtype", {"fp32", "bf16"})};
}

StateDtype point_state_dtype(const Point& pt) {
  for (const auto& [name, value] : pt.axes)
    if (name == "state_dtype" && value == "bf16") return StateDtype::bf16;
  return StateDtype::fp32;
}

namespace {

/// "" when a bf16 point's variant is one of `variants` (joined with " and " in the reason) in the delta form, else
/// the one-line reason.
std::string bf16_variant_and_form(const Point& pt, const std::vector<std::string>& variants) {
  const std::string& variant = pt.get("variant");
  if (std::find(variants.begin(), variants.end(), variant) == variants.end())
    return fmt::format("state_dtype = bf16 is not supported by variant {} (allowed with it: fp32; bf16 with {})",
                       variant, fmt::join(variants, " and "));
  for (const auto& [name, value] : pt.axes)  // kinds without a buffer_form axis store the delta form
    if (name == "buffer_form" && value == "raw")
      return "state_dtype = bf16 is not supported with buffer_form = raw (allowed with raw: fp32)";
  return "";
}

}  // namespace

std::string validate_state_dtype_point(const Point& pt) {
  if (point_state_dtype(pt) == StateDtype::fp32) return "";
  return bf16_variant_and_form(pt, {"recurrent", "kvbuffer"});
}

std::string validate_verify_state_dtype_point(const Point& pt) {
  if (point_state_dtype(pt) == StateDtype::fp32) return "";
  if (auto e = bf16_variant_and_form(pt, {"kvbuffer_verify"}); !e.empty()) return e;
  if (pt.get("verify_kernel") == "cuda_cores")
    return "state_dtype = bf16 is not supported with verify_kernel = cuda_cores (allowed with cuda_cores: fp32; bf16 "
           "with automatic, tensor_cores and staged)";
  // bf16 checkpoints run on the staged or the tensor-core kernel, whatever verify_kernel says: their shape and tile
  // limits, which are the same, apply.
  KVBufferVerifyParams p;
  p.shape = point_shape(pt);
  p.tile = point_tile(pt);
  if (!p.tile.is_auto())
    return fmt::format("state_dtype = bf16 is not supported with tile = {}: the verify kernels that take bf16 "
                       "checkpoints (tensor_cores, staged) have one block shape each (allowed with bf16: tile = auto)",
                       to_string(p.tile));
  if (!validate_tensor_core_verify(p).empty())
    return fmt::format("state_dtype = bf16 is not supported with head_dim_k x head_dim_v = {} x {}: the verify "
                       "kernels that take bf16 checkpoints (tensor_cores, staged) refuse them (allowed with bf16: 128 "
                       "x 128; other head dims: fp32)", p.shape.head_dim_k, p.shape.head_dim_v);
  return "";
}

AxisSpec delta_dtype_axis() {
  return {"delta_dtype", {"fp32"}, word_axis("delta_dtype", {"fp32", "bf16"}), /*added_later=*/true};
}

StateDtype point_delta_dtype(const Point& pt) {
  for (const auto& [name, value] : pt.axes)
    if (name == "delta_dtype" && value == "bf16") return StateDtype::bf16;
  return StateDtype::fp32;
}

std::string validate_verify_delta_dtype_point(const Point& pt) {
  if (point_delta_dtype(pt) == StateDtype::fp32) return "";
  if (pt.get("variant") != "kvbuffer_verify" || point_buffer_form(pt) != BufferForm::delta)
    return fmt::format("delta_dtype = bf16 is not supported with variant = {}{} (allowed with bf16: kvbuffer_verify "
                       "in the delta form)", pt.get("variant"),
                       pt.get("variant") == "kvbuffer_verify" ? " in the raw form" : "");
  if (point_state_dtype(pt) != StateDtype::bf16)
    return "delta_dtype = bf16 is not supported with state_dtype = fp32 (allowed with bf16 deltas: state_dtype = "
           "bf16)";
  const std::string& kernel = pt.get("verify_kernel");
  if (kernel != "automatic" && kernel != "staged")
    return fmt::format("delta_dtype = bf16 is not supported with verify_kernel = {} (allowed with bf16 deltas: "
                       "automatic or staged)", kernel);
  return staged_verify_point_refusal(pt, "delta_dtype = bf16", "bf16 deltas",
                                     "delta_dtype = bf16 takes the staged kernel: ");
}

std::string staged_verify_point_refusal(const Point& pt, const std::string& subject, const std::string& allowed_with,
                                        const std::string& prefix) {
  KVBufferVerifyParams p;
  p.shape = point_shape(pt);
  p.tile = point_tile(pt);
  p.pool.state_dtype = StateDtype::bf16;
  p.pool.capacity = int(pt.get_int("buffer_size")) - 1 + int(pt.get_int("draft_tokens"));  // VerifyProblem's
  if (p.pool.capacity > kStagedVerifyMaxEntries)
    return fmt::format("{} is not supported with buffer_size - 1 + draft_tokens = {} (allowed with {}: at most {})",
                       subject, p.pool.capacity, allowed_with, kStagedVerifyMaxEntries);
  if (auto e = validate_staged_verify(p); !e.empty()) return prefix + e;
  return "";
}

AxisSpec launch_axis() {
  return {"launch", {"plain"}, word_axis("launch", {"plain", "pdl"}), /*added_later=*/true};
}

namespace {
/// The tile part of validate_launch_point.
std::string validate_tile_point(const Point& pt) {
  const TileShape tile = point_tile(pt);
  if (tile.is_auto()) return "";
  const std::string& variant = pt.get("variant");
  const BufferForm form = point_buffer_form(pt);
  const GdnShape shape = point_shape(pt);
  if (form == BufferForm::raw && variant.rfind("kvbuffer", 0) == 0) return validate_raw_tile(tile, shape);
  return validate_tile(tile, variant_tiles(variant, form), shape, variant.c_str());
}
}  // namespace

std::string validate_launch_point(const Point& pt) {
  if (auto e = validate_buffer_form_point(pt); !e.empty()) return e;
  if (pt.get("launch") != "pdl") return validate_tile_point(pt);
  if (point_buffer_form(pt) == BufferForm::raw)  // only KVBuffer points have a buffer form (the kinds' applies)
    return "launch = pdl is not supported with buffer_form = raw (allowed with raw: plain)";
  if (pt.get_int("layers") < 2)
    return fmt::format("launch = pdl needs layers >= 2, each layer on its own pools (layers = {}; allowed with one "
                       "layer: plain)", pt.get("layers"));
  return validate_tile_point(pt);
}

AxisSpec tile_axis(const std::vector<std::vector<TileShape>>& families) {
  std::vector<std::string> words{"auto"};
  for (const auto& family : families)
    for (const TileShape& t : family)
      if (std::find(words.begin(), words.end(), to_string(t)) == words.end()) words.push_back(to_string(t));
  return {"tile", {"auto"}, word_axis("tile", words), /*added_later=*/true};
}

TileShape point_tile(const Point& pt) {
  TileShape t;
  for (const auto& [name, value] : pt.axes)
    if (name == "tile" && !value.empty() && !parse_tile(value, t))
      throw UsageError(fmt::format("tile = '{}' is not a tile (allowed: auto or COLUMNSxTHREADS)", value));
  return t;
}

const std::vector<TileShape>& variant_tiles(const std::string& variant, BufferForm form) {
  static const std::vector<TileShape> none;
  if (variant == "recurrent") return recurrent_decode_tiles();
  if (variant == "recurrent_verify") return recurrent_verify_tiles();
  if (form == BufferForm::raw && (variant == "kvbuffer" || variant == "kvbuffer_verify")) return raw_tiles();
  if (variant == "kvbuffer") return kvbuffer_decode_tiles();
  if (variant == "kvbuffer_verify") return kvbuffer_verify_tiles();
  return none;
}

LaunchCheck run_check(const std::function<LaunchCheck()>& check) {
  LaunchCheck c;
  {
    ScopedRange r("check");
    c = check();
  }
  if (!c.pass()) throw std::runtime_error("check failed: " + c.detail);
  return c;
}

SamplingRule sampling_rule(const SweepContext& ctx, double seconds_share) {
  SamplingRule rule;
  rule.min_samples = ctx.min_samples;
  rule.max_seconds = ctx.max_seconds_per_point * seconds_share;
  rule.target_noise_pct = ctx.target_noise_pct;
  return rule;
}

RangeMeasurement profile_model_steps(const SweepContext& ctx, const CudaGraph& graph, cudaStream_t stream, int steps,
                                     const std::function<void(cudaStream_t)>& before_pass) {
  return profile_model_steps(ctx.device, ctx.cupti, graph, stream, steps, before_pass);
}

std::string fmt_num(double x) { return fmt::format("{:.6g}", x); }

void add_timing_columns(Row& r, const std::string& latency_prefix, const std::string& stats_prefix,
                        const StepTiming& t) {
  r.emplace_back(latency_prefix + "_us_median", fmt_num(t.stats.median));
  r.emplace_back(latency_prefix + "_us_p10", fmt_num(t.stats.p10));
  r.emplace_back(latency_prefix + "_us_p90", fmt_num(t.stats.p90));
  r.emplace_back(stats_prefix + "samples", std::to_string(t.stats.samples));
  r.emplace_back(stats_prefix + "noise_pct", fmt_num(t.stats.noise_pct));
  r.emplace_back(stats_prefix + "sample_stop", t.stats.stop);
  r.emplace_back(stats_prefix + "steps_per_sample", std::to_string(t.steps_per_sample));
  r.emplace_back(stats_prefix + "discarded_samples", t.stats.clock_checked ? std::to_string(t.stats.discarded) : "");
}

void add_model_columns(Row& r, const std::string& prefix, const std::string& ratio_column, const ByteCount& model,
                       double median_us, const SweepContext& ctx) {
  const double floor = floor_us(model, ctx.copy_gbps, ctx.read_gbps);
  r.emplace_back(prefix + "model_bytes", fmt_num(model.total()));
  r.emplace_back(prefix + "model_read_bytes", fmt_num(model.read));
  r.emplace_back(prefix + "model_write_bytes", fmt_num(model.write));
  r.emplace_back(prefix + "floor_us", fmt_num(floor));
  r.emplace_back(ratio_column, fmt_num(median_us / floor));
}

void add_run_columns(Row& r, const SweepContext& ctx, int l2_rotation, double device_bytes,
                     const RangeMeasurement& dram, double per_layer_step, const ByteCount& model,
                     const ClockSample& before, const ClockSample& after) {
  r.emplace_back("l2", ctx.l2_mode == "hot" ? "hot" : "cold");
  r.emplace_back("l2_rotation", std::to_string(l2_rotation));
  r.emplace_back("copy_gbps", fmt_num(ctx.copy_gbps));
  r.emplace_back("read_gbps", fmt_num(ctx.read_gbps));
  r.emplace_back("device_bytes", fmt_num(device_bytes));
  if (dram.status.ok()) {
    const double rd = dram.dram_read_bytes * per_layer_step, wr = dram.dram_write_bytes * per_layer_step;
    r.emplace_back("dram_read_bytes", fmt_num(rd));
    r.emplace_back("dram_write_bytes", fmt_num(wr));
    r.emplace_back("measured_over_model", fmt::format("{:.4f}", (rd + wr) / model.total()));
  }
  r.emplace_back("cupti_status", dram.status.reason);
  r.emplace_back("sm_clock_mhz", after.sm_mhz ? std::to_string(*after.sm_mhz) : "");
  r.emplace_back("throttled", clock_fell(before, after) ? "yes" : "no");
}

}  // namespace kvb
