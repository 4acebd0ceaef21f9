// Text and Markdown tables of a comparison (compare_report.h).
#include "harness/reports/compare_report.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace kvb {
namespace {

/// Short label of each point: the axes with more than one non-empty value across the points (variant always); the
/// full label when none varies.
std::vector<std::string> short_labels(const Comparison& c) {
  std::vector<bool> shown;
  const size_t n_axes = c.points.empty() ? 0 : c.points[0].axes.size();
  for (size_t a = 0; a < n_axes; ++a) {
    std::set<std::string> distinct;
    for (const auto& p : c.points)
      if (!p.axes[a].second.empty()) distinct.insert(p.axes[a].second);
    shown.push_back(distinct.size() > 1 || c.points[0].axes[a].first == "variant");
  }
  std::vector<std::string> out;
  for (const auto& p : c.points) {
    std::string label;
    for (size_t a = 0; a < n_axes; ++a)
      if (shown[a] && !p.axes[a].second.empty())
        label += (label.empty() ? "" : ",") + p.axes[a].first + '=' + p.axes[a].second;
    out.push_back(label.empty() ? p.label : label);
  }
  return out;
}

/// The axes every point holds with one value ("draft_tokens=4, heads_qk=16, ..."), which short_labels leaves out;
/// "" when none.
std::string common_axes(const Comparison& c) {
  if (c.points.empty()) return "";
  std::string out;
  for (size_t a = 0; a < c.points[0].axes.size(); ++a) {
    if (c.points[0].axes[a].first == "variant") continue;
    // Shared only when every point holds it, with one value (a recurrent point holds no buffer_size).
    std::set<std::string> distinct;
    bool everywhere = true;
    for (const auto& p : c.points) {
      distinct.insert(p.axes[a].second);
      everywhere = everywhere && !p.axes[a].second.empty();
    }
    if (everywhere && distinct.size() == 1)
      out += (out.empty() ? "" : ", ") + c.points[0].axes[a].first + '=' + *distinct.begin();
  }
  return out;
}

std::string latency_cell(const Latency& l) { return fmt::format("{:.2f} ({:.2f}..{:.2f})", l.median, l.p10, l.p90); }

std::string ratio_cell(double r) { return fmt::format("{:.3f} ({:+.1f}%)", r, (r - 1.0) * 100.0); }

std::string summary_line(const Comparison& c) {
  return fmt::format("{} points: {} slower, {} faster, {} same (threshold {}%, outside p10..p90)", c.points.size(),
                     c.count(Verdict::slower), c.count(Verdict::faster), c.count(Verdict::same), c.threshold_pct);
}

std::string gpu_line(const Comparison& c) {
  return c.baseline_gpu == c.candidate_gpu
             ? fmt::format("GPU {}", c.baseline_gpu)
             : fmt::format("GPUs differ: baseline {}, candidate {}", c.baseline_gpu, c.candidate_gpu);
}

std::string escape_md(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

/// One line per unmatched point label (prefix, then the label inside `quote`), the first five of them, then a count
/// of the rest (`more` starts that line): a smoke grid compared against a full sweep leaves most of it unmatched.
std::string unmatched_lines(const std::vector<std::string>& labels, const std::string& prefix, const std::string& quote,
                            const std::string& more) {
  constexpr size_t kMaxListed = 5;
  std::string out;
  for (size_t i = 0; i < labels.size() && i < kMaxListed; ++i) out += prefix + quote + labels[i] + quote + '\n';
  if (labels.size() > kMaxListed) out += fmt::format("{}... and {} more\n", more, labels.size() - kMaxListed);
  return out;
}

}  // namespace

std::string format_comparison_text(const Comparison& c, const std::string& baseline_name,
                                   const std::string& candidate_name) {
  const auto labels = short_labels(c);
  std::vector<std::vector<std::string>> rows{
      {"point", "baseline us (p10..p90)", "candidate us (p10..p90)", "ratio", "verdict"}};
  for (size_t i = 0; i < c.points.size(); ++i) {
    const auto& p = c.points[i];
    rows.push_back(
        {labels[i], latency_cell(p.baseline), latency_cell(p.candidate), ratio_cell(p.ratio), to_string(p.verdict)});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t k = 0; k < r.size(); ++k) width[k] = std::max(width[k], r[k].size());
  std::string out =
      fmt::format("kvb compare: baseline {} vs candidate {} ({})\n", baseline_name, candidate_name, gpu_line(c));
  if (const std::string common = common_axes(c); !common.empty()) out += "every point: " + common + '\n';
  for (const auto& r : rows) {
    std::string line;
    for (size_t k = 0; k < r.size(); ++k) line += fmt::format("{:<{}}  ", r[k], width[k]);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + '\n';
  }
  out += unmatched_lines(c.only_baseline, "only in baseline (absent from the candidate or not ok there): ", "", "");
  out += unmatched_lines(c.only_candidate, "only in candidate: ", "", "");
  return out + "kvb compare: " + summary_line(c) + '\n';
}

std::string format_comparison_markdown(const Comparison& c, const std::string& baseline_name,
                                       const std::string& candidate_name) {
  const auto labels = short_labels(c);
  std::string out = fmt::format("### kvb compare: {}\n\nBaseline `{}`, candidate `{}`, {}.\n\n", summary_line(c),
                                baseline_name, candidate_name, escape_md(gpu_line(c)));
  if (const std::string common = common_axes(c); !common.empty())
    out += "Every point: " + escape_md(common) + ".\n\n";
  out += "| point | baseline us (p10..p90) | candidate us (p10..p90) | ratio | verdict |\n";
  out += "|---|---:|---:|---:|---|\n";
  for (size_t i = 0; i < c.points.size(); ++i) {
    const auto& p = c.points[i];
    const std::string verdict = p.verdict == Verdict::slower ? "**slower**" : to_string(p.verdict);
    out += fmt::format("| {} | {} | {} | {} | {} |\n", escape_md(labels[i]), latency_cell(p.baseline),
                       latency_cell(p.candidate), ratio_cell(p.ratio), verdict);
  }
  if (!c.only_baseline.empty() || !c.only_candidate.empty()) out += '\n';
  out += unmatched_lines(c.only_baseline, "- only in baseline (absent from the candidate or not ok there): ", "`",
                         "- ");
  out += unmatched_lines(c.only_candidate, "- only in candidate: ", "`", "- ");
  return out;
}

}  // namespace kvb
