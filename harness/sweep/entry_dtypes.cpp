// The entry_dtypes column's values (entry_dtypes.h).
#include "harness/sweep/entry_dtypes.h"

namespace kvb {

std::string entry_dtypes_of(const std::string& variant, const std::string& buffer_form,
                            const std::string& delta_dtype) {
  const bool buffered = variant == "kvbuffer" || variant == "kvbuffer_verify" || variant == "kvbuffer_decode";
  if (!buffered) return "";
  if (buffer_form == "raw") return "k=bf16 v=bf16 a=bf16 b=bf16";
  return delta_dtype == "bf16" ? "k=bf16 u=bf16 g=fp32" : "k=bf16 u=fp32 g=fp32";
}

}  // namespace kvb
