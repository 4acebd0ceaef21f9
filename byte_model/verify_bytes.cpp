#include "byte_model/verify_bytes.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "byte_model/byte_model_raw.h"

namespace kvb {
namespace {

void check_rows(const VerifyBatch& b) {
  if (!b.kvbuffer) return;
  if (b.form == BufferForm::raw && b.state_dtype != StateDtype::fp32)  // the raw kernels take fp32 checkpoints only
    throw std::invalid_argument(std::string("VerifyBatch: state_dtype = ") + to_string(b.state_dtype) +
                                " with form raw (allowed with raw: fp32)");
  if (b.form == BufferForm::raw && b.delta_dtype != StateDtype::fp32)  // the raw form buffers no deltas
    throw std::invalid_argument(std::string("VerifyBatch: delta_dtype = ") + to_string(b.delta_dtype) +
                                " with form raw (allowed with raw: fp32)");
  if (b.fill.size() != b.accepted.size())
    throw std::invalid_argument("VerifyBatch: fill and accepted must hold one value per row");
  const int max_fill = b.form == BufferForm::raw ? b.buffer_size - 1 : b.buffer_size - 1 + b.draft_tokens;
  for (size_t r = 0; r < b.fill.size(); ++r) {
    if (b.accepted[r] < 0 || b.accepted[r] > b.draft_tokens)
      throw std::invalid_argument("VerifyBatch: accepted[" + std::to_string(r) + "] = " +
                                  std::to_string(b.accepted[r]) + " (allowed: 0 to draft_tokens = " +
                                  std::to_string(b.draft_tokens) + ")");
    if (b.fill[r] < 0 || b.fill[r] > std::max(max_fill, 0))
      throw std::invalid_argument("VerifyBatch: fill[" + std::to_string(r) + "] = " + std::to_string(b.fill[r]) +
                                  " (allowed: 0 to " + std::to_string(std::max(max_fill, 0)) + ")");
  }
}

/// Verify bytes of every row at positions `fill` (kvbuffer).
ByteCount kvbuffer_verify_sum(const VerifyBatch& b, const std::vector<int32_t>& fill) {
  ByteCount sum;
  sum.read += gate_param_bytes(b.shape);
  for (int32_t f : fill)
    sum += b.form == BufferForm::raw ? kvbuffer_raw_verify_bytes(b.shape, f, b.draft_tokens, b.o_dtype)
                                     : kvbuffer_verify_bytes(b.shape, f, b.draft_tokens, b.buffer_size, b.o_dtype,
                                                             b.state_dtype, b.delta_dtype);
  return sum;
}

/// Accept bytes of one row holding `fill` entries that accepted `accepted` drafts (kvbuffer): the raw form's accept
/// launch; none for the delta form, whose verify already put the drafts' entries in place.
ByteCount kvbuffer_accept_row(const VerifyBatch& b, int fill, int accepted) {
  return b.form == BufferForm::raw ? kvbuffer_raw_accept_bytes(b.shape, fill, accepted, b.buffer_size) : ByteCount{};
}

}  // namespace

int fill_after_accept(int fill, int accepted, int buffer_size) {
  return fill + accepted >= buffer_size ? 0 : fill + accepted;
}

int fill_after_commit(int fill, int accepted, int buffer_size) {
  return (fill >= buffer_size ? 0 : fill) + accepted;
}

int fill_after(BufferForm form, int fill, int accepted, int buffer_size) {
  return form == BufferForm::raw ? fill_after_accept(fill, accepted, buffer_size)
                                 : fill_after_commit(fill, accepted, buffer_size);
}

ByteCount kvbuffer_advance_accepted_bytes(int rows) {
  ByteCount b;
  b.read = rows * 12.0;
  b.write = rows * 4.0;
  return b;
}

ByteCount verify_layer_step_bytes(const VerifyBatch& b) {
  check_rows(b);
  if (!b.kvbuffer)
    return recurrent_verify_bytes(b.shape, int(b.accepted.size()), b.draft_tokens, b.o_dtype, b.state_dtype);
  return kvbuffer_verify_sum(b, b.fill);
}

ByteCount verify_accept_layer_step_bytes(const VerifyBatch& b, int steps) {
  check_rows(b);
  if (steps < 1) throw std::invalid_argument("verify_accept_layer_step_bytes: steps must be >= 1");
  if (!b.kvbuffer) {
    ByteCount sum = verify_layer_step_bytes(b);
    for (int32_t a : b.accepted) sum += recurrent_accept_bytes(b.shape, a, b.state_dtype);
    return sum;
  }
  const int rows = int(b.fill.size());
  const ByteCount advance = kvbuffer_advance_accepted_bytes(rows);
  std::vector<int32_t> fill = b.fill;
  ByteCount sum;
  for (int t = 0; t < steps; ++t) {
    sum += kvbuffer_verify_sum(b, fill);
    for (int r = 0; r < rows; ++r) {
      sum += kvbuffer_accept_row(b, fill[r], b.accepted[r]);
      fill[r] = fill_after(b.form, fill[r], b.accepted[r], b.buffer_size);
    }
    sum.read += advance.read / b.layers;
    sum.write += advance.write / b.layers;
  }
  sum.read /= steps;
  sum.write /= steps;
  return sum;
}

}  // namespace kvb
