// Buffer positions: request metadata shared by all layers, read by the KVBuffer kernels and written only here.
#include "kernels/gdn_params.h"
#include "kernels/row_order.h"

namespace kvb {
namespace {

__global__ void kvbuffer_advance_kernel(int32_t* fill, const int32_t* slot, int batch, int buffer_size) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch) return;
  const int s = slot[i];
  if (s < 0) return;
  const int n = fill[s] + 1;
  fill[s] = n >= buffer_size ? 0 : n;
}

__global__ void kvbuffer_clear_kernel(int32_t* fill, const int32_t* slot, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int s = slot[i];
  if (s >= 0) fill[s] = 0;
}

constexpr int kOrderThreads = 1024;

/// What the order kernel reads: the launch's rows and positions, and the fill from which a row is due (its blocks
/// fold the buffer into the checkpoint): buffer_size - 1 for decode (the step's token fills the buffer), buffer_size
/// for verify (the last commit filled it).
struct OrderInputs {
  int batch = 0;
  const int32_t* slot = nullptr;
  const int32_t* fill = nullptr;
  int num_slots = 0, capacity = 0, due_fill = 0;
};

/// One block: the rows' due flags in chunks of kOrderThreads, each chunk's ranks by a block-wide scan, and every row
/// written at its row_position.
__global__ void __launch_bounds__(kOrderThreads) kvbuffer_order_rows_kernel(const OrderInputs in, int wave_rows,
                                                                            OrderedRow* row_order) {
  __shared__ int warp_due[kOrderThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const auto due = [&](int i, int s) {
    return i < in.batch && s >= 0 && s < in.num_slots && min(max(in.fill[s], 0), in.capacity) >= in.due_fill;
  };
  int due_rows = 0;
  for (int base = 0; base < in.batch; base += kOrderThreads) {
    const int i = base + threadIdx.x;
    due_rows += __syncthreads_count(due(i, i < in.batch ? in.slot[i] : -1));
  }
  int due_before = 0;  // due rows of the chunks before this one
  for (int base = 0; base < in.batch; base += kOrderThreads) {
    const int i = base + threadIdx.x;
    const int s = i < in.batch ? in.slot[i] : -1;
    const bool d = due(i, s);
    const unsigned ballot = __ballot_sync(0xffffffffu, d);
    if (lane == 0) warp_due[warp] = __popc(ballot);
    __syncthreads();
    int rank = due_before + __popc(ballot & ((1u << lane) - 1u)), chunk_due = 0;
    for (int w = 0; w < kOrderThreads / 32; ++w) {
      rank += w < warp ? warp_due[w] : 0;
      chunk_due += warp_due[w];
    }
    if (i < in.batch) {
      const int fill = s >= 0 && s < in.num_slots ? in.fill[s] : 0;
      row_order[row_position(d, d ? rank : i - rank, due_rows, in.batch, wave_rows)] = OrderedRow{i, s, fill, 0};
    }
    due_before += chunk_due;
    __syncthreads();  // warp_due is read before the next chunk writes it
  }
}

cudaError_t launch_order_rows(const OrderInputs& in, int wave_rows, OrderedRow* row_order, cudaStream_t stream) {
  if (!row_order || !in.slot || !in.fill || in.batch < 1) return cudaErrorInvalidValue;
  kvbuffer_order_rows_kernel<<<1, kOrderThreads, 0, stream>>>(in, wave_rows, row_order);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_kvbuffer_order_rows(const KVBufferVerifyParams& p, int wave_rows, OrderedRow* row_order,
                                       cudaStream_t stream) {
  return launch_order_rows({p.batch, p.slot, p.pool.fill, p.pool.num_slots, p.pool.capacity, p.pool.buffer_size},
                           wave_rows, row_order, stream);
}

cudaError_t launch_kvbuffer_order_decode_rows(const KVBufferDecodeParams& p, int wave_rows, OrderedRow* row_order,
                                              cudaStream_t stream) {
  return launch_order_rows(
      {p.batch, p.slot, p.pool.fill, p.pool.num_slots, p.pool.capacity, p.pool.buffer_size - 1}, wave_rows,
      row_order, stream);
}

cudaError_t launch_kvbuffer_advance(int32_t* fill, const int32_t* slot, int batch, int buffer_size,
                                    cudaStream_t stream) {
  if (!fill || !slot || batch < 1 || buffer_size < 1) return cudaErrorInvalidValue;
  kvbuffer_advance_kernel<<<(batch + 255) / 256, 256, 0, stream>>>(fill, slot, batch, buffer_size);
  return cudaGetLastError();
}

cudaError_t launch_kvbuffer_clear(int32_t* fill, const int32_t* slot, int count, cudaStream_t stream) {
  if (!fill || !slot || count < 1) return cudaErrorInvalidValue;
  kvbuffer_clear_kernel<<<(count + 255) / 256, 256, 0, stream>>>(fill, slot, count);
  return cudaGetLastError();
}

}  // namespace kvb
