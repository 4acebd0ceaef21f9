// (1) why the first read measurement of a process is slow; (2) which copy pattern reaches the copy ceiling.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <chrono>
#include <thread>
#include <functional>
#include "harness/device/bandwidth.h"
#include "harness/profile/dram_probe.h"
#include "kernels/cuda_check.h"
using kvb::DeviceBuffer;
__device__ __forceinline__ uint32_t fold(uint4 v){return v.x^v.y^v.z^v.w;}
template<int CH,int T> __global__ void chunk_read(const uint4* __restrict__ src, uint32_t never, uint32_t* sink){
  constexpr int L=CH/16/T; const uint4* p=src+size_t(blockIdx.x)*(CH/16)+threadIdx.x; uint4 v[L]; uint32_t acc=0;
#pragma unroll
  for(int d=0;d<L;++d) v[d]=__ldg(p+d*T);
#pragma unroll
  for(int d=0;d<L;++d) acc^=fold(v[d]);
  if(acc==never) *sink=acc; }
template<int CH,int T> __global__ void chunk_copy(const uint4* __restrict__ src, uint4* __restrict__ dst){
  constexpr int L=CH/16/T; const size_t o=size_t(blockIdx.x)*(CH/16)+threadIdx.x; uint4 v[L];
#pragma unroll
  for(int d=0;d<L;++d) v[d]=__ldg(src+o+d*T);
#pragma unroll
  for(int d=0;d<L;++d) dst[o+d*T]=v[d]; }
template<int CH,int T> __global__ void chunk_rmw(uint4* __restrict__ x){
  constexpr int L=CH/16/T; const size_t o=size_t(blockIdx.x)*(CH/16)+threadIdx.x; uint4 v[L];
#pragma unroll
  for(int d=0;d<L;++d) v[d]=x[o+d*T];
#pragma unroll
  for(int d=0;d<L;++d){v[d].x^=0x80000000u; x[o+d*T]=v[d];} }
template<int D> __global__ void gs_copy(const uint4* __restrict__ s,uint4* __restrict__ d,size_t n){const size_t st=size_t(gridDim.x)*blockDim.x; size_t i=size_t(blockIdx.x)*blockDim.x+threadIdx.x;
  for(;i+(D-1)*st<n;i+=D*st){uint4 v[D];
#pragma unroll
  for(int k=0;k<D;++k) v[k]=__ldg(s+i+k*st);
#pragma unroll
  for(int k=0;k<D;++k) d[i+k*st]=v[k];} for(;i<n;i+=st)d[i]=s[i];}
std::vector<float> times(int reps, const std::function<void()>& f){cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<float> t;
  for(int r=0;r<reps;++r){cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms,a,b); t.push_back(ms);} KVB_CUDA_CHECK(cudaGetLastError()); cudaEventDestroy(a); cudaEventDestroy(b); return t;}
