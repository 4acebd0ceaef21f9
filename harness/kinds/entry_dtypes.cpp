// The entry_dtypes column (entry_dtypes.h).
#include "harness/kinds/entry_dtypes.h"

#include <type_traits>

#include "harness/sweep/entry_dtypes.h"
#include "kernels/gdn_params.h"
#include "kernels/kvbuffer_raw_params.h"

namespace kvb {

// entry_dtypes_of's strings name the pools' element types: a pool whose types change must change its strings with
// them.
static_assert(std::is_same_v<decltype(KVBufferPool::keys), bf16*>, "delta form: k=bf16");
static_assert(std::is_same_v<decltype(KVBufferPool::delta_dtype), StateDtype>, "delta form: u=delta_dtype");
static_assert(std::is_same_v<decltype(KVBufferPool::log_decay), float*>, "delta form: g=fp32");
static_assert(std::is_same_v<decltype(RawKVBufferPool::keys), bf16*>, "raw form: k=bf16");
static_assert(std::is_same_v<decltype(RawKVBufferPool::values), bf16*>, "raw form: v=bf16");
static_assert(std::is_same_v<decltype(RawKVBufferPool::gate_a), bf16*>, "raw form: a=bf16");
static_assert(std::is_same_v<decltype(RawKVBufferPool::gate_b), bf16*>, "raw form: b=bf16");

std::string entry_dtypes(const std::string& variant, BufferForm form, StateDtype delta_dtype) {
  return entry_dtypes_of(variant, to_string(form), to_string(delta_dtype));
}

}  // namespace kvb
