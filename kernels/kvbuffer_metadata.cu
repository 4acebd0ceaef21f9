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

/// One block: the rows' due flags in chunks of kOrderThreads, each chunk's ranks by a block-wide scan, and every row
/// written at its row_position.
__global__ void __launch_bounds__(kOrderThreads) kvbuffer_order_rows_kernel(const KVBufferVerifyParams p,
                                                                            int wave_rows, OrderedRow* row_order) {
  __shared__ int warp_due[kOrderThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const auto due = [&](int i, int s) {
    return i < p.batch && s >= 0 && s < p.pool.num_slots &&
           min(max(p.pool.fill[s], 0), p.pool.capacity) >= p.pool.buffer_size;
  };
  int due_rows = 0;
  for (int base = 0; base < p.batch; base += kOrderThreads) {
    const int i = base + threadIdx.x;
    due_rows += __syncthreads_count(due(i, i < p.batch ? p.slot[i] : -1));
  }
  int due_before = 0;  // due rows of the chunks before this one
  for (int base = 0; base < p.batch; base += kOrderThreads) {
    const int i = base + threadIdx.x;
    const int s = i < p.batch ? p.slot[i] : -1;
    const bool d = due(i, s);
    const unsigned ballot = __ballot_sync(0xffffffffu, d);
    if (lane == 0) warp_due[warp] = __popc(ballot);
    __syncthreads();
    int rank = due_before + __popc(ballot & ((1u << lane) - 1u)), chunk_due = 0;
    for (int w = 0; w < kOrderThreads / 32; ++w) {
      rank += w < warp ? warp_due[w] : 0;
      chunk_due += warp_due[w];
    }
    if (i < p.batch) {
      const int fill = s >= 0 && s < p.pool.num_slots ? p.pool.fill[s] : 0;
      row_order[row_position(d, d ? rank : i - rank, due_rows, p.batch, wave_rows)] = OrderedRow{i, s, fill, 0};
    }
    due_before += chunk_due;
    __syncthreads();  // warp_due is read before the next chunk writes it
  }
}

}  // namespace

cudaError_t launch_kvbuffer_order_rows(const KVBufferVerifyParams& p, int wave_rows, OrderedRow* row_order,
                                       cudaStream_t stream) {
  if (!row_order || !p.slot || !p.pool.fill || p.batch < 1) return cudaErrorInvalidValue;
  kvbuffer_order_rows_kernel<<<1, kOrderThreads, 0, stream>>>(p, wave_rows, row_order);
  return cudaGetLastError();
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
