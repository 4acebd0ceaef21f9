// The entry_dtypes column (entry_dtypes.h).
#include "harness/kinds/entry_dtypes.h"

#include <type_traits>

#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_raw_params.h"

namespace kvb {

// The strings below name the pools' element types: a pool whose types change must change its string with them.
static_assert(std::is_same_v<decltype(KVBufferPool::keys), bf16*>, "delta form: k=bf16");
static_assert(std::is_same_v<decltype(KVBufferPool::deltas), float*>, "delta form: u=fp32");
static_assert(std::is_same_v<decltype(KVBufferPool::log_decay), float*>, "delta form: g=fp32");
static_assert(std::is_same_v<decltype(RawKVBufferPool::keys), bf16*>, "raw form: k=bf16");
static_assert(std::is_same_v<decltype(RawKVBufferPool::values), bf16*>, "raw form: v=bf16");
static_assert(std::is_same_v<decltype(RawKVBufferPool::gate_a), bf16*>, "raw form: a=bf16");
static_assert(std::is_same_v<decltype(RawKVBufferPool::gate_b), bf16*>, "raw form: b=bf16");

std::string entry_dtypes(const std::string& variant, BufferForm form) {
  const bool buffered = variant == "kvbuffer" || variant == "kvbuffer_verify" || variant == "kvbuffer_decode";
  if (!buffered) return "";
  return form == BufferForm::raw ? "k=bf16 v=bf16 a=bf16 b=bf16" : "k=bf16 u=fp32 g=fp32";
}

}  // namespace kvb
