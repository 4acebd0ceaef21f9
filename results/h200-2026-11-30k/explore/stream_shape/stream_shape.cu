// Exploration: how fast can blocks shaped like KVBuffer verify's (256 threads, a 64 KB fp32 checkpoint slice copied
// into shared memory in four cp.async groups, three blocks per SM) stream the checkpoints of 36 layers at batch 64 and
// 256 x 32 heads? Variants (argv[1]):
//   0: copy the slice, wait, write one float per block (the copy alone)
//   1: 0 plus the 4-draft pass's FMAs over the slice as it lands (8 coefficients a row, 512 FMAs a thread)
//   2: 1 plus the verify block's chain before its pass: two dependent reads (position, then entries) and
//      `spin` ns of work (argv[2]) between them and the pass
// Prints us per layer (median of 20 timed steps, CUDA events around 36 launches, distinct memory per layer).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ void cp16(void* s, const void* g) {
  unsigned a = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ unsigned long long now() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

template <int VARIANT>
__global__ void __launch_bounds__(256, 3) stream_kernel(const float* __restrict__ ckpt, const int* __restrict__ slot_of,
                                                       const int* __restrict__ fill, const float* __restrict__ entries,
                                                       float* __restrict__ out, long long spin_ns) {
  extern __shared__ float4 tile[];  // 128 rows x 32 float4
  __shared__ float coef[8][128];
  const int h = blockIdx.y, row = blockIdx.z, t = threadIdx.x;
  const int slot = slot_of[row];
  const float* s0 = ckpt + ((long long)slot * gridDim.y + h) * 128 * 128;
  const int c = t % 32, r0 = t / 32;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
#pragma unroll
    for (int i = 0; i < 4; ++i) { const int r = q * 32 + i * 8 + r0; cp16(&tile[r * 32 + (c ^ ((r & 1) << 2))], s0 + r * 128 + 4 * c); }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  float acc = 0.f;
  if (VARIANT == 2) {
    const int n = fill[slot];                       // dependent read 1
    const float e = entries[(long long)slot * 64 + (n & 63)];  // dependent read 2
    if (t < 128) for (int i = 0; i < 8; ++i) coef[i][t] = e * (i + 1) + t;
    const unsigned long long t0 = now();
    while (now() - t0 < (unsigned long long)spin_ns) acc += 1e-9f;
  } else if (VARIANT == 1) {
    if (t < 128) for (int i = 0; i < 8; ++i) coef[i][t] = 0.001f * (i + 1) + t;
  }
  if (VARIANT == 0) {
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads();
    acc += tile[t].x;
  } else {
    const int sub = (t % 32) / 4, c4 = (t / 32) * 4 + t % 4;
    float a[8][4] = {};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if (q == 0) asm volatile("cp.async.wait_group 3;\n" ::: "memory");
      if (q == 1) asm volatile("cp.async.wait_group 2;\n" ::: "memory");
      if (q == 2) asm volatile("cp.async.wait_group 1;\n" ::: "memory");
      if (q == 3) asm volatile("cp.async.wait_group 0;\n" ::: "memory");
      __syncthreads();
#pragma unroll
      for (int tt = 0; tt < 4; ++tt) {
        const int r = sub + 8 * (4 * q + tt);
        const float4 s = tile[r * 32 + (c4 ^ ((r & 1) << 2))];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float k = coef[i][r];
          a[i][0] = fmaf(k, s.x, a[i][0]); a[i][1] = fmaf(k, s.y, a[i][1]);
          a[i][2] = fmaf(k, s.z, a[i][2]); a[i][3] = fmaf(k, s.w, a[i][3]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) acc += a[i][0] + a[i][1] + a[i][2] + a[i][3];
  }
  if (acc == 1234.5f) out[0] = acc;  // keeps the work; never true for these inputs
  if (t == 0) out[1 + (blockIdx.z * gridDim.y + blockIdx.y)] = acc;
}

__global__ void fill_random(float* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)(i * 2654435761u) ^ (unsigned)(i >> 32);
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = (x & 0xffff) * (1.f / 65536.f) - 0.5f;
  }
}

int main(int argc, char** argv) {
  const int variant = argc > 1 ? atoi(argv[1]) : 0;
  const long long spin = argc > 2 ? atoll(argv[2]) : 0;
  const int layers = 36, HV = 32;
  for (int batch : {64, 256}) {
    const size_t per_layer = (size_t)batch * HV * 128 * 128;
    float* ck; CK(cudaMalloc(&ck, per_layer * layers * sizeof(float)));
    fill_random<<<4096, 256>>>(ck, per_layer * layers);
    CK(cudaGetLastError());
    int *slot, *fill; float *ent, *out;
    CK(cudaMalloc(&slot, batch * sizeof(int))); CK(cudaMalloc(&fill, batch * sizeof(int)));
    CK(cudaMalloc(&ent, (size_t)batch * 64 * sizeof(float))); CK(cudaMalloc(&out, (1 + batch * HV) * sizeof(float)));
    std::vector<int> hs(batch); for (int i = 0; i < batch; ++i) hs[i] = (i * 7) % batch;
    CK(cudaMemcpy(slot, hs.data(), batch * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemset(fill, 0, batch * sizeof(int))); fill_random<<<64, 256>>>(ent, (size_t)batch * 64);
    const size_t smem = 128 * 32 * 16 + 4 * 1024;  // 68 KB dynamic, 72 KB with the static coefficients: three an SM
    auto k = variant == 0 ? stream_kernel<0> : variant == 1 ? stream_kernel<1> : stream_kernel<2>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 256, smem));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int it = 0; it < 25; ++it) {
      CK(cudaEventRecord(a));
      for (int l = 0; l < layers; ++l)
        k<<<dim3(1, HV, batch), 256, smem>>>(ck + per_layer * l, slot, fill, ent, out, spin);
      CK(cudaGetLastError());
      CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
      float x; CK(cudaEventElapsedTime(&x, a, b)); if (it >= 5) ms.push_back(x);
    }
    std::sort(ms.begin(), ms.end());
    const double us = ms[ms.size() / 2] * 1e3 / layers;
    printf("variant %d spin %lld batch %d: %d blocks/SM, %.2f us a layer, %.0f GB/s of checkpoint\n", variant, spin, batch,
           per_sm, us, per_layer * 4.0 / us / 1e3);
    CK(cudaFree(ck)); CK(cudaFree(slot)); CK(cudaFree(fill)); CK(cudaFree(ent)); CK(cudaFree(out));
  }
  return 0;
}
