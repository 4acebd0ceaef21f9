// The experiment kinds the `kvb` binary knows: decode, spec_verify and short_context. The sweep engine takes a kind
// (or the list of them) as an argument and never looks one up itself.
#pragma once

#include <string>
#include <vector>

#include "harness/sweep/experiment_kind.h"
#include "harness/sweep/result_csv.h"

namespace kvb {

/// Every kind `kvb sweep`, `kvb merge` and `kvb compare` know, in a fixed order.
const std::vector<ExperimentKind>& experiment_kinds();
/// The kind named `name`; throws UsageError listing the known kinds.
const ExperimentKind& find_experiment_kind(const std::string& name);

/// The schema of every result CSV kvb writes (harness/sweep/result_csv.h): the sweep kinds' (csv_schema) in the
/// order of experiment_kinds(), then the capacity table's (capacity_csv_schema). plots/result_schemas.csv holds the
/// same for the figures (tests/cpu/test_result_csv.cpp keeps the two equal).
const std::vector<CsvSchema>& result_schemas();

}  // namespace kvb