void report(const char* name,double bytes,std::vector<float> t){printf("%-34s",name); for(size_t i=0;i<std::min<size_t>(t.size(),12);++i) printf(" %6.0f",bytes/(t[i]*1e6)); std::sort(t.begin(),t.end()); printf(" | best %6.1f median %6.1f GB/s\n",bytes/(t[0]*1e6),bytes/(t[t.size()/2]*1e6)); fflush(stdout);}
int main(int argc,char**argv){
  const int mode=argc>1?atoi(argv[1]):0;
  const size_t bytes=size_t(2)<<30, n=bytes/16;
  if(mode==0){
    printf("-- read first in the process (per-rep GB/s, first 12 reps)\n");
    { DeviceBuffer<uint4> s(n); DeviceBuffer<uint32_t> sink(1); KVB_CUDA_CHECK(kvb::launch_fill_random_probe(s.get(),bytes,7,nullptr)); KVB_CUDA_CHECK(cudaMemset(sink.get(),0,4)); KVB_CUDA_CHECK(cudaDeviceSynchronize());
      report("read, fresh buffer, 40 reps",bytes,times(40,[&]{KVB_CUDA_CHECK(kvb::launch_read_probe(s.get(),bytes,0u,sink.get(),nullptr));}));
      report("read, same buffer again",bytes,times(40,[&]{KVB_CUDA_CHECK(kvb::launch_read_probe(s.get(),bytes,0u,sink.get(),nullptr));}));
    }
    { DeviceBuffer<uint4> s(n); DeviceBuffer<uint32_t> sink(1); KVB_CUDA_CHECK(kvb::launch_fill_random_probe(s.get(),bytes,7,nullptr)); KVB_CUDA_CHECK(cudaMemset(sink.get(),0,4)); KVB_CUDA_CHECK(cudaDeviceSynchronize());
      report("read, re-allocated buffer",bytes,times(40,[&]{KVB_CUDA_CHECK(kvb::launch_read_probe(s.get(),bytes,0u,sink.get(),nullptr));}));}
    { DeviceBuffer<uint4> big(n*4); DeviceBuffer<uint4> s(n); DeviceBuffer<uint32_t> sink(1); KVB_CUDA_CHECK(kvb::launch_fill_random_probe(s.get(),bytes,7,nullptr)); KVB_CUDA_CHECK(cudaMemset(sink.get(),0,4)); KVB_CUDA_CHECK(cudaDeviceSynchronize());
      report("read, buffer at new pages",bytes,times(40,[&]{KVB_CUDA_CHECK(kvb::launch_read_probe(s.get(),bytes,0u,sink.get(),nullptr));}));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      report("read, same after 300 ms idle",bytes,times(40,[&]{KVB_CUDA_CHECK(kvb::launch_read_probe(s.get(),bytes,0u,sink.get(),nullptr));}));}
    for(int k=0;k<3;++k) printf("measure_copy %.1f read %.1f\n",kvb::measure_copy_gbps(0),kvb::measure_read_gbps(0));
  } else {
    DeviceBuffer<uint4> s(n), d(n); DeviceBuffer<uint32_t> sink(1);
    KVB_CUDA_CHECK(kvb::launch_fill_random_probe(s.get(),bytes,7,nullptr)); KVB_CUDA_CHECK(kvb::launch_fill_random_probe(d.get(),bytes,9,nullptr)); KVB_CUDA_CHECK(cudaDeviceSynchronize());
    for(int round=0;round<2;++round){
    report("warm read probe (kvb)",bytes,times(30,[&]{KVB_CUDA_CHECK(kvb::launch_read_probe(s.get(),bytes,0u,sink.get(),nullptr));}));
    report("chunk_read 16K x128",bytes,times(30,[&]{chunk_read<16384,128><<<unsigned(bytes/16384),128>>>(s.get(),0u,sink.get());}));
    report("chunk_read 32K x128",bytes,times(30,[&]{chunk_read<32768,128><<<unsigned(bytes/32768),128>>>(s.get(),0u,sink.get());}));
    report("copy probe (kvb)",2.0*bytes,times(30,[&]{KVB_CUDA_CHECK(kvb::launch_copy_probe(s.get(),d.get(),bytes,nullptr));}));
    report("cudaMemcpyAsync D2D",2.0*bytes,times(30,[&]{KVB_CUDA_CHECK(cudaMemcpyAsync(d.get(),s.get(),bytes,cudaMemcpyDeviceToDevice));}));
    int o8=0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o8,gs_copy<8>,256,0);
    report("gs_copy8 full occ",2.0*bytes,times(30,[&]{gs_copy<8><<<132*o8,256>>>(s.get(),d.get(),n);}));
    report("gs_copy4 huge grid",2.0*bytes,times(30,[&]{gs_copy<4><<<unsigned(n/256/4),256>>>(s.get(),d.get(),n);}));
    report("chunk_copy 4K x128",2.0*bytes,times(30,[&]{chunk_copy<4096,128><<<unsigned(bytes/4096),128>>>(s.get(),d.get());}));
    report("chunk_copy 8K x128",2.0*bytes,times(30,[&]{chunk_copy<8192,128><<<unsigned(bytes/8192),128>>>(s.get(),d.get());}));
    report("chunk_copy 16K x128",2.0*bytes,times(30,[&]{chunk_copy<16384,128><<<unsigned(bytes/16384),128>>>(s.get(),d.get());}));
    report("chunk_copy 32K x256",2.0*bytes,times(30,[&]{chunk_copy<32768,256><<<unsigned(bytes/32768),256>>>(s.get(),d.get());}));
    report("chunk_rmw 16K x128 (in place)",2.0*bytes,times(30,[&]{chunk_rmw<16384,128><<<unsigned(bytes/16384),128>>>(s.get());}));
    report("chunk_rmw 32K x256 (in place)",2.0*bytes,times(30,[&]{chunk_rmw<32768,256><<<unsigned(bytes/32768),256>>>(s.get());}));
    report("chunk_rmw 64K x256 (in place)",2.0*bytes,times(30,[&]{chunk_rmw<65536,256><<<unsigned(bytes/65536),256>>>(s.get());}));
    }
  }
  return 0;
}
