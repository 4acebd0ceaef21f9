// TF32 tensor-core products (mma.sync m16n8k8, sm_80 and later) with an fp32-accurate split (3xTF32), and bf16 ones
// (m16n8k16) of fp32 values split in three bf16 parts where the other operand is exact in bf16.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k8" with .tf32), lane = 4 g + t (g = lane / 4, t = lane % 4):
//   A (16 x 8):  a[0] = A[g][t], a[1] = A[g + 8][t], a[2] = A[g][t + 4], a[3] = A[g + 8][t + 4]
//   B (8 x 8):   b0 = B[t][g], b1 = B[t + 4][g]
//   D (16 x 8):  d[0] = D[g][2t], d[1] = D[g][2t + 1], d[2] = D[g + 8][2t], d[3] = D[g + 8][2t + 1]
// A TF32 operand keeps 10 of fp32's 23 mantissa bits (a product is good to about 1e-3). 3xTF32 splits each operand
// x into hi = x rounded to TF32 (half away from zero, by an add and an AND on its bits, where cvt.rna takes a
// sequence the SM runs in five instructions) and lo = x - hi (exact, |lo| <= 2^-11 |x|), and sums
// hi b_hi + hi b_lo + lo b_hi: only lo b_lo (about 2^-22 of the product) and the tensor cores' truncation of lo to
// TF32 (at most 2^-21, of either sign) are lost, fp32 accuracy for what feeds a state.
#pragma once

#include <cstdint>

namespace kvb::dev {

/// An fp32 value split for 3xTF32 products: hi = x rounded to TF32 (finite x), lo = x - hi (exact; the tensor
/// cores read lo's top 19 bits).
struct Tf32Pair {
  uint32_t hi, lo;
};
__device__ __forceinline__ Tf32Pair split_tf32(float x) {
  const uint32_t hi = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  return {hi, __float_as_uint(x - __uint_as_float(hi))};
}

/// An A fragment split for 3xTF32: hi[i], lo[i] of the four values a[i] (layout above).
struct Tf32A {
  uint32_t hi[4], lo[4];
};
__device__ __forceinline__ Tf32A split_a(float a0, float a1, float a2, float a3) {
  Tf32A r;
  const float a[4] = {a0, a1, a2, a3};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const Tf32Pair x = split_tf32(a[i]);
    r.hi[i] = x.hi;
    r.lo[i] = x.lo;
  }
  return r;
}

/// d += A B, one m16n8k8 TF32 product with fp32 accumulators (operands as TF32 bits; layouts above).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// d += A B to about fp32 accuracy (3xTF32): the two small terms first, then hi x hi.
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const Tf32A& a, Tf32Pair b0, Tf32Pair b1) {
  mma_tf32(d, a.lo, b0.hi, b1.hi);
  mma_tf32(d, a.hi, b0.lo, b1.lo);
  mma_tf32(d, a.hi, b0.hi, b1.hi);
}

/// d += A B to about fp32 accuracy where A is exact in TF32 (bf16 values widened): A b_lo, then A b_hi; only the
/// tensor cores' truncation of b_lo to TF32 is lost.
__device__ __forceinline__ void mma_2xtf32(float (&d)[4], const uint32_t (&a)[4], Tf32Pair b0, Tf32Pair b1) {
  mma_tf32(d, a, b0.lo, b1.lo);
  mma_tf32(d, a, b0.hi, b1.hi);
}

/// The A fragment of four bf16 values, exact in TF32: w0 = (a[0], a[1]) and w1 = (a[2], a[3]), each pair as two bf16
/// halves of one word, the first in the low half.
__device__ __forceinline__ void bf16_a(uint32_t w0, uint32_t w1, uint32_t (&a)[4]) {
  a[0] = w0 << 16;
  a[1] = w0 & 0xffff0000u;
  a[2] = w1 << 16;
  a[3] = w1 & 0xffff0000u;
}

/// Two fp32 values rounded to bf16 (nearest even) in one word, `lo` in the low half.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// d += A B, one m16n8k16 bf16 product with fp32 accumulators. Fragments (PTX ISA, "Matrix fragments for
/// mma.m16n8k16" with .bf16), each word two bf16 values, the lower k in the low half:
///   A (16 x 16): a[0] = A[g][2t, 2t + 1], a[1] = A[g + 8][2t, 2t + 1], a[2] = A[g][2t + 8, 2t + 9],
///                a[3] = A[g + 8][2t + 8, 2t + 9]
///   B (16 x 8):  b0 = B[2t, 2t + 1][g], b1 = B[2t + 8, 2t + 9][g];   D as m16n8k8's.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Two fp32 values x (low half) and y split in three bf16 parts each, x = hi + mid + lo to within 2^-24 |x|: hi = x
/// rounded to bf16 (nearest even), mid = x - hi rounded (x - hi is exact in fp32), lo = x - hi - mid rounded.
struct Bf16x3Word {
  uint32_t hi, mid, lo;
};
__device__ __forceinline__ Bf16x3Word split_bf16x3(float x, float y) {
  const uint32_t h = pack_bf16x2(x, y);
  const float rx = x - __uint_as_float(h << 16), ry = y - __uint_as_float(h & 0xffff0000u);
  const uint32_t m = pack_bf16x2(rx, ry);
  const uint32_t l = pack_bf16x2(rx - __uint_as_float(m << 16), ry - __uint_as_float(m & 0xffff0000u));
  return {h, m, l};
}

/// Four 8 x 8 matrices of 16-bit elements from shared memory (ldmatrix .x4): lanes 8 i .. 8 i + 7 give the addresses
/// of matrix i's eight rows (16 bytes each); r[i] is matrix i's element [g][2t, 2t + 1] (.trans: [2t, 2t + 1][g], the
/// matrix transposed). A row-major A tile of mma_bf16 is rows 0-7 / 8-15 by columns 0-7 / 8-15 as matrices 0 to 3
/// in order (a[0] .. a[3]); B (16 x 8) with .trans from a [k][n] tile, matrices k 0-7 and k 8-15 (b0, b1).
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
/// The inverse of ldmatrix_x4_trans: r[i] to matrix i's rows at the addresses of lanes 8 i .. 8 i + 7.
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

}  // namespace kvb::dev
