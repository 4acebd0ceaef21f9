// Settings of `kvb capacity`: the model, the buffer sizes and draft tokens to tabulate, and the budget; read from
// experiments/capacity.toml and overridden by command-line flags.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/kinds/capacity_model.h"

namespace kvb::capacity {

/// What `kvb capacity` tabulates. Defaults: Qwen3-Next TP1 (36 GDN layers, H = 16, HV = 32, K = V = 128),
/// B in {1, 2, 4, 8, 16}, m in {1, 2, 4, 8}, states stored in fp32 and in bf16, budget = free device memory less
/// reserve_gib.
struct CapacitySettings {
  ModelShape model;
  std::vector<int> buffer_sizes{1, 2, 4, 8, 16};
  std::vector<int> draft_tokens{1, 2, 4, 8};
  /// Element types of the stored states (CapacityCase::state_dtype): every row is tabulated once per dtype.
  std::vector<StateDtype> state_dtypes{StateDtype::fp32, StateDtype::bf16};
  std::optional<double> budget_gib;  ///< GiB (2^30 bytes); unset: the GPU's free memory less reserve_gib
  double reserve_gib = 4;            ///< GiB left out of the free memory when the budget is not given
};

/// Parses a comma-separated list of integers in [lo, hi] ("1,2,4"). Throws UsageError naming `flag` and the allowed
/// values for an empty list, a value that is not an integer or is out of range, or a repeated value.
std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int lo, int hi);

/// Parses a comma-separated list of distinct state dtypes ("fp32,bf16"; spaces around a value are ignored). Throws
/// UsageError naming `flag` and the allowed values (fp32, bf16) for an empty list or value, an unknown value, or a
/// repeated one.
std::vector<StateDtype> parse_state_dtype_list(const std::string& text, const std::string& flag);

/// Applies a capacity config to `settings`, in the [axes] dialect of every experiment config. Layout:
///   [experiment] name, description (strings, optional), kind (optional; "capacity")
///   [axes]       buffer_size, draft_tokens (integer lists: the table's B and m); state_dtype (a list of distinct
///                strings "fp32", "bf16", or one string: the stored states' element types); layers, heads_qk,
///                heads_v, head_dim_k, head_dim_v (one integer, or a list of one: the model)
///   [capacity]   budget_gib, reserve_gib (numbers), conv_state (boolean)
/// Every key is optional. Throws UsageError naming `origin` and the field for malformed TOML, an unknown table or
/// key, or a mistyped or out-of-range value.
void apply_capacity_config(const std::string& toml_text, const std::string& origin, CapacitySettings& settings);

/// Reads `path` and applies it (apply_capacity_config). Throws UsageError naming the file when it cannot be read.
void load_capacity_config(const std::string& path, CapacitySettings& settings);

/// Checks settings as a whole: the shape (validate_shape), layers in [1, 10000], buffer sizes in [1, kMaxBuffer],
/// draft tokens in [1, kMaxDraftTokens], B - 1 + m <= kMaxBuffer for every pair, state dtypes a non-empty list
/// without repeats, budget_gib > 0 when set, reserve_gib >= 0. Throws UsageError naming the flag (--layers,
/// --buffer-sizes, --state-dtypes, ...) and the allowed values.
void validate_settings(const CapacitySettings& settings);

/// The rows of the capacity table, in order: for each state dtype of settings.state_dtypes (in their order; the
/// outer loop, so that each dtype's rows form one block), recurrent_decode; recurrent_verify for each m;
/// kvbuffer_decode for each B; kvbuffer_verify for each B and, within it, each m.
std::vector<CapacityCase> capacity_cases(const CapacitySettings& settings);

}  // namespace kvb::capacity
