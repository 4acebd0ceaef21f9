// TOML parsing shared by the config readers (sweep configs, capacity configs).
#pragma once

#include <toml++/toml.h>

#include <string>

namespace kvb {

/// Parses TOML text; a syntax error throws UsageError "ORIGIN:LINE:COLUMN: malformed TOML: what" (exit code 2).
toml::table parse_toml(const std::string& toml_text, const std::string& origin);

}  // namespace kvb
