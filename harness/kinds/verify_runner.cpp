#include "harness/kinds/verify_runner.h"

#include <cuda_runtime_api.h>

#include <memory>

#include <fmt/format.h>

#include "harness/measure/l2_flush.h"
#include "harness/measure/nvtx.h"
#include "harness/kinds/axis_checks.h"
#include "harness/kinds/entry_dtypes.h"
#include "harness/kinds/runner_support.h"
#include "harness/workloads/verify_accepted.h"
#include "harness/workloads/verify_check.h"
#include "harness/workloads/verify_problem.h"
#include "core/cuda_check.h"

namespace kvb {
namespace {

VerifyConfig verify_config(const Point& pt) {
  VerifyConfig c;
  c.variant = pt.get("variant") == "kvbuffer_verify" ? VerifyVariant::kvbuffer : VerifyVariant::recurrent;
  c.form = point_buffer_form(pt);
  read_model_point(pt, c.variant == VerifyVariant::kvbuffer, c);
  c.draft_tokens = int(pt.get_int("draft_tokens"));
  c.accepted = parse_accepted(pt.get("accepted"));
  c.state_dtype = point_state_dtype(pt);
  c.delta_dtype = point_delta_dtype(pt);
  c.pdl = pt.get("launch") == "pdl";
  const std::string k = pt.get("verify_kernel");
  c.kernel = k == "cuda_cores"     ? VerifyKernel::cuda_cores
             : k == "tensor_cores" ? VerifyKernel::tensor_cores
             : k == "staged"       ? VerifyKernel::staged
                                   : VerifyKernel::automatic;
  return c;
}

/// The verify kernel a point runs ("" for recurrent verification and the raw form, whose kernels have no choice).
std::string kernel_that_runs(const VerifyProblem& prob) {
  if (!prob.kvbuffer() || prob.config().form != BufferForm::delta) return "";
  KVBufferVerifyLaunch d;
  KVB_CUDA_CHECK(describe_kvbuffer_verify_launch(prob.kvbuffer_verify_params(0), d));
  return to_string(d.kernel);
}

Row run_verify_point(const Point& pt, SweepContext& ctx) {
  VerifyConfig cfg = verify_config(pt);
  place_for_l2(ctx, cfg);
  ScopedRange point_range(pt.label());
  CudaStream stream;
  VerifyProblem prob(cfg);
  // A forced kernel, or bf16 checkpoints, that the launcher refuses: its one-line reason, before anything runs.
  if (prob.kvbuffer() && !prob.raw() &&
      (cfg.kernel == VerifyKernel::tensor_cores || cfg.kernel == VerifyKernel::staged ||
       cfg.state_dtype != StateDtype::fp32))  // bf16 deltas come with bf16 checkpoints (VerifyProblem)
    if (const std::string e = validate(prob.kvbuffer_verify_params(0)); !e.empty()) throw std::invalid_argument(e);
  const LaunchCheck chk = run_check([&] { return check_verify_step(prob, stream.get()); });

  const CudaGraph verify = CudaGraph::capture(stream.get(), [&](cudaStream_t s) { prob.enqueue_verify(s); });
  const CudaGraph verify_accept =
      CudaGraph::capture(stream.get(), [&](cudaStream_t s) { prob.enqueue_verify_accept(s); });
  // Every sample starts from the initial buffer positions, so the model bytes over its steps are known exactly.
  const auto restore = [&](cudaStream_t s) { prob.restore_fill(s); };
  const SamplingRule rule = sampling_rule(ctx, 0.5);
  std::unique_ptr<L2Flusher> flusher;
  if (!cfg.share_pools) flusher = std::make_unique<L2Flusher>();
  StepTiming tv, tva;
  {
    ScopedRange r("verify");
    tv = time_model_steps(ctx.device, verify, stream.get(), 1, prob.layer_steps(), rule, flusher.get(), restore);
  }
  {
    // Samples of whole multiples of B steps (a row accepting a draft a step is due, and folded by its next verify,
    // about once every B steps); the model bytes count exactly the steps a sample runs.
    ScopedRange r("verify+accept");
    tva = time_model_steps(ctx.device, verify_accept, stream.get(), cfg.buffer_size, prob.layer_steps(), rule,
                           flusher.get(), restore);
  }
  const ClockSample clock_after = sample_sm_clock(ctx.device);
  flusher.reset();

  // DRAM bytes of the same steps a verify + accept sample runs, from the same starting positions on every pass.
  const int steps = tva.steps_per_sample;
  RangeMeasurement dram;
  {
    ScopedRange r("profile");
    dram = profile_model_steps(ctx, verify_accept, stream.get(), steps, restore);
  }
  const ByteCount model_v = prob.verify_bytes_per_layer_step();
  const ByteCount model_va = prob.verify_accept_bytes_per_layer_step(steps);

  Row r;
  r.emplace_back("output_dtype", to_string(cfg.o_dtype));
  r.emplace_back("entry_dtypes", entry_dtypes(pt.get("variant"), cfg.form, cfg.delta_dtype));
  r.emplace_back("kernel", kernel_that_runs(prob));
  r.emplace_back("capacity", prob.kvbuffer() ? std::to_string(prob.capacity()) : "");
  r.emplace_back("mean_accepted", fmt_num(prob.mean_accepted()));
  add_timing_columns(r, "verify", "verify_", tv);
  add_timing_columns(r, "verify_accept", "verify_accept_", tva);
  add_model_columns(r, "verify_", "verify_over_floor", model_v, tv.stats.median, ctx);
  add_model_columns(r, "verify_accept_", "verify_accept_over_floor", model_va, tva.stats.median, ctx);
  r.emplace_back("max_rel_err", fmt::format("{:.3g}", chk.state_err));
  r.emplace_back("max_rel_err_o", fmt::format("{:.3g}", chk.o_err));
  r.emplace_back("scratch_sets", prob.kvbuffer() ? "" : std::to_string(prob.scratch_sets()));
  add_run_columns(r, ctx, cfg.groups, double(prob.device_bytes()), dram, 1.0 / (double(steps) * prob.layer_steps()),
                  model_va, tv.clock_before, clock_after);
  return r;
}

/// The accepted axis's check: check_accepted, its reason quoting the value as the other axes' checks do
/// (shown_value), its rule stated for the figures' reader (AxisCheck::rule).
AxisCheck accepted_axis_check() {
  return {[](const std::string& v) -> std::string {
            if (check_accepted(v).empty()) return "";
            return fmt::format("accepted = '{}' is not allowed (allowed: {})", shown_value(v), kAcceptedAllowed);
          },
          kAcceptedAllowed, "words_or_rate", {"all", "none"}, "0", "1"};
}

}  // namespace

ExperimentKind spec_verify_experiment_kind() {
  ExperimentKind k;
  k.name = "spec_verify";
  k.axes = {
      {"variant", {"recurrent_verify", "kvbuffer_verify"},
       word_axis("variant", {"recurrent_verify", "kvbuffer_verify"})},
      {"batch", {"64"}, int_axis("batch", 1, 4096)},
      {"draft_tokens", {"4"}, int_axis("draft_tokens", 1, kMaxDraftTokens)},
      {"accepted", {"all"}, accepted_axis_check()},
      {"buffer_size", {"8"}, int_axis("buffer_size", 1, kMaxVerifyBufferSize)},
      buffer_form_axis(),
      {"phase", {"staggered"}, word_axis("phase", {"staggered", "aligned"})},
      launch_axis(),  // pdl: verify, accept and commit with programmatic dependent launch
      tile_axis({recurrent_verify_tiles(), kvbuffer_verify_tiles(), raw_tiles()}),
      // Rows written before the axis ran the CUDA-core kernel, which automatic no longer always means.
      {"verify_kernel", {"automatic"}, word_axis("verify_kernel", {"automatic", "cuda_cores", "tensor_cores", "staged"}),
       /*added_later=*/true, /*older_value=*/"cuda_cores"},
  };
  for (AxisSpec& a : model_axes()) k.axes.push_back(std::move(a));
  k.axes.push_back(state_dtype_axis());  // where older CSVs held a result column of the name, always fp32
  k.axes.push_back(delta_dtype_axis());
  k.result_columns = {
      "output_dtype", "entry_dtypes", "kernel", "capacity", "mean_accepted",
      "verify_us_median", "verify_us_p10", "verify_us_p90", "verify_samples", "verify_noise_pct",
      "verify_sample_stop", "verify_steps_per_sample",
      "verify_accept_us_median", "verify_accept_us_p10", "verify_accept_us_p90", "verify_accept_samples",
      "verify_accept_noise_pct", "verify_accept_sample_stop", "verify_accept_steps_per_sample",
      "verify_model_bytes", "verify_model_read_bytes", "verify_model_write_bytes", "verify_floor_us",
      "verify_over_floor",
      "verify_accept_model_bytes", "verify_accept_model_read_bytes", "verify_accept_model_write_bytes",
      "verify_accept_floor_us", "verify_accept_over_floor",
      "max_rel_err", "max_rel_err_o", "l2", "l2_rotation", "scratch_sets", "copy_gbps", "read_gbps", "device_bytes",
      "dram_read_bytes", "dram_write_bytes", "measured_over_model", "cupti_status", "sm_clock_mhz", "throttled",
      "verify_discarded_samples", "verify_accept_discarded_samples"};
  k.applies = [](const std::string& variant, const std::string& axis) {
    if (variant == "recurrent_verify")
      return axis != "buffer_size" && axis != "buffer_form" && axis != "phase" && axis != "verify_kernel" &&
             axis != "delta_dtype";
    return true;
  };
  k.results_added_later = {"kernel", "verify_discarded_samples", "verify_accept_discarded_samples", "entry_dtypes"};
  k.validate = [](const Point& pt) {
    if (auto e = validate_launch_point(pt); !e.empty()) return e;
    if (auto e = validate_verify_delta_dtype_point(pt); !e.empty()) return e;  // names state_dtype where it must
    if (auto e = validate_verify_state_dtype_point(pt); !e.empty()) return e;
    const std::string kernel = pt.get("verify_kernel");
    if (!kernel.empty() && kernel != "automatic" && point_buffer_form(pt) == BufferForm::raw)
      return fmt::format("verify_kernel = {} needs buffer_form = delta (the raw form has one verify kernel; allowed "
                         "with raw: automatic)", kernel);
    // The tensor-core and staged kernels' own limits (the checkpoints, shape, capacity and tile they take), refused
    // before anything runs.
    if (kernel != "tensor_cores" && kernel != "staged") return std::string();
    KVBufferVerifyParams p;
    p.shape = point_shape(pt);
    p.tile = point_tile(pt);
    if (kernel == "tensor_cores") return validate_tensor_core_verify(p);
    // The staged kernel's limits in the axes' own names.
    if (point_state_dtype(pt) != StateDtype::bf16)
      return fmt::format("verify_kernel = staged is not supported with state_dtype = {} (allowed with staged: "
                         "state_dtype = bf16)", to_string(point_state_dtype(pt)));
    return staged_verify_point_refusal(pt, "verify_kernel = staged", "staged", "");
  };
  k.run = run_verify_point;
  return k;
}

}  // namespace kvb
