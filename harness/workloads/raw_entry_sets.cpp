#include "harness/workloads/raw_entry_sets.h"

#include "harness/workloads/check_support.h"
#include "harness/workloads/device_random.h"

namespace kvb {

RawKVBufferEntrySets::RawKVBufferEntrySets(DeviceFootprint& mem, const GdnShape& s, int sets, int slots, int capacity,
                                           FillSeeds& seeds)
    : shape_(s), slots_(slots), capacity_(capacity) {
  const size_t entries = size_t(sets) * slots * capacity;
  keys_ = mem.alloc<bf16>(entries * s.heads_qk * s.head_dim_k);
  values_ = mem.alloc<bf16>(entries * s.heads_v * s.head_dim_v);
  gate_a_ = mem.alloc<bf16>(entries * s.heads_v);
  gate_b_ = mem.alloc<bf16>(entries * s.heads_v);
  for (const DeviceBuffer<bf16>* x : {&keys_, &values_, &gate_a_, &gate_b_})
    fill_normal(x->get(), x->size(), 0.f, 1.f, seeds.next());
}

RawKVBufferPool RawKVBufferEntrySets::pool(int set, float* checkpoints, int32_t* fill, int buffer_size) const {
  const size_t entries = size_t(slots_) * capacity_;
  RawKVBufferPool p;
  set_pool_rows(p, checkpoints, fill, slots_, capacity_, buffer_size);
  p.keys = keys_.get() + set * entries * shape_.heads_qk * shape_.head_dim_k;
  p.values = values_.get() + set * entries * shape_.heads_v * shape_.head_dim_v;
  p.gate_a = gate_a_.get() + set * entries * shape_.heads_v;
  p.gate_b = gate_b_.get() + set * entries * shape_.heads_v;
  return p;
}

ref::RawKVBufferSlot download_raw_kvbuffer_slot(const RawKVBufferPool& pool, const GdnShape& s, int slot,
                                                int entries) {
  const size_t qk = size_t(s.heads_qk) * s.head_dim_k, vv = size_t(s.heads_v) * s.head_dim_v, HV = s.heads_v;
  const size_t se = size_t(s.state_elems());
  ref::RawKVBufferSlot buf;
  buf.checkpoint = download_double(pool.checkpoint + size_t(slot) * se, se);
  for (int j = 0; j < entries; ++j) {
    const size_t e = size_t(slot) * pool.capacity + j;
    ref::TokenRaw t;
    t.k = to_double(download(pool.keys + e * qk, qk));
    t.v = to_double(download(pool.values + e * vv, vv));
    t.a = to_double(download(pool.gate_a + e * HV, HV));
    t.b = to_double(download(pool.gate_b + e * HV, HV));
    buf.entries.push_back(std::move(t));
  }
  return buf;
}

}  // namespace kvb
