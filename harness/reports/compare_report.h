// Printing a Comparison (compare.h): an aligned text table for terminals and CI logs, or a GitHub Markdown table for
// a pull-request comment.
#pragma once

#include <string>

#include "harness/reports/compare.h"

namespace kvb {

/// Aligned table, one line per common point: point (the axes that vary across the points, variant always),
/// baseline and candidate median with p10..p90 in microseconds, ratio (candidate / baseline median), verdict; then
/// the points only one side has, and a summary line ("N points: a slower, b faster, c same (threshold t%)").
std::string format_comparison_text(const Comparison& c, const std::string& baseline_name,
                                   const std::string& candidate_name);

/// The same as a GitHub Markdown table under a "### kvb compare" heading, slower points in bold.
std::string format_comparison_markdown(const Comparison& c, const std::string& baseline_name,
                                       const std::string& candidate_name);

}  // namespace kvb
