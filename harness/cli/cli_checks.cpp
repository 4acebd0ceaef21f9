// Command-line checks with messages that name what is allowed (cli_checks.h).
#include "harness/cli/cli_checks.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/sweep/experiment_kind.h"

namespace kvb::cli {

CLI::Validator integer_in(long long lo, long long hi) {
  const std::string allowed = fmt::format("allowed: integers {} to {}", lo, hi);
  return CLI::Validator(
      [lo, hi, allowed](std::string& value) -> std::string {
        long long v = 0;
        if (!integer_text(value))
          return fmt::format("'{}' is not an integer ({})", shown_value(value), allowed);
        if (!parse_integer(value, v) || v < lo || v > hi)
          return fmt::format("{} is out of range ({})", shown_value(value), allowed);
        return "";
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

CLI::Validator number_in(double lo, double hi, const std::string& unit, bool lo_open) {
  const std::string allowed =
      fmt::format("allowed: a number of {} {} {:g} and <= {:g}", unit, lo_open ? ">" : ">=", lo, hi);
  return CLI::Validator(
      [lo, hi, lo_open, allowed](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || std::isspace(static_cast<unsigned char>(value[0])) || *end != '\0' || !std::isfinite(v))
          return fmt::format("'{}' is not a finite number ({})", value, allowed);
        if (v < lo || (lo_open && v == lo) || v > hi) return fmt::format("{} is out of range ({})", value, allowed);
        return "";
      },
      fmt::format("NUMBER in {}{:g}, {:g}]", lo_open ? "(" : "[", lo, hi));
}

CLI::Validator non_empty(const std::string& allowed) {
  return CLI::Validator(
      [allowed](std::string& v) { return v.empty() ? fmt::format("empty value (allowed: {})", allowed) : ""; }, "");
}

namespace {

/// The long names of `cmd`'s options, "--a, --b, ...".
std::string option_list(const CLI::App& cmd) {
  std::string allowed;
  for (const CLI::Option* opt : cmd.get_options())
    if (!opt->get_lnames().empty()) allowed += (allowed.empty() ? "--" : ", --") + opt->get_lnames()[0];
  return allowed;
}

/// Where `text`'s trailing ":LINE" or ":LINE:COLUMN" (up to 10 digits each, after at least one other character)
/// begins, kept whole after a shortened path since it says where to look; text.size() when it has none.
size_t trailing_line_start(const std::string& text) {
  static const std::regex kLine("(:[0-9]{1,10}){1,2}$");
  std::smatch m;
  return std::regex_search(text, m, kLine) && m.position(0) > 0 ? size_t(m.position(0)) : text.size();
}

}  // namespace

std::string unknown_option(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* cmd = &app;
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == argv[1]) cmd = sub;
    first = 2;
  }
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    const bool long_option = arg.size() > 2 && arg.compare(0, 2, "--") == 0;
    const bool short_option = arg.size() == 2 && arg[0] == '-' && std::isalpha(static_cast<unsigned char>(arg[1]));
    if (!long_option && !short_option) continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (name == "--help" || name == "-h" || cmd->get_option_no_throw(name)) continue;
    const std::string where = cmd == &app ? "kvb" : "kvb " + cmd->get_name();
    return fmt::format("{}: unknown option '{}' (allowed: {})", where, name, option_list(*cmd));
  }
  return "";
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what();
  const CLI::App* cmd = &app;
  for (const CLI::App* sub : app.get_subcommands()) cmd = sub;
  const std::string where = cmd == &app ? "kvb" : "kvb " + cmd->get_name();
  std::smatch m;
  static const std::regex twice("^(\\S+): At Most 1 required but received (\\d+)$");
  static const std::regex missing("^(\\S+): 1 required (.+) missing$");
  static const std::regex positional("^([a-z_]+) is required$");
  if (std::regex_match(what, m, twice))
    return fmt::format("{}: {}: given {} times (allowed: once)", where, m[1].str(), m[2].str());
  if (std::regex_match(what, m, missing)) {
    std::string type = m[2].str();  // CLI11's "TYPE:VALIDATOR" when the option has a check
    type = type.substr(type.find(':') + 1);
    return fmt::format("{}: {}: no value (allowed: {})", where, m[1].str(),
                       type == "TEXT" ? "a value; see " + where + " --help" : type);
  }
  if (std::regex_match(what, m, positional)) {
    std::string name = m[1].str();
    for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
    return fmt::format("{}: {} is required (see {} --help)", where, name, where);
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // The words no option or argument took, in the order given ("--" ends the options; it is no word).
    std::vector<std::string> words;
    for (const std::string& w : cmd->remaining())
      if (w != "--") words.push_back("'" + w + "'");
    if (words.empty()) return "";
    return fmt::format("{}: unexpected argument{} {} (allowed: {})", where, words.size() > 1 ? "s" : "",
                       fmt::join(words, ", "), option_list(*cmd));
  }
  static const std::regex flag_value("^Could not convert: (--\\S+) = (.*)$");
  if (std::regex_match(what, m, flag_value)) {  // a flag's value that is no boolean (--dry-run=maybe)
    const CLI::Option* opt = cmd->get_option_no_throw(m[1].str());
    if (opt && opt->get_expected_max() == 0)
      return fmt::format("{}: {} takes no value, given '{}' (allowed: {} alone)", where, m[1].str(), m[2].str(),
                         m[1].str());
  }
  if (what == "A subcommand is required") {
    std::string known;
    for (const CLI::App* sub : app.get_subcommands({})) known += (known.empty() ? "" : ", ") + sub->get_name();
    return fmt::format("kvb: a subcommand is required (allowed: {})", known);
  }
  return "";
}

