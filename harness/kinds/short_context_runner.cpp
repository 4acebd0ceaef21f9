#include "harness/kinds/short_context_runner.h"

#include <algorithm>
#include <string>

#include "harness/kinds/axis_checks.h"
#include "harness/workloads/decode_problem.h"
#include "harness/kinds/decode_runner.h"
#include "harness/kinds/runner_support.h"
#include "byte_model/byte_model.h"

namespace kvb {
namespace {

DecodeConfig short_context_config(const Point& pt) {
  DecodeConfig c;
  c.variant = pt.get("variant") == "kvbuffer" ? DecodeVariant::kvbuffer : DecodeVariant::recurrent;
  read_model_point(pt, c.variant == DecodeVariant::kvbuffer, c);
  c.state_dtype = point_state_dtype(pt);
  if (c.variant == DecodeVariant::kvbuffer) {
    const long long L = pt.get_int("context_len");
    if (L < c.buffer_size) c.context_len = int(L);  // stateless; L >= B: stateful, context_len 0
  }
  return c;
}

Row run_short_context_point(const Point& pt, SweepContext& ctx) {
  const DecodeConfig cfg = short_context_config(pt);
  const bool stateless = cfg.context_len > 0;
  Row r = run_decode(cfg, pt.label(), ctx);
  const bool kvb = cfg.variant == DecodeVariant::kvbuffer;
  r.emplace_back("stateless", stateless ? "true" : "false");
  r.emplace_back("state_bytes_per_request",
                 fmt_num(state_bytes_per_request(cfg.shape, cfg.layers, stateless, cfg.state_dtype)));
  r.emplace_back("buffer_bytes_per_request",
                 fmt_num(buffer_bytes_per_request(cfg.shape, cfg.layers, kvb ? cfg.buffer_size : 0)));
  return r;
}

}  // namespace

double state_bytes_per_request(const GdnShape& s, int layers, bool stateless, StateDtype state_dtype) {
  return stateless ? 0.0 : double(layers) * double(s.state_bytes(state_dtype));
}

double buffer_bytes_per_request(const GdnShape& s, int layers, int buffer_size) {
  if (buffer_size < 1) return 0.0;
  return double(layers) * std::max(buffer_size - 1, 1) * kvbuffer_entry_bytes(s);
}

ExperimentKind short_context_experiment_kind() {
  ExperimentKind k;
  k.name = "short_context";
  k.axes = {
      {"variant", {"recurrent", "kvbuffer"}, word_axis("variant", {"recurrent", "kvbuffer"})},
      {"context_len", {"1"}, int_axis("context_len", 1, 65536)},
      {"batch", {"64"}, int_axis("batch", 1, 4096)},
      {"buffer_size", {"16"}, int_axis("buffer_size", 1, kMaxBuffer)},
      {"phase", {"staggered"}, word_axis("phase", {"staggered", "aligned"})},
  };
  for (AxisSpec& a : model_axes()) k.axes.push_back(std::move(a));
  k.axes.push_back(state_dtype_axis());
  k.result_columns = decode_result_columns();
  for (const char* c : {"stateless", "state_bytes_per_request", "buffer_bytes_per_request"})
    k.result_columns.emplace_back(c);
  k.results_added_later = {"discarded_samples", "entry_dtypes"};
  k.applies = [](const std::string& variant, const std::string& axis) {
    if (variant == "recurrent") return axis != "buffer_size" && axis != "phase" && axis != "context_len";
    return true;
  };
  k.validate = [](const Point& pt) {
    if (auto e = validate_state_dtype_point(pt); !e.empty()) return e;
    return validate_point_shape(pt);
  };
  k.run = run_short_context_point;
  return k;
}

}  // namespace kvb
