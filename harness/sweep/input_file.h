// The one way kvb reads an input file it was given (a config, a result CSV): whole, with an error that names the flag
// and the file when it is missing, a folder or unreadable.
#pragma once

#include <string>

namespace kvb {

/// The content of the input file `path`, named on the command line by `flag` ("--config"; an argument's name such
/// as "BASELINE"). `expected` says what file belongs there ("a TOML config such as experiments/decode_latency.toml").
/// Throws UsageError naming the flag and path, what is wrong (no such file, a path that cannot be followed: a folder
/// this user cannot search, a loop of links, a name too long; a directory, not a regular file, unreadable) and
/// `expected`.
std::string read_input_file(const std::string& path, const std::string& flag, const std::string& expected);

}  // namespace kvb