std::string stray_override(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  const CLI::App* cmd = nullptr;
  for (const CLI::App* sub : app.get_subcommands({}))
    if (sub->get_name() == argv[1]) cmd = sub;
  // With positional arguments (kvb merge's OUT and IN) a word after a --set value is one of them.
  if (!cmd || !cmd->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()) return "";
  std::vector<std::pair<std::string, std::string>> sets;  // (axis, the --set value), in the order given
  bool after_set = false;  // the words since the last --set value are no option's
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    std::string value;
    if (arg == "--set" && i + 1 < argc) value = argv[++i];
    else if (arg.compare(0, 6, "--set=") == 0) value = arg.substr(6);
    else if (arg.size() > 1 && arg[0] == '-') {
      after_set = false;
      continue;
    } else if (!after_set) {
      continue;
    } else {
      const size_t eq = arg.find('=');
      for (const auto& [set_axis, set_value] : sets)
        if (eq != std::string::npos && set_axis == arg.substr(0, eq))
          return fmt::format("--set {}: set twice ('{}', then '{}'; allowed: once per axis, values separated by "
                             "commas)",
                             set_axis, set_value, arg);
      return fmt::format("--set: '{}' follows --set {} (allowed: one AXIS=V1,V2,... after each --set)", arg,
                         sets.back().second);
    }
    sets.emplace_back(value.substr(0, value.find('=')), value);
    after_set = true;
  }
  return "";
}

std::string one_line(const std::string& message) {
  const std::string out = line_escaped(message);
  // Every run of characters without a space (a value, a path, a quoted line) as shown_escaped_value shows it, its
  // quotes and closing punctuation kept.
  std::string shown;
  for (size_t i = 0; i < out.size();) {
    const size_t end = std::min(out.find(' ', i), out.size());
    const std::string word = out.substr(i, end - i);
    const size_t first = std::min(word.find_first_not_of("'\"("), word.size());
    const size_t last = word.find_last_not_of("'\":,;)");
    if (last == std::string::npos || last < first) {
      shown += word;
    } else {
      const std::string core = word.substr(first, last + 1 - first);
      const size_t cut = trailing_line_start(core);
      shown += word.substr(0, first) + shown_escaped_value(core.substr(0, cut)) + core.substr(cut) +
               word.substr(last + 1);
    }
    if (end < out.size()) shown += ' ';
    i = end + 1;
  }
  return shown;
}

}  // namespace kvb::cli
