// Checks of command-line values and arguments whose messages name the flag, the value given and what is allowed
// (CLI11's own say "Value abc not in range" for a word given to an integer flag, and report a missing required flag
// before an unknown one).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace kvb::cli {

/// A CLI11 check: the value is an integer in [lo, hi]. Its message: "'abc' is not an integer (allowed: integers lo
/// to hi)" or "'0' is out of range (allowed: ...)"; CLI11 puts the flag in front.
CLI::Validator integer_in(long long lo, long long hi);

/// A CLI11 check: the value is a finite number in [lo, hi] (in (lo, hi] with lo_open), `unit` naming what it counts
/// ("seconds", "percent"). Its message names the value and the allowed range.
CLI::Validator number_in(double lo, double hi, const std::string& unit, bool lo_open = false);

/// A CLI11 check: the value is not empty (an empty --out would otherwise fall back to a default file).
CLI::Validator non_empty(const std::string& allowed);

/// When the arguments `argv[1..argc)` hold an option that the subcommand they name (or `app` itself) does not know,
/// the one-line message for it: "unknown option '--bogus' (allowed: --config, --out, ...)"; "" when there is none.
/// Looked at before CLI11's own parse errors, so that an unknown option is reported first.
std::string unknown_option(const CLI::App& app, int argc, const char* const* argv);

/// When the arguments `argv[1..argc)` give a subcommand without positional arguments (kvb sweep) a word after the
/// value of a --set, which takes one (`--set batch=64 batch=128`), the one-line message for it: "--set batch: set
/// twice (...)" when the word sets an axis a --set already set, else "--set: 'WORD' follows --set AXIS=... (allowed:
/// ...)"; "" when there is none. Looked at before CLI11's own parse errors, which call the word not expected.
std::string stray_override(const CLI::App& app, int argc, const char* const* argv);

/// CLI11's parse error `e` as the line kvb prints, "" for an error it leaves as CLI11 writes it: an option given twice
/// ("kvb: --device: given 2 times (allowed: once)"), an option without its value ("kvb: --device: no value (allowed:
/// INT in [0, 1023])"), a missing argument ("kvb merge: OUT is required (see kvb merge --help)"), a word no option or
/// argument takes ("kvb info: unexpected argument 'x' (allowed: --help, --device, ...)"), no subcommand ("kvb: a
/// subcommand is required (allowed: info, check-golden, ...)"). `app` is the top-level app after the failed parse
/// (its parsed subcommands name where the error is).
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e);

/// `message` with each line break and control character written as its escape (line_escaped: LF as \n, a NUL byte as
/// \x00, ...), so that an error stays one line whatever a value it quotes holds (a --set value, a config string or a
/// CSV cell may hold one), and each run of characters without a space over 80 characters shortened as
/// shown_escaped_value does (a pasted value, a path, a CSV line; an escape counts as one character), a trailing
/// ":LINE" or ":LINE:COLUMN" kept whole after it. Every error kvb prints goes through it.
std::string one_line(const std::string& message);

}  // namespace kvb::cli
