// What the entry_dtypes column of a result CSV holds: the element types of a KVBuffer row's buffered entries. The
// writers (harness/kinds/entry_dtypes.h, beside the pools' types) and the validation of result CSVs share it.
#pragma once

#include <string>

namespace kvb {

/// The entry_dtypes value of a row of `variant` whose buffer_form column reads `buffer_form` and delta_dtype column
/// `delta_dtype`: "k=bf16 u=fp32 g=fp32" (keys, corrected deltas, log-decays) for a KVBuffer variant (kvbuffer,
/// kvbuffer_verify, kvbuffer_decode) in the delta form ("delta", or empty where the kind has no such column), u=bf16
/// where delta_dtype reads "bf16" (empty or absent: fp32), "k=bf16 v=bf16 a=bf16 b=bf16" (the token's k, v, a, b) in
/// the raw form ("raw"), and "" for any other variant, which buffers nothing. Never throws.
std::string entry_dtypes_of(const std::string& variant, const std::string& buffer_form,
                            const std::string& delta_dtype = "");

}  // namespace kvb
