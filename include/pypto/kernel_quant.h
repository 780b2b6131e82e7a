/* pypto/kernel_quant.h: the FP4 E2M1 and MX (microscaling) conversions of generated code (pypto.cast to and from
 * DT_FP4_E2M1X2, pypto.quant_mx, pypto.scaled_mm's FP4 operands). Included after kernel_rt.h by kernels that use
 * them (codegen/quant.py).
 *
 *   - FP4 E2M1 (OCP MX 1.0): 1 sign, 2 exponent (bias 1), 1 mantissa bit; magnitudes 0 0.5 1 1.5 2 3 4 6; no
 *     inf, no NaN. Two values per byte (torch.float4_e2m1fn_x2): element 2i in the low nibble, 2i+1 high.
 *     Encoding rounds to nearest even and saturates (|x| >= 6 and inf give +-6); NaN has no code and becomes
 *     +6 (0x7), as the reference's encoder does.
 *   - MX shared scales (E8M0, 2^(e-127)) per block of 32 values: OCP "ROUND_DOWN" takes the exponent field of
 *     the block's largest magnitude minus the element format's largest exponent (8 for E4M3, 2 for E2M1);
 *     NV "ROUND_UP" takes ceil(log2(amax / max_element)) (448 or 6), so no value clips. Both clamp to
 *     [0, 254]; a NaN in the block gives 0xff (NaN scale).
 */
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace pypto_rt {

static inline float fp4_e2m1_value(uint32_t nibble) {
  static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = mag[nibble & 7u];
  return (nibble & 8u) ? -v : v;
}

/* one FP4 E2M1 value per byte (the code in the low nibble): how a kernel holds a DT_FP4_E2M1 argument after
 * unpacking its pairs (codegen/quant.py op_fp4_unpack); read as float, never computed on */
struct fp4_e2m1 {
  uint8_t bits;
  operator float() const { return fp4_e2m1_value(bits); }
};
template <>
struct Cvt<fp4_e2m1> {
  static fp4_e2m1 from(fp4_e2m1 v) { return v; }
};

/* round half to even of a small non-negative float (exact: every step is exact for these magnitudes) */
static inline uint32_t rne_small(float x) {
  const float q = std::floor(x);
  const float r = x - q;
  uint32_t n = (uint32_t)q;
  if (r > 0.5f || (r == 0.5f && (n & 1u))) ++n;
  return n;
}

static inline uint32_t fp4_e2m1_code(float f) {
  const uint32_t bits = f32_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7u;          /* NaN: +6 */
  const uint32_t sign = (bits >> 28) & 0x8u;
  const float a = bits_f32(bits & 0x7fffffffu);
  uint32_t code;
  if (a >= 6.0f) code = 7u;                                     /* saturate (inf too) */
  else if (a < 2.0f) code = rne_small(a * 2.0f);                /* 0 .. 2 in steps of 0.5: codes 0..4 */
  else if (a < 4.0f) code = rne_small(a) + 2u;                  /* 2 .. 4 in steps of 1: codes 4..6 */
  else code = rne_small(a * 0.5f) + 4u;                         /* 4 .. 6 in steps of 2: codes 6..7 */
  return sign | code;
}

static inline uint8_t fp4_e2m1_pair(float lo, float hi) {
  return (uint8_t)(fp4_e2m1_code(lo) | (fp4_e2m1_code(hi) << 4));
}

/* NaN-propagating running max of magnitudes */
static inline float mx_amax(float acc, float x) {
  const float a = std::fabs(x);
  if (acc != acc) return acc;
  if (a != a) return a;
  return a > acc ? a : acc;
}

static inline uint8_t mx_scale_ocp(float amax, int32_t emax) {
  if (amax != amax) return 0xffu;
  int32_t e = (int32_t)((f32_bits(amax) >> 23) & 0xffu) - emax;
  return (uint8_t)(e < 0 ? 0 : (e > 254 ? 254 : e));
}

static inline uint8_t mx_scale_nv(float amax, double max_elem) {
  if (amax != amax) return 0xffu;
  if (std::isinf(amax)) return 0xfeu;
  const double a = (double)amax;                 /* max_elem * 2^k is exact in double for every k used */
  if (a <= std::ldexp(max_elem, -127)) return 0u;
  int k;
  std::frexp(a / max_elem, &k);                  /* a / max_elem in [2^(k-1), 2^k), up to rounding */
  while (a > std::ldexp(max_elem, k)) ++k;
  while (a <= std::ldexp(max_elem, k - 1)) --k;  /* k: the least with a <= max_elem * 2^k */
  const int e = k + 127;
  return (uint8_t)(e < 0 ? 0 : (e > 254 ? 254 : e));
}

/* 1 / scale = 2^(127 - e) (exact, 2^-127 included); NaN for the NaN scale */
static inline float mx_recip(uint8_t e) {
  if (e == 0xffu) return bits_f32(0x7fc00000u);
  return std::ldexp(1.0f, 127 - (int)e);
}

/* E4M3 with saturation to +-448 (inf too), round to nearest even; NaN is 0x7f */
static inline fp8_e4m3fn mx_e4m3(float f) {
  if (f != f) {
    fp8_e4m3fn r;
    r.bits = 0x7fu;
    return r;
  }
  return fp8_e4m3fn::from_float(f > 448.0f ? 448.0f : (f < -448.0f ? -448.0f : f));
}

}  // namespace pypto_rt
