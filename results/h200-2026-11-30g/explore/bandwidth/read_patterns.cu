// Read-bandwidth probe: which read pattern reaches the H200's read ceiling.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("err %s line %d: %s\n",#x,__LINE__,cudaGetErrorString(e)); exit(1);}}while(0)
__device__ __forceinline__ uint32_t fold(uint4 v){return v.x^v.y^v.z^v.w;}

template<int D>
__global__ void gs(const uint4* __restrict__ src, size_t n, uint32_t never, uint32_t* sink){
  const size_t stride=size_t(gridDim.x)*blockDim.x; size_t i=size_t(blockIdx.x)*blockDim.x+threadIdx.x; uint32_t acc=0;
  for(; i+(D-1)*stride<n; i+=D*stride){ uint4 v[D];
#pragma unroll
    for(int d=0;d<D;++d) v[d]=__ldg(src+i+d*stride);
#pragma unroll
    for(int d=0;d<D;++d) acc^=fold(v[d]); }
  for(;i<n;i+=stride) acc^=fold(__ldg(src+i));
  if(acc==never) *sink=acc;
}
// grid-stride where each thread reads D consecutive-in-warp chunks (warp reads D*512 contiguous bytes)
template<int D>
__global__ void gsw(const uint4* __restrict__ src, size_t n, uint32_t never, uint32_t* sink){
  const int lane=threadIdx.x%32; const size_t warps=size_t(gridDim.x)*blockDim.x/32; size_t w=(size_t(blockIdx.x)*blockDim.x+threadIdx.x)/32;
  uint32_t acc=0; const size_t per=32*D;
  for(; (w+1)*per<=n; w+=warps){ uint4 v[D]; const uint4* p=src+w*per+lane;
#pragma unroll
    for(int d=0;d<D;++d) v[d]=__ldg(p+d*32);
#pragma unroll
    for(int d=0;d<D;++d) acc^=fold(v[d]); }
  if(acc==never) *sink=acc;
}
// one block per contiguous chunk of CH bytes, every load issued up front
template<int CH,int T>
__global__ void chunk(const uint4* __restrict__ src, uint32_t never, uint32_t* sink){
  constexpr int L=CH/16/T; const uint4* p=src+size_t(blockIdx.x)*(CH/16)+threadIdx.x; uint4 v[L]; uint32_t acc=0;
#pragma unroll
  for(int d=0;d<L;++d) v[d]=__ldg(p+d*T);
#pragma unroll
  for(int d=0;d<L;++d) acc^=fold(v[d]);
  if(acc==never) *sink=acc;
}
// decode pattern: state [128][128] fp32 per head (64 KB); block reads a 128 x VB slice (row pitch 512 B) with T threads
template<int VB,int T>
__global__ void slice(const uint4* __restrict__ src, uint32_t never, uint32_t* sink){
  constexpr int VEC=VB/4, L=128*VEC/T; const int nsl=128/VB; const size_t head=blockIdx.x/nsl; const int s=blockIdx.x%nsl;
  const uint4* base=src+head*(128*32)+s*VEC; uint4 v[L]; uint32_t acc=0;
#pragma unroll
  for(int d=0;d<L;++d){int idx=threadIdx.x+d*T; v[d]=__ldg(base+(idx/VEC)*32+idx%VEC);}
#pragma unroll
  for(int d=0;d<L;++d) acc^=fold(v[d]);
  if(acc==never) *sink=acc;
}
__device__ __forceinline__ void cpa(void* s,const void* g){unsigned a=__cvta_generic_to_shared(s); asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"::"r"(a),"l"(g));}
template<int VB,int T>
__global__ void slice_cp(const uint4* __restrict__ src, uint32_t never, uint32_t* sink){
  extern __shared__ uint4 sm[]; constexpr int VEC=VB/4, L=128*VEC/T; const int nsl=128/VB; const size_t head=blockIdx.x/nsl; const int s=blockIdx.x%nsl;
  const uint4* base=src+head*(128*32)+s*VEC;
#pragma unroll
  for(int d=0;d<L;++d){int idx=threadIdx.x+d*T; cpa(sm+idx, base+(idx/VEC)*32+idx%VEC);}
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n"::);
  __syncthreads(); uint32_t acc=0;
#pragma unroll 4
  for(int d=0;d<L;++d) acc^=fold(sm[(threadIdx.x*5+d*T)%(128*VEC)]);
  if(acc==never) *sink=acc;
}
// bulk (TMA 1D) copies: block reads CH contiguous bytes in pieces of PC bytes, all in flight
__device__ __forceinline__ unsigned sa(const void* p){return (unsigned)__cvta_generic_to_shared(p);}
template<int CH,int PC>
__global__ void bulk(const uint4* __restrict__ src, uint32_t never, uint32_t* sink){
  extern __shared__ __align__(128) uint4 sm[]; __shared__ __align__(8) uint64_t bar;
  const char* g=reinterpret_cast<const char*>(src)+size_t(blockIdx.x)*CH;
  if(threadIdx.x==0){ asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n"::"r"(sa(&bar))); asm volatile("fence.mbarrier_init.release.cluster;\n"::);}
  __syncthreads();
  if(threadIdx.x==0){ asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"::"r"(sa(&bar)),"r"(CH):"memory");
    for(int o=0;o<CH;o+=PC) asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"::"r"(sa(reinterpret_cast<char*>(sm)+o)),"l"(g+o),"r"(PC),"r"(sa(&bar)):"memory"); }
  asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra W;\n}\n"::"r"(sa(&bar)):"memory");
  uint32_t acc=fold(sm[threadIdx.x]);
  if(acc==never) *sink=acc;
}
// bulk copies of the decode slice: one 4*VB-byte row piece per row, issued by the lanes of warp 0
template<int VB>
__global__ void bulk_slice(const uint4* __restrict__ src, uint32_t never, uint32_t* sink){
  extern __shared__ __align__(128) uint4 sm[]; __shared__ __align__(8) uint64_t bar;
  const int nsl=128/VB; const size_t head=blockIdx.x/nsl; const int s=blockIdx.x%nsl;
  const char* g=reinterpret_cast<const char*>(src)+head*65536+s*VB*4;
  if(threadIdx.x==0){ asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n"::"r"(sa(&bar))); asm volatile("fence.mbarrier_init.release.cluster;\n"::);}
  __syncthreads();
  if(threadIdx.x==0) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"::"r"(sa(&bar)),"r"(128*VB*4):"memory");
  __syncthreads();
  if(threadIdx.x<32) for(int r=threadIdx.x;r<128;r+=32) asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"::"r"(sa(reinterpret_cast<char*>(sm)+r*VB*4)),"l"(g+r*512),"r"(VB*4),"r"(sa(&bar)):"memory");
  asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra W;\n}\n"::"r"(sa(&bar)):"memory");
  uint32_t acc=fold(sm[threadIdx.x]);
  if(acc==never) *sink=acc;
}
__global__ void fillk(uint4* p,size_t n){for(size_t i=size_t(blockIdx.x)*blockDim.x+threadIdx.x;i<n;i+=size_t(gridDim.x)*blockDim.x){uint32_t x=uint32_t(i*2654435761u)^0x9e37; p[i]=make_uint4(x,x*3+1,x*7+5,~x);}}
__global__ void copyk(const uint4* __restrict__ s,uint4* __restrict__ d,size_t n){const size_t st=size_t(gridDim.x)*blockDim.x; size_t i=size_t(blockIdx.x)*blockDim.x+threadIdx.x;
  for(;i+3*st<n;i+=4*st){uint4 a=s[i],b=s[i+st],c=s[i+2*st],e=s[i+3*st]; d[i]=a;d[i+st]=b;d[i+2*st]=c;d[i+3*st]=e;} for(;i<n;i+=st)d[i]=s[i];}

template<class F> void timeit(const char* name,size_t bytes,double factor,F f){
  cudaEvent_t a,b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); f(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  std::vector<float> t; for(int r=0;r<15;++r){CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms,a,b)); t.push_back(ms);} CK(cudaGetLastError());
  std::sort(t.begin(),t.end()); printf("%-28s best %7.1f GB/s  median %7.1f GB/s\n",name,factor*bytes/(t[0]*1e6),factor*bytes/(t[7]*1e6)); fflush(stdout);
  cudaEventDestroy(a); cudaEventDestroy(b);
}
template<auto K> int occ(int T,int sm){int b=0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b,K,T,sm)); return b;}
int main(int argc,char**argv){
  size_t bytes=size_t(argc>1?atoi(argv[1]):2048)<<20; size_t n=bytes/16; int sms; CK(cudaDeviceGetAttribute(&sms,cudaDevAttrMultiProcessorCount,0));
  uint4 *s,*d; uint32_t* sink; CK(cudaMalloc(&s,bytes)); CK(cudaMalloc(&d,bytes)); CK(cudaMalloc(&sink,4));
  fillk<<<1024,256>>>(s,n); fillk<<<1024,256>>>(d,n); CK(cudaDeviceSynchronize());
  printf("buffer %zu MiB, %d SMs\n",bytes>>20,sms);
  timeit("copy gs4 (read+write)",bytes,2,[&]{copyk<<<sms*occ<copyk>(256,0),256>>>(s,d,n);});
  timeit("cudaMemcpy D2D (r+w)",bytes,2,[&]{CK(cudaMemcpyAsync(d,s,bytes,cudaMemcpyDeviceToDevice));});
  timeit("gs8 full-occ (=kvb info)",bytes,1,[&]{gs<8><<<sms*occ<gs<8>>(256,0),256>>>(s,n,1u,sink);});
  for(int bps: {1,2,4}) { char nm[64]; snprintf(nm,64,"gs8 %d blk/SM",bps); timeit(nm,bytes,1,[&]{gs<8><<<sms*bps,256>>>(s,n,1u,sink);}); }
  timeit("gs4 full-occ",bytes,1,[&]{gs<4><<<sms*occ<gs<4>>(256,0),256>>>(s,n,1u,sink);});
  timeit("gs16 full-occ",bytes,1,[&]{gs<16><<<sms*occ<gs<16>>(256,0),256>>>(s,n,1u,sink);});
  timeit("gs1 full-occ",bytes,1,[&]{gs<1><<<sms*occ<gs<1>>(256,0),256>>>(s,n,1u,sink);});
  timeit("gsw4 full-occ",bytes,1,[&]{gsw<4><<<sms*occ<gsw<4>>(256,0),256>>>(s,n,1u,sink);});
  timeit("gsw8 full-occ",bytes,1,[&]{gsw<8><<<sms*occ<gsw<8>>(256,0),256>>>(s,n,1u,sink);});
  timeit("gs8 huge grid (n/256/8)",bytes,1,[&]{gs<8><<<unsigned(n/256/8),256>>>(s,n,1u,sink);});
  timeit("chunk 32K x128",bytes,1,[&]{chunk<32768,128><<<unsigned(bytes/32768),128>>>(s,1u,sink);});
  timeit("chunk 32K x256",bytes,1,[&]{chunk<32768,256><<<unsigned(bytes/32768),256>>>(s,1u,sink);});
  timeit("chunk 64K x256",bytes,1,[&]{chunk<65536,256><<<unsigned(bytes/65536),256>>>(s,1u,sink);});
  timeit("chunk 16K x128",bytes,1,[&]{chunk<16384,128><<<unsigned(bytes/16384),128>>>(s,1u,sink);});
  timeit("chunk 8K x128",bytes,1,[&]{chunk<8192,128><<<unsigned(bytes/8192),128>>>(s,1u,sink);});
  timeit("slice VB64 x128 (decode)",bytes,1,[&]{slice<64,128><<<unsigned(bytes/32768),128>>>(s,1u,sink);});
  timeit("slice VB128 x256",bytes,1,[&]{slice<128,256><<<unsigned(bytes/65536),256>>>(s,1u,sink);});
  timeit("slice VB32 x128",bytes,1,[&]{slice<32,128><<<unsigned(bytes/16384),128>>>(s,1u,sink);});
  CK(cudaFuncSetAttribute(slice_cp<64,128>,cudaFuncAttributeMaxDynamicSharedMemorySize,32768));
  CK(cudaFuncSetAttribute(slice_cp<128,256>,cudaFuncAttributeMaxDynamicSharedMemorySize,65536));
  timeit("slice_cp VB64 x128 32K smem",bytes,1,[&]{slice_cp<64,128><<<unsigned(bytes/32768),128,32768>>>(s,1u,sink);});
  timeit("slice_cp VB128 x256 64K",bytes,1,[&]{slice_cp<128,256><<<unsigned(bytes/65536),256,65536>>>(s,1u,sink);});
  CK(cudaFuncSetAttribute(bulk<65536,16384>,cudaFuncAttributeMaxDynamicSharedMemorySize,65536));
  CK(cudaFuncSetAttribute(bulk<65536,65536>,cudaFuncAttributeMaxDynamicSharedMemorySize,65536));
  CK(cudaFuncSetAttribute(bulk<32768,4096>,cudaFuncAttributeMaxDynamicSharedMemorySize,32768));
  CK(cudaFuncSetAttribute(bulk<32768,32768>,cudaFuncAttributeMaxDynamicSharedMemorySize,32768));
  CK(cudaFuncSetAttribute(bulk_slice<64>,cudaFuncAttributeMaxDynamicSharedMemorySize,32768));
  CK(cudaFuncSetAttribute(bulk_slice<128>,cudaFuncAttributeMaxDynamicSharedMemorySize,65536));
  timeit("bulk 64K in 16K",bytes,1,[&]{bulk<65536,16384><<<unsigned(bytes/65536),128,65536>>>(s,1u,sink);});
  timeit("bulk 64K in 64K",bytes,1,[&]{bulk<65536,65536><<<unsigned(bytes/65536),128,65536>>>(s,1u,sink);});
  timeit("bulk 32K in 4K",bytes,1,[&]{bulk<32768,4096><<<unsigned(bytes/32768),128,32768>>>(s,1u,sink);});
  timeit("bulk 32K in 32K",bytes,1,[&]{bulk<32768,32768><<<unsigned(bytes/32768),128,32768>>>(s,1u,sink);});
  timeit("bulk_slice VB64 (256B rows)",bytes,1,[&]{bulk_slice<64><<<unsigned(bytes/32768),128,32768>>>(s,1u,sink);});
  timeit("bulk_slice VB128 (512B rows)",bytes,1,[&]{bulk_slice<128><<<unsigned(bytes/65536),128,65536>>>(s,1u,sink);});
  timeit("gs8 full-occ again",bytes,1,[&]{gs<8><<<sms*occ<gs<8>>(256,0),256>>>(s,n,1u,sink);});
  timeit("copy gs4 again (r+w)",bytes,2,[&]{copyk<<<sms*occ<copyk>(256,0),256>>>(s,d,n);});
  return 0;
}
