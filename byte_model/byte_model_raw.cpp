#include "byte_model/byte_model_raw.h"

namespace kvb {

double raw_entry_bytes(const GdnShape& s) {
  return double(s.heads_qk) * s.head_dim_k * 2 + double(s.heads_v) * s.head_dim_v * 2 + 2.0 * s.heads_v * 2;
}

double raw_buffer_bytes(const GdnShape& s, int entries) { return entries * raw_entry_bytes(s); }

ByteCount kvbuffer_raw_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, OutputDtype o_dtype) {
  return buffered_decode_bytes(s, rows, buffer_size, fill, raw_entry_bytes(s), o_dtype);
}

ByteCount kvbuffer_raw_decode_cycle_bytes(const GdnShape& s, int rows, int buffer_size, OutputDtype o_dtype) {
  return buffered_decode_cycle_bytes(s, rows, buffer_size, raw_entry_bytes(s), o_dtype);
}

ByteCount kvbuffer_raw_verify_bytes(const GdnShape& s, int fill, int draft_tokens, OutputDtype o_dtype) {
  ByteCount b = token_io_bytes(s, draft_tokens, o_dtype);
  b.read += double(s.state_bytes()) + fill * raw_entry_bytes(s) + 8;  // checkpoint, entries, slot, fill
  return b;
}

ByteCount kvbuffer_raw_accept_bytes(const GdnShape& s, int fill, int accepted, int buffer_size) {
  ByteCount b;
  b.read = 12;  // slot, accepted, fill
  if (accepted == 0) return b;
  const double entry = raw_entry_bytes(s), state = double(s.state_bytes());
  if (fill + accepted >= buffer_size) {
    b.read += state + (fill + accepted) * entry;
    b.write += state;
  } else {
    b.read += accepted * entry;
    b.write += accepted * entry;
  }
  return b;
}

}  // namespace kvb
