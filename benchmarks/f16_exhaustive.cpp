// The branch-free fp16 conversions of kernel_rt.h against the plain case analysis they replaced, on every input:
// all 2^32 floats to fp16 and all 2^16 fp16 values to float, bit for bit; and float -> bf16 (without AVX-512 one
// select before the shift) against the early-return form, on all 2^32 floats (~30 s). Run it per ISA
// (add -mno-avx512f, -mno-avx).
//
//   g++ -O3 -march=native -I include benchmarks/f16_exhaustive.cpp -o /tmp/f16x && /tmp/f16x
#include <stdio.h>

#include "pypto/kernel_abi.h"
#include "pypto/kernel_rt.h"

using pypto_rt::bits_f32;
using pypto_rt::f32_bits;

/* ---- the reference: the case analysis, one branch per case ---- */
static uint16_t ref_f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? (0x200u | ((ax >> 13) & 0x3ffu)) : 0u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (ax >= 0x38800000u) return (uint16_t)(sign | ((ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13));
  if (ax <= 0x33000000u) return (uint16_t)sign;
  const uint32_t e = ax >> 23, mant = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
  uint32_t m = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
  return (uint16_t)(sign | m);
}
static uint16_t ref_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // NaN: quieted, not rounded
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
static float ref_f16_to_f32(uint16_t h) {
  const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t e = ((uint32_t)h >> 10) & 0x1fu, m = (uint32_t)h & 0x3ffu, bits;
  if (e == 0x1fu) bits = sign | 0x7f800000u | (m << 13);
  else if (e != 0) bits = sign | ((e + 112u) << 23) | (m << 13);
  else if (m == 0) bits = sign;
  else {
    e = 113u;
    while (!(m & 0x400u)) { m <<= 1; --e; }
    bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
  }
  return bits_f32(bits);
}

int main() {
  enum { N = 1 << 16 };
  static float xs[N];
  static uint16_t got[N];
  uint64_t bad = 0;
  for (uint64_t base = 0; base < (1ull << 32); base += N) {
    for (uint32_t i = 0; i < N; ++i) xs[i] = bits_f32((uint32_t)(base + i));
    for (uint32_t i = 0; i < N; ++i) got[i] = pypto_rt::f32_to_f16_bits(xs[i]);  // vectorized, as in kernels
    for (uint32_t i = 0; i < N; ++i)
      if (got[i] != ref_f32_to_f16(xs[i]) && bad++ < 5) printf("f32->f16 %08x: %04x, want %04x\n", f32_bits(xs[i]), got[i], ref_f32_to_f16(xs[i]));
    for (uint32_t i = 0; i < N; ++i) got[i] = pypto_rt::f32_to_bf16_bits(xs[i]);
    for (uint32_t i = 0; i < N; ++i)
      if (got[i] != ref_f32_to_bf16(xs[i]) && bad++ < 5) printf("f32->bf16 %08x: %04x, want %04x\n", f32_bits(xs[i]), got[i], ref_f32_to_bf16(xs[i]));
  }
  static uint16_t hs[N];
  static float fs[N];
  for (uint32_t i = 0; i < N; ++i) hs[i] = (uint16_t)i;
  for (uint32_t i = 0; i < N; ++i) fs[i] = pypto_rt::f16_bits_to_f32(hs[i]);
  for (uint32_t i = 0; i < N; ++i)
    if (f32_bits(fs[i]) != f32_bits(ref_f16_to_f32(hs[i])) && bad++ < 10) printf("f16->f32 %04x: %08x\n", i, f32_bits(fs[i]));
  printf("fp16/bf16 conversions: %llu of 2 x 2^32 + 2^16 inputs differ from the reference\n", (unsigned long long)bad);
  return bad != 0;
}
