#include "harness/kinds/registry.h"

#include <fmt/format.h>

#include "harness/kinds/accuracy_runner.h"
#include "harness/kinds/capacity_table.h"
#include "harness/kinds/decode_runner.h"
#include "harness/kinds/short_context_runner.h"
#include "harness/kinds/verify_runner.h"

namespace kvb {

const std::vector<ExperimentKind>& experiment_kinds() {
  static const std::vector<ExperimentKind> kinds = {decode_experiment_kind(), spec_verify_experiment_kind(),
                                                     short_context_experiment_kind(), accuracy_experiment_kind()};
  return kinds;
}

const std::vector<CsvSchema>& result_schemas() {
  static const std::vector<CsvSchema> schemas = [] {
    std::vector<CsvSchema> all = csv_schemas(experiment_kinds());
    all.push_back(capacity::capacity_csv_schema());
    return all;
  }();
  return schemas;
}

const ExperimentKind& find_experiment_kind(const std::string& name) {
  std::string known;
  for (const auto& k : experiment_kinds()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  throw UsageError(fmt::format("experiment kind = '{}' is not known (allowed: {})", name, known));
}

}  // namespace kvb
