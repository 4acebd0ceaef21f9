// `kvb compare BASELINE CANDIDATE`: per-point latency ratios and a faster/same/slower verdict (commands.h,
// harness/reports/compare.h).
#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/kinds/registry.h"
#include "harness/reports/compare.h"
#include "harness/reports/compare_report.h"

namespace kvb::cli {

int run_compare_command(const CompareCommandOptions& options) {
  CompareOptions compare;
  compare.threshold_pct = options.threshold_pct;
  compare.allow_different_gpu = options.allow_different_gpu;
  compare.metric = options.metric;
  const CsvInput baseline = read_input_csv(options.baseline, "BASELINE");
  const CsvInput candidate = read_input_csv(options.candidate, "CANDIDATE");
  const Comparison c = compare_tables(baseline, candidate, experiment_kinds(), compare);
  const std::string report = options.markdown ? format_comparison_markdown(c, options.baseline, options.candidate)
                                              : format_comparison_text(c, options.baseline, options.candidate);
  fmt::print("{}", report);
  return c.exit_code();
}

}  // namespace kvb::cli
