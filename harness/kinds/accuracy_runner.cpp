#include "harness/kinds/accuracy_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "harness/kinds/axis_checks.h"
#include "harness/kinds/entry_dtypes.h"
#include "harness/kinds/runner_support.h"
#include "harness/measure/nvtx.h"
#include "harness/workloads/accuracy_run.h"
#include "core/cuda_check.h"
#include "kernels/gdn_params.h"

namespace kvb {
namespace {

AccuracyConfig accuracy_config(const Point& pt) {
  AccuracyConfig c;
  c.kvbuffer = pt.get("variant") == "kvbuffer";
  c.shape = point_shape(pt);
  c.batch = int(pt.get_int("batch"));
  if (c.kvbuffer) c.buffer_size = int(pt.get_int("buffer_size"));
  c.tokens = int(pt.get_int("tokens"));
  c.seed = uint64_t(pt.get_int("seed"));
  c.state_dtype = point_state_dtype(pt);
  return c;
}

std::string err(double x) { return fmt::format("{:.3g}", x); }

Row run_accuracy_point(const Point& pt, SweepContext& ctx) {
  KVB_CUDA_CHECK(cudaSetDevice(ctx.device));
  ScopedRange range(pt.label());
  const AccuracyConfig cfg = accuracy_config(pt);
  const std::vector<AccuracyPoint> points = run_accuracy(cfg);
  Row r;
  r.emplace_back("output_dtype", to_string(OutputDtype::fp32));
  r.emplace_back("entry_dtypes", entry_dtypes(pt.get("variant"), BufferForm::delta));  // run_accuracy's KVBufferPool
  for (const AccuracyPoint& p : points)
    if (std::find(accuracy_checkpoints().begin(), accuracy_checkpoints().end(), p.tokens) !=
        accuracy_checkpoints().end()) {
      r.emplace_back(fmt::format("state_err_at_{}", p.tokens), err(p.state_err));
      r.emplace_back(fmt::format("o_err_at_{}", p.tokens), err(p.o_err));
    }
  r.emplace_back("tokens_run", std::to_string(points.back().tokens));
  r.emplace_back("state_err_last", err(points.back().state_err));
  r.emplace_back("o_err_last", err(points.back().o_err));
  return r;
}

}  // namespace

std::vector<std::string> accuracy_result_columns() {
  std::vector<std::string> cols{"output_dtype", "entry_dtypes"};
  for (int t : accuracy_checkpoints()) {
    cols.push_back(fmt::format("state_err_at_{}", t));
    cols.push_back(fmt::format("o_err_at_{}", t));
  }
  for (const char* c : {"tokens_run", "state_err_last", "o_err_last"}) cols.emplace_back(c);
  return cols;
}

ExperimentKind accuracy_experiment_kind() {
  ExperimentKind k;
  k.name = "accuracy";
  k.axes = {
      {"variant", {"recurrent", "kvbuffer"}, word_axis("variant", {"recurrent", "kvbuffer"})},
      {"batch", {"2"}, int_axis("batch", 1, 64)},
      {"buffer_size", {"16"}, int_axis("buffer_size", 1, kMaxBuffer)},
      {"tokens", {"4096"}, int_axis("tokens", 1, accuracy_checkpoints().back())},
  };
  for (AxisSpec& a : model_axes())
    if (a.name != "layers") k.axes.push_back(std::move(a));  // one layer: the drift is a layer's
  k.axes.push_back(state_dtype_axis());
  k.axes.back().defaults = {"fp32", "bf16"};  // the kind exists to set them side by side
  k.result_columns = accuracy_result_columns();
  k.results_added_later = {"entry_dtypes"};
  k.applies = [](const std::string& variant, const std::string& axis) {
    return variant != "recurrent" || axis != "buffer_size";
  };
  k.validate = [](const Point& pt) {
    if (auto e = validate_state_dtype_point(pt); !e.empty()) return e;
    return validate_point_shape(pt);
  };
  k.run = run_accuracy_point;
  return k;
}

}  // namespace kvb
