#include "kernels/byte_model.h"

#include <algorithm>

namespace kvb {

namespace {
double state_bytes(const GdnShape& s) { return double(s.state_bytes()); }
double out_elem_bytes(OutputDtype d) { return d == OutputDtype::bf16 ? 2.0 : 4.0; }
}  // namespace

double kvbuffer_entry_bytes(const GdnShape& s) {
  return double(s.heads_qk) * s.head_dim_k * 2 + double(s.heads_v) * s.head_dim_v * 4 + double(s.heads_v) * 4;
}

ByteCount decode_io_bytes(const GdnShape& s, int rows, OutputDtype o_dtype) {
  const double per_row_in = 2.0 * s.heads_qk * s.head_dim_k * 2  // q, k
                            + double(s.heads_v) * s.head_dim_v * 2  // v
                            + 2.0 * s.heads_v * 2                   // a, b
                            + 4;                                    // slot index
  ByteCount b;
  b.read = rows * per_row_in + 2.0 * s.heads_v * 4;  // + A_log, dt_bias
  b.write = rows * double(s.heads_v) * s.head_dim_v * out_elem_bytes(o_dtype);
  return b;
}

ByteCount recurrent_decode_bytes(const GdnShape& s, int rows, OutputDtype o_dtype) {
  ByteCount b = decode_io_bytes(s, rows, o_dtype);
  b.read += rows * state_bytes(s);
  b.write += rows * state_bytes(s);
  return b;
}

ByteCount kvbuffer_decode_bytes(const GdnShape& s, int rows, int buffer_size, int fill, OutputDtype o_dtype) {
  ByteCount b = decode_io_bytes(s, rows, o_dtype);
  const double entry = kvbuffer_entry_bytes(s);
  b.read += rows * (state_bytes(s) + fill * entry + 4);  // checkpoint, entries, fill
  if (fill + 1 >= buffer_size) b.write += rows * state_bytes(s);
  else b.write += rows * entry;
  return b;
}

ByteCount kvbuffer_decode_cycle_bytes(const GdnShape& s, int rows, int buffer_size, OutputDtype o_dtype) {
  ByteCount sum;
  for (int n = 0; n < buffer_size; ++n) sum += kvbuffer_decode_bytes(s, rows, buffer_size, n, o_dtype);
  sum.read /= buffer_size;
  sum.write /= buffer_size;
  return sum;
}

ByteCount kvbuffer_advance_bytes(int rows) {
  ByteCount b;
  b.read = rows * 8.0;
  b.write = rows * 4.0;
  return b;
}

double floor_us(const ByteCount& b, double copy_gbps, double read_gbps) {
  const double paired = std::min(b.read, b.write);
  const double seconds = 2 * paired / (copy_gbps * 1e9) + (b.read - paired) / (read_gbps * 1e9) +
                         (b.write - paired) / (copy_gbps * 1e9);
  return seconds * 1e6;
}

}  // namespace kvb
