#include "byte_model/byte_model.h"

#include <algorithm>

namespace kvb {

namespace {
double state_bytes(const GdnShape& s, StateDtype d) { return double(s.state_bytes(d)); }
double out_elem_bytes(OutputDtype d) { return d == OutputDtype::bf16 ? 2.0 : 4.0; }
}  // namespace

double kvbuffer_entry_bytes(const GdnShape& s, StateDtype delta_dtype) {
  return double(s.heads_qk) * s.head_dim_k * 2 + double(s.heads_v) * s.head_dim_v * state_elem_bytes(delta_dtype) +
         double(s.heads_v) * 4;
}

ByteCount token_io_bytes(const GdnShape& s, int tokens, OutputDtype o_dtype) {
  ByteCount b;
  b.read = tokens * (2.0 * s.heads_qk * s.head_dim_k * 2      // q, k
                     + double(s.heads_v) * s.head_dim_v * 2  // v
                     + 2.0 * s.heads_v * 2);                 // a, b
  b.write = tokens * double(s.heads_v) * s.head_dim_v * out_elem_bytes(o_dtype);
  return b;
}

double gate_param_bytes(const GdnShape& s) { return 2.0 * s.heads_v * 4; }

ByteCount decode_io_bytes(const GdnShape& s, int rows, OutputDtype o_dtype) {
  ByteCount b = token_io_bytes(s, rows, o_dtype);
  b.read += rows * 4.0 + gate_param_bytes(s);  // slot index per row, A_log and dt_bias per launch
  return b;
}

ByteCount recurrent_decode_bytes(const GdnShape& s, int rows, OutputDtype o_dtype, StateDtype state_dtype) {
  ByteCount b = decode_io_bytes(s, rows, o_dtype);
  b.read += rows * state_bytes(s, state_dtype);
  b.write += rows * state_bytes(s, state_dtype);
  return b;
}

ByteCount buffered_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, double entry_bytes,
                                OutputDtype o_dtype, StateDtype state_dtype) {
  ByteCount b = decode_io_bytes(s, rows, o_dtype);
  b.read += rows * (state_bytes(s, state_dtype) + fill * entry_bytes + 4);  // checkpoint, entries, fill
  if (fill + 1 >= buffer_size) b.write += rows * state_bytes(s, state_dtype);
  else b.write += rows * entry_bytes;
  return b;
}

ByteCount buffered_decode_cycle_bytes(const GdnShape& s, int rows, int buffer_size, double entry_bytes,
                                      OutputDtype o_dtype, StateDtype state_dtype) {
  ByteCount sum;
  for (int n = 0; n < buffer_size; ++n)
    sum += buffered_decode_bytes(s, rows, buffer_size, n, entry_bytes, o_dtype, state_dtype);
  sum.read /= buffer_size;
  sum.write /= buffer_size;
  return sum;
}

ByteCount kvbuffer_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, OutputDtype o_dtype,
                                StateDtype state_dtype) {
  return buffered_decode_bytes(s, rows, buffer_size, fill, kvbuffer_entry_bytes(s), o_dtype, state_dtype);
}

ByteCount kvbuffer_decode_cycle_bytes(const GdnShape& s, int rows, int buffer_size, OutputDtype o_dtype,
                                      StateDtype state_dtype) {
  return buffered_decode_cycle_bytes(s, rows, buffer_size, kvbuffer_entry_bytes(s), o_dtype, state_dtype);
}

ByteCount kvbuffer_advance_bytes(int rows) {
  ByteCount b;
  b.read = rows * 8.0;
  b.write = rows * 4.0;
  return b;
}

ByteCount kvbuffer_stateless_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill,
                                          OutputDtype o_dtype, StateDtype state_dtype) {
  ByteCount b = decode_io_bytes(s, rows, o_dtype);
  const double entry = kvbuffer_entry_bytes(s);
  b.read += rows * (fill * entry + 4 + 1 + 4);  // entries, state_slot, has_state, fill
  if (fill + 1 >= buffer_size) b.write += rows * state_bytes(s, state_dtype);
  else b.write += rows * entry;
  return b;
}

ByteCount kvbuffer_prefill_bytes(const GdnShape& s, int rows, int prompt_len, int buffer_size, OutputDtype o_dtype,
                                 StateDtype state_dtype) {
  ByteCount b = token_io_bytes(s, rows * prompt_len, o_dtype);
  b.read += rows * 12.0 + gate_param_bytes(s);  // slot, state_slot, prompt_len
  if (prompt_len < buffer_size) b.write += double(rows) * prompt_len * kvbuffer_entry_bytes(s);
  else b.write += rows * state_bytes(s, state_dtype);
  return b;
}

ByteCount recurrent_verify_bytes(const GdnShape& s, int rows, int draft_tokens, OutputDtype o_dtype,
                                 StateDtype state_dtype) {
  ByteCount b = token_io_bytes(s, rows * draft_tokens, o_dtype);
  b.read += rows * (state_bytes(s, state_dtype) + 4) + gate_param_bytes(s);
  b.write += double(rows) * draft_tokens * state_bytes(s, state_dtype);
  return b;
}

ByteCount recurrent_accept_bytes(const GdnShape& s, int accepted, StateDtype state_dtype) {
  ByteCount b;
  b.read = 8;  // slot, accepted
  if (accepted > 0) {
    b.read += state_bytes(s, state_dtype);
    b.write += state_bytes(s, state_dtype);
  }
  return b;
}

ByteCount kvbuffer_verify_bytes(const GdnShape& s, int fill, int draft_tokens, int buffer_size, OutputDtype o_dtype,
                                StateDtype state_dtype, StateDtype delta_dtype) {
  ByteCount b = token_io_bytes(s, draft_tokens, o_dtype);
  const double entry = kvbuffer_entry_bytes(s, delta_dtype);
  b.read += state_bytes(s, state_dtype) + fill * entry + 8;  // checkpoint, entries, slot, fill
  b.write += draft_tokens * entry;                           // the drafts' entries, into the buffer
  if (fill >= buffer_size) {  // a due row folds its entries into the checkpoint; its key groups count arrivals
    b.write += state_bytes(s, state_dtype) + 4.0 * s.heads_qk;
    b.read += 4.0 * s.heads_qk;
  }
  return b;
}

double floor_us(const ByteCount& b, double copy_gbps, double read_gbps) {
  const double paired = std::min(b.read, b.write);
  const double seconds = 2 * paired / (copy_gbps * 1e9) + (b.read - paired) / (read_gbps * 1e9) +
                         (b.write - paired) / (copy_gbps * 1e9);
  return seconds * 1e6;
}

}  // namespace kvb
