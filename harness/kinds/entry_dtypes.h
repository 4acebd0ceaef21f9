// What a KVBuffer row's buffer holds per entry, as the result CSVs state it (the entry_dtypes column of every sweep
// kind and of the capacity table).
#pragma once

#include <string>

#include "core/gdn_shape.h"

namespace kvb {

/// The element types of the entries a row's KVBuffer holds, as its CSV's entry_dtypes column states them:
/// "k=bf16 u=fp32 g=fp32" for a KVBuffer variant in the delta form (KVBufferPool: keys, corrected deltas, log-decays,
/// whatever the checkpoint's state_dtype), "k=bf16 v=bf16 a=bf16 b=bf16" in the raw form (RawKVBufferPool: the
/// token's k, v, a, b). The KVBuffer variants are kvbuffer (decode, short_context, accuracy), kvbuffer_verify
/// (spec_verify, capacity) and kvbuffer_decode (capacity); any other variant buffers nothing (recurrent,
/// recurrent_verify, recurrent_decode, the peers such as fla_recurrent) and gets "" (entry_dtypes_of, which the
/// validation of result CSVs checks rows against). Never throws.
/// delta_dtype: the corrected deltas' element type (KVBufferPool::delta_dtype), u=bf16 for bf16.
std::string entry_dtypes(const std::string& variant, BufferForm form, StateDtype delta_dtype = StateDtype::fp32);

}  // namespace kvb
