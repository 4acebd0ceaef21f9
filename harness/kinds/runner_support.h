// Pieces the experiment kinds share (decode, spec_verify, short_context): the model-shape, buffer-form, launch and tile
// axes, how a point's run options become a sampling rule and an L2 placement, and the CSV columns they have in common.
// The timing itself is harness/measure/step_timing.h (DESIGN.md section 4).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "harness/measure/step_timing.h"
#include "harness/sweep/experiment_kind.h"
#include "harness/workloads/check_support.h"
#include "kernels/gdn_params.h"
#include "byte_model/byte_model.h"
#include "core/cuda_check.h"
#include "core/gdn_shape.h"
#include "kernels/kvbuffer_raw_launch.h"

namespace kvb {

/// The axes every GDN experiment shares, in this order: layers (default 36), heads_qk, heads_v, head_dim_k,
/// head_dim_v (default Qwen3-Next TP1: 16, 32, 128, 128), seed.
std::vector<AxisSpec> model_axes();
/// The shape named by a point's heads_qk, heads_v, head_dim_k, head_dim_v. Throws UsageError on a non-integer.
GdnShape point_shape(const Point& pt);
/// Whole-point check of the shape: validate_shape(point_shape(pt)).
std::string validate_point_shape(const Point& pt);

/// The buffer_form axis of the KVBuffer kinds (decode, spec_verify): delta (default) or raw (DESIGN.md section 3).
AxisSpec buffer_form_axis();
/// A point's buffer form: raw when its buffer_form is "raw", else delta (also where the axis does not apply).
BufferForm point_buffer_form(const Point& pt);
/// Whole-point check of a kind with the buffer_form axis: the shape (validate_point_shape), then, for buffer_form
/// raw, buffer_size within the raw kernels' limit (1 to kMaxRawBuffer). "" or a one-line reason.
std::string validate_buffer_form_point(const Point& pt);

/// Largest buffer_size of the spec_verify kind: the largest B that both buffer forms verify with any draft count
/// (delta form: B - 1 + kMaxDraftTokens entries <= kMaxBuffer; raw form: B <= kMaxRawBuffer).
constexpr int kMaxVerifyBufferSize = std::min(kMaxRawBuffer, kMaxBuffer + 1 - kMaxDraftTokens);

/// The state_dtype axis of the decode, short_context and spec_verify kinds: fp32 (default) or bf16, the element type
/// of the states and checkpoints (arithmetic fp32 either way). Placed after the model axes, where older CSVs of these
/// kinds held a result column of the same name (always fp32), so that they resume unchanged.
AxisSpec state_dtype_axis();
/// A point's state dtype: bf16 when its state_dtype axis says so, else fp32 (also when it has no such axis).
StateDtype point_state_dtype(const Point& pt);
/// "" when the point's variant stores states in its state_dtype: fp32 everywhere; bf16 with recurrent and kvbuffer
/// (delta form) only, the kernels of this project that take bf16 states. Else a one-line reason.
std::string validate_state_dtype_point(const Point& pt);
/// The same for a spec_verify point: "" for fp32; bf16 only with variant kvbuffer_verify in the delta form on the
/// tensor-core verify kernel, the one verify kernel that takes bf16 checkpoints (verify_kernel automatic or
/// tensor_cores, tile auto, head dims it takes: validate_tensor_core_verify). Else a one-line reason.
std::string validate_verify_state_dtype_point(const Point& pt);

/// The delta_dtype axis of the spec_verify kind: fp32 (default) or bf16, the element type of the KVBuffer's corrected
/// deltas (KVBufferPool::delta_dtype). Added later: a CSV without the column resumes as fp32.
AxisSpec delta_dtype_axis();
/// A point's delta dtype: bf16 when its delta_dtype axis says so, else fp32 (also when it has no such axis).
StateDtype point_delta_dtype(const Point& pt);
/// "" for fp32 deltas; bf16 only with variant kvbuffer_verify in the delta form, state_dtype bf16 and the staged
/// kernel (verify_kernel automatic or staged, within its limits: validate_staged_verify). Else a one-line reason.
std::string validate_verify_delta_dtype_point(const Point& pt);
/// The staged verify kernel's limits (validate_staged_verify, bf16 checkpoints) for a spec_verify point, in the axes'
/// own names: "" when it takes the point, else "SUBJECT is not supported with buffer_size - 1 + draft_tokens = N
/// (allowed with ALLOWED_WITH: at most 32)" or `prefix` before validate_staged_verify's reason.
std::string staged_verify_point_refusal(const Point& pt, const std::string& subject, const std::string& allowed_with,
                                        const std::string& prefix);

/// The launch axis of the decode and spec_verify kinds: plain (default; one launch after another) or pdl
/// (programmatic dependent launch, kernels/pdl.cuh). Read as plain in a CSV written before the column existed.
AxisSpec launch_axis();
/// The tile axis of the decode and spec_verify kinds: auto (default: each launcher's own choice, the shapes measured
/// fastest) or an explicit tile COLUMNSxTHREADS of one of `families` (kernels/gdn_params.h TileShape). Read as auto in
/// a CSV written before the column existed.
AxisSpec tile_axis(const std::vector<std::vector<TileShape>>& families);
/// A point's tile: auto when the point has no tile axis or leaves it empty.
TileShape point_tile(const Point& pt);
/// The explicit tiles of the launcher a variant runs: recurrent and kvbuffer (decode), recurrent_verify and
/// kvbuffer_verify (spec_verify), for buffer form `form`; empty for an unknown variant.
const std::vector<TileShape>& variant_tiles(const std::string& variant, BufferForm form);

/// Whole-point check of a kind with the launch axis: validate_buffer_form_point, then launch = pdl only where the
/// kernels take it (not with buffer_form raw of a KVBuffer variant) and with layers >= 2 (a PDL launch must follow
/// another layer's, on distinct pools), then the tile: auto, or one the variant's launcher takes at the point's
/// shape (validate_tile, validate_raw_tile). "" or a one-line reason.
std::string validate_launch_point(const Point& pt);

/// Reads into a problem config (DecodeConfig, VerifyConfig) the axes both experiments have: the shape, batch, layers,
/// seed and tile; for a KVBuffer point also buffer_size and phase (staggered unless "aligned"). Throws UsageError on
/// a non-integer.
template <typename Config>
void read_model_point(const Point& pt, bool kvbuffer, Config& c) {
  c.shape = point_shape(pt);
  c.tile = point_tile(pt);
  c.batch = int(pt.get_int("batch"));
  c.layers = int(pt.get_int("layers"));
  c.seed = uint64_t(pt.get_int("seed"));
  if (kvbuffer) {
    c.buffer_size = int(pt.get_int("buffer_size"));
    c.staggered = pt.get("phase") != "aligned";
  }
}

/// Makes ctx.device current and lays a problem config out for the L2 mode: "hot" shares one set of pools among all
/// layers (share_pools); cold replicates the model cold_l2_groups(batch x state bytes x layers) times. Throws
/// CudaError.
template <typename Config>
void place_for_l2(const SweepContext& ctx, Config& c) {
  KVB_CUDA_CHECK(cudaSetDevice(ctx.device));
  if (ctx.l2_mode == "hot") c.share_pools = true;
  else c.groups = cold_l2_groups(double(c.batch) * double(c.shape.state_bytes()) * c.layers, ctx.device);
}

/// Runs a pre-timing check inside NVTX range "check". Throws std::runtime_error("check failed: <detail>") when it
/// did not pass; CudaError from the check propagates.
LaunchCheck run_check(const std::function<LaunchCheck()>& check);

/// Sampling rule from the sweep context, with `seconds_share` of the point's time budget.
SamplingRule sampling_rule(const SweepContext& ctx, double seconds_share = 1.0);

/// profile_model_steps (harness/measure/step_timing.h) on ctx.device, skipped when ctx.cupti is false.
RangeMeasurement profile_model_steps(const SweepContext& ctx, const CudaGraph& graph, cudaStream_t stream, int steps,
                                     const std::function<void(cudaStream_t)>& before_pass);

/// A number for the CSV: 6 significant digits.
std::string fmt_num(double x);

/// Columns of one timing: LATENCY_us_median, LATENCY_us_p10, LATENCY_us_p90, then STATSsamples, STATSnoise_pct,
/// STATSsample_stop, STATSsteps_per_sample, STATSdiscarded_samples (samples discarded because the GPU throttled;
/// empty when the SM clock could not be read) (latency_prefix LATENCY, stats_prefix STATS).
void add_timing_columns(Row& r, const std::string& latency_prefix, const std::string& stats_prefix,
                        const StepTiming& t);
/// Columns of a byte model and its floor: PREFIXmodel_bytes, PREFIXmodel_read_bytes, PREFIXmodel_write_bytes,
/// PREFIXfloor_us (floor_us at the context's bandwidths), and `ratio_column` = median_us / floor.
void add_model_columns(Row& r, const std::string& prefix, const std::string& ratio_column, const ByteCount& model,
                       double median_us, const SweepContext& ctx);
/// Columns about the run: l2, l2_rotation, copy_gbps, read_gbps, device_bytes, dram_read_bytes and dram_write_bytes
/// (the measurement times `per_layer_step`), measured_over_model (against `model`), cupti_status, sm_clock_mhz,
/// throttled.
void add_run_columns(Row& r, const SweepContext& ctx, int l2_rotation, double device_bytes,
                     const RangeMeasurement& dram, double per_layer_step, const ByteCount& model,
                     const ClockSample& before, const ClockSample& after);

}  // namespace kvb
