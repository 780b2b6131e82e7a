/* pypto kernel vector math: float transcendentals without libm calls, included by kernel_rt.h after exp_.
 *
 * Why not libm, libmvec or SLEEF. glibc's float functions are scalar calls, so a loop over them never vectorizes
 * (the issue-22 tanh-GELU ran 5x slower than torch). libmvec's vector variants (`#pragma omp declare simd`) and
 * SLEEF's give different bits than the scalar function of the same library for the same input, so an element's
 * value would depend on whether it falls in a loop's vector body or its scalar tail — which tiling, width, thread
 * count and fusion decide — and fused and unfused builds would no longer agree bit for bit (the rule of
 * codegen/fuse.py). SLEEF's inline headers are also per ISA and several hundred KB, which every kernel compile
 * would parse. So each function here is plain branch-free C++ on one float: bit operations, selects and
 * PYPTO_RT_MADD, which g++ vectorizes at the target's width (SSE4, AVX2, AVX-512) and which gives the same bits in
 * a vector lane and in the scalar tail, on every width (with FMA on both, or on neither).
 *
 * Coefficients: near-minimax fits by benchmarks/vmath_fit.py (mpmath reference). Error bounds: measured against
 * the fp64 libm result over every 17th float of each function's useful range (every float with STEP 1) by
 * benchmarks/vmath_ulp.cpp (the table is in docs/language.md, "Vector math"); tests/ut/language/test_vmath.py checks a dense sample, the specials (±0,
 * ±inf, NaN, subnormals, domain edges) and that a vector lane equals the scalar tail. fp64 keeps libm.
 */
#ifndef PYPTO_KERNEL_VMATH_H_
#define PYPTO_KERNEL_VMATH_H_

namespace pypto_rt {

static inline float vm_copysign(float mag, float sgn) {
  return bits_f32((f32_bits(mag) & 0x7fffffffu) | (f32_bits(sgn) & 0x80000000u));
}
static inline float vm_nan() { return bits_f32(0x7fc00000u); }
static inline float vm_inf() { return bits_f32(0x7f800000u); }

/* ---- logarithms ---------------------------------------------------------------------------------------------
 * Reduction (no table, no branch): a positive finite x (subnormals first scaled by 2^23) is 2^k z with z in
 * [sqrt(1/2), sqrt(2)): subtracting bits(sqrt(1/2)) makes the exponent field k and leaves z's bits in the rest.
 * f = z - 1 is exact (Sterbenz). log(1+f) = f - f^2/2 + f^3 P(f), P of degree 7. The callers choose the specials
 * (0, negative, inf, NaN) with selects after computing the garbage the reduction gives for them. */
struct vm_logred {
  float f, kf, y; /* x = 2^kf (1 + f); log(1 + f) = f + y */
};
static inline vm_logred vm_log_reduce(float x) {
  const bool sub = x < 0x1p-126f;
  const float xs = sub ? x * 0x1p23f : x;
  const uint32_t ix = f32_bits(xs);
  const uint32_t t = ix - 0x3f3504f3u;
  const int32_t k = ((int32_t)t >> 23) - (sub ? 23 : 0);
  const float z = bits_f32(ix - (t & 0xff800000u));
  const float f = z - 1.0f;
  float p = -0x1.38b580p-4f;
  p = PYPTO_RT_MADD(p, f, 0x1.055b6ap-3f);
  p = PYPTO_RT_MADD(p, f, -0x1.0d8542p-3f);
  p = PYPTO_RT_MADD(p, f, 0x1.22da1cp-3f);
  p = PYPTO_RT_MADD(p, f, -0x1.547244p-3f);
  p = PYPTO_RT_MADD(p, f, 0x1.99a008p-3f);
  p = PYPTO_RT_MADD(p, f, -0x1.000226p-2f);
  p = PYPTO_RT_MADD(p, f, 0x1.555554p-2f);
  const float f2 = f * f;
  vm_logred r;
  r.f = f;
  r.kf = (float)k;
  r.y = PYPTO_RT_MADD(-0.5f, f2, f2 * f * p);
  return r;
}
/* the result for x = 0 (-inf), x < 0 and NaN (NaN: x itself when x is NaN) and +inf; `r` otherwise */
static inline float vm_log_specials(float x, float r) {
  r = x == 0.0f ? -vm_inf() : r;
  r = x == vm_inf() ? x : r;
  return x < 0.0f ? vm_nan() : (x != x ? x : r);
}
#define PYPTO_RT_LN2_HI 0.693359375f /* 9 bits: k * LN2_HI is exact */
#define PYPTO_RT_LN2_LO -2.12194440e-4f
static inline float log_(float x) {
  const vm_logred l = vm_log_reduce(x);
  const float r = PYPTO_RT_MADD(l.kf, PYPTO_RT_LN2_HI, l.f + PYPTO_RT_MADD(l.kf, PYPTO_RT_LN2_LO, l.y));
  return vm_log_specials(x, r);
}
static inline float log2_(float x) {
  const vm_logred l = vm_log_reduce(x);
  /* log2(1+f) = (f + y) log2(e), log2(e) = HI + LO; k added last (exact when it dominates) */
  const float t = PYPTO_RT_MADD(l.y, 0x1.715476p+0f, l.f * 0x1.4ae0c0p-26f);
  return vm_log_specials(x, l.kf + PYPTO_RT_MADD(l.f, 0x1.715476p+0f, t));
}
static inline float log10_(float x) {
  const vm_logred l = vm_log_reduce(x);
  /* k log10(2) + (f + y) log10(e); log10(2) = 0x1.344p-2 (exact times k) + lo, log10(e) = HI + LO */
  const float t = PYPTO_RT_MADD(l.y, 0x1.bcb7b2p-2f, PYPTO_RT_MADD(l.f, -0x1.5b235ep-27f, l.kf * 0x1.3509f8p-18f));
  return vm_log_specials(x, PYPTO_RT_MADD(l.kf, 0x1.344p-2f, PYPTO_RT_MADD(l.f, 0x1.bcb7b2p-2f, t)));
}
/* log1p(x) = log(u) + (x - (u - 1)) / u for u = 1 + x rounded: the quotient is the rounding error of u, to first
 * order. |x| < 2^-24 gives x itself (x^2/2 is below half an ulp of x), which keeps -0.0 and subnormals. */
static inline float log1p_(float x) {
  const float u = 1.0f + x;
  const vm_logred l = vm_log_reduce(u);
  const float c = (x - (u - 1.0f)) / u;
  float r = PYPTO_RT_MADD(l.kf, PYPTO_RT_LN2_HI, l.f + (PYPTO_RT_MADD(l.kf, PYPTO_RT_LN2_LO, l.y) + c));
  r = __builtin_fabsf(x) < 0x1p-24f ? x : r;
  r = x == -1.0f ? -vm_inf() : r;
  r = x == vm_inf() ? x : r;
  return x < -1.0f ? vm_nan() : (x != x ? x : r);
}

/* ---- exponentials -----------------------------------------------------------------------------------------
 * exp_ is in kernel_rt.h. exp2: n = rint(x), r = x - n exact, 2^r = 1 + r P(r) (degree 5), scaled by 2^n in two
 * halves as exp_ does (one rounding for subnormal results). The clamp on the bits, as exp_'s: below -151 the result
 * is +0, above 129 it is +inf. */
static inline float exp2_(float x) {
  uint32_t ub = f32_bits(x);
  ub = ub < 0xC3170000u ? ub : 0xC3170000u; /* bits(-151.0f) */
  int32_t ib = (int32_t)ub;
  ib = ib < (int32_t)0x43010000 ? ib : (int32_t)0x43010000; /* bits(129.0f) */
  const float xs = bits_f32((uint32_t)ib);
  const float n = __builtin_rintf(xs);
  const float r = xs - n;
  float p = 0x1.41fbbcp-13f;
  p = PYPTO_RT_MADD(p, r, 0x1.5f3e52p-10f);
  p = PYPTO_RT_MADD(p, r, 0x1.3b2d4cp-7f);
  p = PYPTO_RT_MADD(p, r, 0x1.c6aee8p-5f);
  p = PYPTO_RT_MADD(p, r, 0x1.ebfbdcp-3f);
  p = PYPTO_RT_MADD(p, r, 0x1.62e430p-1f);
  p = PYPTO_RT_MADD(p, r, 1.0f);
  const int32_t ni = (int32_t)n;
  const int32_t n1 = ni >> 1, n2 = ni - (ni >> 1);
  const float y = (p * bits_f32((uint32_t)(n1 + 127) << 23)) * bits_f32((uint32_t)(n2 + 127) << 23);
  return x != x ? x : y;
}
/* expm1: x = n ln2 + r (exp_'s reduction), expm1(r) = r + r^2/2 + r^3 P(r) (degree 4), then
 * expm1(x) = 2^n expm1(r) + (2^n - 1), exact subtraction for n <= 24; for n > 100 (2^n may overflow alone)
 * (1 + expm1(r)) 2^n in two halves. Clamped to [-30, 89] (below: -1; above: +inf). |x| < 2^-25 gives x. */
static inline float expm1_(float x) {
  float xs = x < -30.0f ? -30.0f : x;
  xs = xs > 89.0f ? 89.0f : xs;
  const float n = __builtin_rintf(xs * 1.44269504088896341f);
  const float r = PYPTO_RT_MADD(n, 2.12194440e-4f, PYPTO_RT_MADD(n, -0.693359375f, xs));
  float p = 0x1.9fbdfcp-13f;
  p = PYPTO_RT_MADD(p, r, 0x1.6d406cp-10f);
  p = PYPTO_RT_MADD(p, r, 0x1.1111cap-7f);
  p = PYPTO_RT_MADD(p, r, 0x1.5554f2p-5f);
  p = PYPTO_RT_MADD(p, r, 0x1.555554p-3f);
  const float r2 = r * r;
  const float q = r + PYPTO_RT_MADD(r2 * r, p, 0.5f * r2);
  const int32_t ni = (int32_t)n;
  const float s = bits_f32((uint32_t)((ni < 127 ? ni : 127) + 127) << 23);
  const float y_reg = PYPTO_RT_MADD(s, q, s - 1.0f);
  const int32_t n1 = ni >> 1, n2 = ni - (ni >> 1);
  const float y_big = ((q + 1.0f) * bits_f32((uint32_t)(n1 + 127) << 23)) * bits_f32((uint32_t)(n2 + 127) << 23);
  float y = ni > 100 ? y_big : y_reg;
  y = __builtin_fabsf(x) < 0x1p-25f ? x : y;
  return x != x ? x : y;
}

/* ---- tanh, erf --------------------------------------------------------------------------------------------
 * tanh: |x| < 0.625: x + x^3 P(x^2) (degree 4); else sign(x) (1 - 2 / (exp_(2|x|) + 1)) (exp_ saturates: +-1 from
 * |x| > 9); |x| < 2^-12: x. NaN falls to the second form, which gives NaN. */
static inline float tanh_(float x) {
  const float ax = __builtin_fabsf(x);
  const float x2 = x * x;
  float p = -0x1.75e1cep-8f;
  p = PYPTO_RT_MADD(p, x2, 0x1.52269cp-6f);
  p = PYPTO_RT_MADD(p, x2, -0x1.b83c5ap-5f);
  p = PYPTO_RT_MADD(p, x2, 0x1.110726p-3f);
  p = PYPTO_RT_MADD(p, x2, -0x1.555532p-2f);
  const float ys = PYPTO_RT_MADD(x * x2, p, x);
  const float yl = vm_copysign(1.0f - 2.0f / (exp_(ax + ax) + 1.0f), x);
  const float y = ax < 0.625f ? ys : yl;
  return ax < 0x1p-12f ? x : y; /* x^3/3 is below half an ulp of x; keeps -0.0 (x + x^3 P gives +0) */
}
/* exp_(x) for an x whose exp_ is a normal float (-87.3 < x < 88.7) and never NaN: exp_core's p scaled by 2^n in
 * one multiply, without exp_'s clamp, its two-step scale (for subnormal results) and its NaN select. For such x
 * it is exp_ bit for bit (p 2^n1 2^n2 and p 2^n are the same exact scaling of p when the result is normal); erf_'s
 * argument, Q(t) for t in [-2.25, 1.67], stays in [-17.4, 0). Nine fewer vector instructions per erf_: on a Zen 1
 * (AVX2, 256-bit ops split in halves) a loop of erf_ over 4M floats 18.4 -> 13.4 ms, the same bits on all 2^32
 * inputs (benchmarks/erf_exp_normal_exhaustive.cpp). */
static inline float vm_exp_normal(float x) {
  float n;
  const float p = exp_core(x, n);
  return p * bits_f32((uint32_t)((int32_t)n + 127) << 23);
}
/* erf for |x| < 0.875 (erf_ and erf_bf16_): x (2/sqrt(pi) + x^2 P(x^2)), P of degree 4; 2/sqrt(pi) = HI + LO,
 * LO added to the small term (HI alone is off by 0.3 ulp) */
static inline float erf_small(float x) {
  const float x2 = x * x;
  float p = -0x1.471cf2p-11f;
  p = PYPTO_RT_MADD(p, x2, 0x1.4a4912p-8f);
  p = PYPTO_RT_MADD(p, x2, -0x1.b70bdep-6f);
  p = PYPTO_RT_MADD(p, x2, 0x1.ce2326p-4f);
  p = PYPTO_RT_MADD(p, x2, -0x1.81271cp-2f);
  return PYPTO_RT_MADD(x, 0x1.20dd76p+0f, x * PYPTO_RT_MADD(x2, p, -0x1.f7ac92p-25f));
}
/* erf: |x| < 0.875: x P(x^2) (degree 5); up to 3.92: sign(x) (1 - exp_(Q(|x| - 2.25))), Q (degree 6) fitted to
 * log(erfc); from 3.92 erf rounds to +-1 (erfc(3.92) < half an ulp of 1), which the clamp gives. */
static inline float erf_(float x) {
  const float ax = __builtin_fabsf(x);
  const float ys = erf_small(x);
  const float t = (ax < 3.92f ? ax : 3.92f) - 2.25f;
  float q = 0x1.a5850ep-13f;
  q = PYPTO_RT_MADD(q, t, -0x1.8d3ed8p-12f);
  q = PYPTO_RT_MADD(q, t, 0x1.7b76dap-9f);
  q = PYPTO_RT_MADD(q, t, -0x1.b3ecdcp-7f);
  q = PYPTO_RT_MADD(q, t, -0x1.deaa9ep-1f);
  q = PYPTO_RT_MADD(q, t, -0x1.3881d4p+2f);
  q = PYPTO_RT_MADD(q, t, -0x1.a1c1eap+2f);
  const float yl = vm_copysign(1.0f - vm_exp_normal(q), x);
  const float y = ax < 0.875f ? ys : yl;
  return (x != x) | (x == 0.0f) ? x : y; /* NaN; -0.0 (x HI + x LO gives +0) */
}
/* erf of a bf16 value, for a result rounded to bf16 (codegen/templates.py BF16_FNS): erf_'s x P(x^2) below 0.875;
 * up to 2.1875 (the largest bf16 whose erf does not round to 1) one polynomial in t = |x| - 1.53125 (degree 9,
 * 2^-28 relative: benchmarks/vmath_fit.py erf_bf16) in place of the fitted log(erfc) and its exp_; beyond, +-1.
 * Its float results round to the same bf16 as erf_'s on every one of the 65536 bf16 inputs, with FMA and
 * without (tests/ut/language/test_vmath.py test_bf16_functions_give_the_fp32_functions_bf16_on_every_input), at
 * about half the vector instructions: bf16 erf 4096x1024, one thread, the loop alone: native 3.4 -> 2.1 ms, avx2
 * 5.0 -> 3.1 ms. */
static inline float erf_bf16_(float x) {
  const float ax = __builtin_fabsf(x);
  const float ys = erf_small(x);
  const float t = (ax < 2.1875f ? ax : 2.1875f) - 1.53125f;
  float q = 0x1.6fbf54p-10f;
  q = PYPTO_RT_MADD(q, t, -0x1.082c96p-9f);
  q = PYPTO_RT_MADD(q, t, -0x1.51ecb8p-8f);
  q = PYPTO_RT_MADD(q, t, 0x1.2b513cp-6f);
  q = PYPTO_RT_MADD(q, t, -0x1.7478a0p-7f);
  q = PYPTO_RT_MADD(q, t, -0x1.7e26d6p-5f);
  q = PYPTO_RT_MADD(q, t, 0x1.107a26p-3f);
  q = PYPTO_RT_MADD(q, t, -0x1.5341c0p-3f);
  q = PYPTO_RT_MADD(q, t, 0x1.bb1c8cp-4f);
  q = PYPTO_RT_MADD(q, t, 0x1.f07630p-1f);
  q = ax > 2.1875f ? 1.0f : q;
  const float yl = vm_copysign(q, x);
  const float y = ax < 0.875f ? ys : yl;
  return (x != x) | (x == 0.0f) ? x : y;
}

/* ---- hyperbolic functions and their inverses, from the pieces above ---------------------------------------
 * sinh: u = expm1(|x|), sinh = (u + u / (u + 1)) / 2 (no cancellation, x itself for tiny x); from |x| > 80, where
 * u + 1 would overflow first, t = exp_(|x| / 2) and (t / 2) t. cosh: (e + 1 / e) / 2 with e = exp_(|x|), the same
 * large form. Both branch-free, the sign copied from x (sinh); the clamps are undone for NaN by a last select. */
static inline float sinh_(float x) {
  const float ax = __builtin_fabsf(x);
  const float u = expm1_(ax < 80.0f ? ax : 80.0f);
  const float ys = 0.5f * (u + u / (u + 1.0f));
  const float t = exp_(0.5f * ax);
  const float yb = (0.5f * t) * t;
  return x != x ? x : vm_copysign(ax > 80.0f ? yb : ys, x);
}
static inline float cosh_(float x) {
  const float ax = __builtin_fabsf(x);
  const float e = exp_(ax < 80.0f ? ax : 80.0f);
  const float ys = 0.5f * e + 0.5f / e;
  const float t = exp_(0.5f * ax);
  const float yb = (0.5f * t) * t;
  return x != x ? x : (ax > 80.0f ? yb : ys);
}
/* asinh = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); from |x| > 2^12 (x^2 + 1 rounds to x^2, and x^2 may
 * overflow) log(|x|) + ln2. */
static inline float asinh_(float x) {
  const float ax = __builtin_fabsf(x);
  const float a = ax < 0x1p12f ? ax : 0x1p12f;
  const float a2 = a * a;
  const float ys = log1p_(a + a2 / (1.0f + sqrt_(1.0f + a2)));
  const float yb = log_(ax) + 0x1.62e430p-1f;
  return x != x ? x : vm_copysign(ax > 0x1p12f ? yb : ys, x);
}
/* acosh = log1p(t + sqrt(2t + t^2)) with t = x - 1; from x > 2^12 log(x) + ln2; x < 1 gives NaN */
static inline float acosh_(float x) {
  const float xm = x < 0x1p12f ? x : 0x1p12f;
  const float t = xm - 1.0f;
  const float ys = log1p_(t + sqrt_(t + t + t * t));
  const float yb = log_(x) + 0x1.62e430p-1f;
  const float y = x > 0x1p12f ? yb : ys;
  return x < 1.0f ? vm_nan() : (x != x ? x : y);
}
/* atanh = sign(x) log1p(2|x| / (1 - |x|)) / 2: +-inf at +-1, NaN beyond */
static inline float atanh_(float x) {
  const float ax = __builtin_fabsf(x);
  const float y = 0.5f * log1p_((ax + ax) / (1.0f - ax));
  return ax > 1.0f ? vm_nan() : vm_copysign(y, x);
}

/* ---- atan, asin, acos -----------------------------------------------------------------------------------
 * atan: |x| > tan(3pi/8): pi/2 + atan(-1/|x|); |x| > tan(pi/8): pi/4 + atan((|x| - 1)/(|x| + 1)); then
 * t + t^3 P(t^2) (degree 4) on |t| <= tan(pi/8), the constant added in two parts, the sign copied from x. asin and
 * acos through atan: asin x = atan(x / sqrt((1 - x)(1 + x))), acos x = 2 atan(sqrt((1 - x) / (1 + x))) (+-1 give
 * +-pi/2, 0 and pi through atan(+-inf); |x| > 1 gives NaN through the square root of a negative). */
static inline float atan_(float x) {
  const float ax = __builtin_fabsf(x);
  const bool big = ax > 2.41421356f, mid = ax > 0.41421356f;
  const float t = big ? -1.0f / ax : (mid ? (ax - 1.0f) / (ax + 1.0f) : ax);
  const float hi = big ? 0x1.921fb6p+0f : (mid ? 0x1.921fb6p-1f : 0.0f);
  const float lo = big ? -0x1.777a5cp-25f : (mid ? -0x1.777a5cp-26f : 0.0f);
  const float t2 = t * t;
  float p = -0x1.f1ed8cp-5f;
  p = PYPTO_RT_MADD(p, t2, 0x1.b1ec30p-4f);
  p = PYPTO_RT_MADD(p, t2, -0x1.23b522p-3f);
  p = PYPTO_RT_MADD(p, t2, 0x1.999196p-3f);
  p = PYPTO_RT_MADD(p, t2, -0x1.55554ap-2f);
  const float y = hi + (t + PYPTO_RT_MADD(t * t2, p, lo));
  return vm_copysign(y, x);
}
static inline float asin_(float x) { return atan_(x / sqrt_((1.0f - x) * (1.0f + x))); }
static inline float acos_(float x) { return 2.0f * atan_(sqrt_((1.0f - x) / (1.0f + x))); }

/* cbrt: |x| (subnormals scaled by 2^24, the root then by 2^-8) -> a first guess from the bits (exponent / 3), three
 * Newton steps y -= (y - a / y^2) / 3, the sign copied; 0, inf and NaN give themselves. */
static inline float cbrt_(float x) {
  const float ax = __builtin_fabsf(x);
  const bool sub = ax < 0x1p-126f;
  const float a = sub ? ax * 0x1p24f : ax;
  float y = bits_f32(f32_bits(a) / 3u + 0x2a5137a0u);
  y = y - (y - a / (y * y)) * (1.0f / 3.0f);
  y = y - (y - a / (y * y)) * (1.0f / 3.0f);
  y = y - (y - a / (y * y)) * (1.0f / 3.0f);
  y = sub ? y * 0x1p-8f : y;
  y = (ax == 0.0f) | (ax == vm_inf()) | (x != x) ? ax : y;
  return vm_copysign(y, x);
}

/* ---- sin, cos, tan ----------------------------------------------------------------------------------------
 * Reduction x = q pi/2 + r, |r| <= pi/4 (about), on |x|, two ways computed for every element and selected (no
 * branch):
 *  - |x| < 2^20: Cody-Waite in double: n = rint(|x| 2/pi), r = (|x| - n P1) - n P2 with P1 pi/2 to 33 bits (n P1
 *    and the subtraction exact) and P2 the next 53 bits; error ~2^-65 absolute.
 *  - any finite |x| (used from 2^20): Payne-Hanek in integers. |x| = m 2^E (m of 24 bits); the bits of 2/pi
 *    before bit E - 1 only add multiples of 4 to |x| 2/pi, so vm_2opi holds for each E the next 96 bits (three
 *    words G0 G1 G2) and Y = m G0 2^32 + m G1 + (m G2 >> 32) (mod 2^64) is |x| 2/pi mod 4 with 62 fraction bits
 *    (dropped: < 2^-61 absolute); its top two bits (rounded) are q mod 4, the rest r 2/pi in fixed point, turned
 *    into double from two 32-bit halves. The closest a float comes to a multiple of pi/2 leaves |r| > 2^-30ish,
 *    so 62 bits keep r to ~2^-30 relative; the fp64 r is rounded to float once.
 * Then sin(r) = r + r^3 P(r^2), cos(r) = 1 - r^2/2 + r^4 Q(r^2) (degree 3 each, benchmarks/vmath_fit.py),
 * chosen and negated by q, the sign of x copied (sin, tan); inf and NaN give NaN. The table is indexed by E (a
 * gather in a vector loop). */
static const uint32_t vm_2opi[] = {
    0x0517cc1bu, 0x727220a9u, 0x4fe13abeu, 0x0a2f9836u, 0xe4e44152u, 0x9fc2757du, 0x145f306du, 0xc9c882a5u, 0x3f84eafau,
    0x28be60dbu, 0x9391054au, 0x7f09d5f4u, 0x517cc1b7u, 0x27220a94u, 0xfe13abe8u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
    0x45f306dcu, 0x9c882a53u, 0xf84eafa3u, 0x8be60db9u, 0x391054a7u, 0xf09d5f47u, 0x17cc1b72u, 0x7220a94fu, 0xe13abe8fu,
    0x2f9836e4u, 0xe441529fu, 0xc2757d1fu, 0x5f306dc9u, 0xc882a53fu, 0x84eafa3eu, 0xbe60db93u, 0x91054a7fu, 0x09d5f47du,
    0x7cc1b727u, 0x220a94feu, 0x13abe8fau, 0xf9836e4eu, 0x441529fcu, 0x2757d1f5u, 0xf306dc9cu, 0x882a53f8u, 0x4eafa3eau,
    0xe60db939u, 0x1054a7f0u, 0x9d5f47d4u, 0xcc1b7272u, 0x20a94fe1u, 0x3abe8fa9u, 0x9836e4e4u, 0x41529fc2u, 0x757d1f53u,
    0x306dc9c8u, 0x82a53f84u, 0xeafa3ea6u, 0x60db9391u, 0x054a7f09u, 0xd5f47d4du, 0xc1b72722u, 0x0a94fe13u, 0xabe8fa9au,
    0x836e4e44u, 0x1529fc27u, 0x57d1f534u, 0x06dc9c88u, 0x2a53f84eu, 0xafa3ea69u, 0x0db93910u, 0x54a7f09du, 0x5f47d4d3u,
    0x1b727220u, 0xa94fe13au, 0xbe8fa9a6u, 0x36e4e441u, 0x529fc275u, 0x7d1f534du, 0x6dc9c882u, 0xa53f84eau, 0xfa3ea69bu,
    0xdb939105u, 0x4a7f09d5u, 0xf47d4d37u, 0xb727220au, 0x94fe13abu, 0xe8fa9a6eu, 0x6e4e4415u, 0x29fc2757u, 0xd1f534ddu,
    0xdc9c882au, 0x53f84eafu, 0xa3ea69bbu, 0xb9391054u, 0xa7f09d5fu, 0x47d4d377u, 0x727220a9u, 0x4fe13abeu, 0x8fa9a6eeu,
    0xe4e44152u, 0x9fc2757du, 0x1f534ddcu, 0xc9c882a5u, 0x3f84eafau, 0x3ea69bb8u, 0x9391054au, 0x7f09d5f4u, 0x7d4d3770u,
    0x27220a94u, 0xfe13abe8u, 0xfa9a6ee0u, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0x9c882a53u, 0xf84eafa3u, 0xea69bb81u,
    0x391054a7u, 0xf09d5f47u, 0xd4d37703u, 0x7220a94fu, 0xe13abe8fu, 0xa9a6ee06u, 0xe441529fu, 0xc2757d1fu, 0x534ddc0du,
    0xc882a53fu, 0x84eafa3eu, 0xa69bb81bu, 0x91054a7fu, 0x09d5f47du, 0x4d377036u, 0x220a94feu, 0x13abe8fau, 0x9a6ee06du,
    0x441529fcu, 0x2757d1f5u, 0x34ddc0dbu, 0x882a53f8u, 0x4eafa3eau, 0x69bb81b6u, 0x1054a7f0u, 0x9d5f47d4u, 0xd377036du,
    0x20a94fe1u, 0x3abe8fa9u, 0xa6ee06dbu, 0x41529fc2u, 0x757d1f53u, 0x4ddc0db6u, 0x82a53f84u, 0xeafa3ea6u, 0x9bb81b6cu,
    0x054a7f09u, 0xd5f47d4du, 0x377036d8u, 0x0a94fe13u, 0xabe8fa9au, 0x6ee06db1u, 0x1529fc27u, 0x57d1f534u, 0xddc0db62u,
    0x2a53f84eu, 0xafa3ea69u, 0xbb81b6c5u, 0x54a7f09du, 0x5f47d4d3u, 0x77036d8au, 0xa94fe13au, 0xbe8fa9a6u, 0xee06db14u,
    0x529fc275u, 0x7d1f534du, 0xdc0db629u, 0xa53f84eau, 0xfa3ea69bu, 0xb81b6c52u, 0x4a7f09d5u, 0xf47d4d37u, 0x7036d8a5u,
    0x94fe13abu, 0xe8fa9a6eu, 0xe06db14au, 0x29fc2757u, 0xd1f534ddu, 0xc0db6295u, 0x53f84eafu, 0xa3ea69bbu, 0x81b6c52bu,
    0xa7f09d5fu, 0x47d4d377u, 0x036d8a56u, 0x4fe13abeu, 0x8fa9a6eeu, 0x06db14acu, 0x9fc2757du, 0x1f534ddcu, 0x0db62959u,
    0x3f84eafau, 0x3ea69bb8u, 0x1b6c52b3u, 0x7f09d5f4u, 0x7d4d3770u, 0x36d8a566u, 0xfe13abe8u, 0xfa9a6ee0u, 0x6db14accu,
    0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0xf84eafa3u, 0xea69bb81u, 0xb6c52b32u, 0xf09d5f47u, 0xd4d37703u, 0x6d8a5664u,
    0xe13abe8fu, 0xa9a6ee06u, 0xdb14acc9u, 0xc2757d1fu, 0x534ddc0du, 0xb6295993u, 0x84eafa3eu, 0xa69bb81bu, 0x6c52b327u,
    0x09d5f47du, 0x4d377036u, 0xd8a5664fu, 0x13abe8fau, 0x9a6ee06du, 0xb14acc9eu, 0x2757d1f5u, 0x34ddc0dbu, 0x6295993cu,
    0x4eafa3eau, 0x69bb81b6u, 0xc52b3278u, 0x9d5f47d4u, 0xd377036du, 0x8a5664f1u, 0x3abe8fa9u, 0xa6ee06dbu, 0x14acc9e2u,
    0x757d1f53u, 0x4ddc0db6u, 0x295993c4u, 0xeafa3ea6u, 0x9bb81b6cu, 0x52b32788u, 0xd5f47d4du, 0x377036d8u, 0xa5664f10u,
    0xabe8fa9au, 0x6ee06db1u, 0x4acc9e21u, 0x57d1f534u, 0xddc0db62u, 0x95993c43u, 0xafa3ea69u, 0xbb81b6c5u, 0x2b327887u,
    0x5f47d4d3u, 0x77036d8au, 0x5664f10eu, 0xbe8fa9a6u, 0xee06db14u, 0xacc9e21cu, 0x7d1f534du, 0xdc0db629u, 0x5993c439u,
    0xfa3ea69bu, 0xb81b6c52u, 0xb3278872u, 0xf47d4d37u, 0x7036d8a5u, 0x664f10e4u, 0xe8fa9a6eu, 0xe06db14au, 0xcc9e21c8u,
    0xd1f534ddu, 0xc0db6295u, 0x993c4390u, 0xa3ea69bbu, 0x81b6c52bu, 0x32788720u, 0x47d4d377u, 0x036d8a56u, 0x64f10e41u,
    0x8fa9a6eeu, 0x06db14acu, 0xc9e21c82u, 0x1f534ddcu, 0x0db62959u, 0x93c43904u, 0x3ea69bb8u, 0x1b6c52b3u, 0x27887208u,
    0x7d4d3770u, 0x36d8a566u, 0x4f10e410u, 0xfa9a6ee0u, 0x6db14accu, 0x9e21c820u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u,
    0xea69bb81u, 0xb6c52b32u, 0x78872083u, 0xd4d37703u, 0x6d8a5664u, 0xf10e4107u, 0xa9a6ee06u, 0xdb14acc9u, 0xe21c820fu,
    0x534ddc0du, 0xb6295993u, 0xc439041fu, 0xa69bb81bu, 0x6c52b327u, 0x8872083fu, 0x4d377036u, 0xd8a5664fu, 0x10e4107fu};
struct vm_trigred {
  float r, lo; /* r + lo: the fp64 r in two floats */
  uint32_t q; /* quadrant mod 4 of |x| */
};
/* Cody-Waite in fp64 (exact enough for ax < 2^20) */
static inline vm_trigred vm_trig_reduce_small(float ax) {
  const double xd = (double)ax;
  const double nd = __builtin_rint(xd * 0x1.45f306dc9c883p-1);
  const double rd = (xd - nd * 0x1.921fb544p+0) - nd * 0x1.0b4611a626331p-34;
  vm_trigred t;
  t.r = (float)rd;
  t.lo = (float)(rd - (double)t.r);
  t.q = (uint32_t)(int32_t)nd;
  return t;
}
/* Payne-Hanek in integers (any finite ax; used from 2^20) */
static inline vm_trigred vm_trig_reduce_big(float ax) {
  const uint32_t ix = f32_bits(ax);
  const uint32_t m = (ix & 0x7fffffu) | 0x800000u;
  int32_t e = (int32_t)(ix >> 23) - 147; /* E + 3 */
  e = e < 0 ? 0 : (e > 107 ? 107 : e);
  const uint64_t g0 = vm_2opi[3 * e], g1 = vm_2opi[3 * e + 1], g2 = vm_2opi[3 * e + 2];
  const uint64_t y = ((uint64_t)m * g0 << 32) + (uint64_t)m * g1 + (((uint64_t)m * g2) >> 32) + (1ull << 61);
  const uint64_t fr = y & ((1ull << 62) - 1); /* (r 2/pi + 1/2) 2^62 */
  const int32_t fh = (int32_t)(uint32_t)(fr >> 32) - (1 << 29);
  const int32_t fl = (int32_t)((uint32_t)fr >> 1);
  const double rd = ((double)fh * 0x1p-30 + (double)fl * 0x1p-61) * 0x1.921fb54442d18p+0;
  vm_trigred t;
  t.r = (float)rd;
  t.lo = (float)(rd - (double)t.r);
  t.q = (uint32_t)(y >> 62);
  return t;
}
/* Both computed and selected, so the element loop stays branch-free and vectorizes. The big path costs ~5x the
 * small one (benchmarks/vmath_trig_speed.cpp); the block forms below skip it where a whole block is small, which a
 * per-element function cannot express. */
static inline vm_trigred vm_trig_reduce(float x) {
  const float ax = __builtin_fabsf(x);
  const vm_trigred s = vm_trig_reduce_small(ax), b = vm_trig_reduce_big(ax);
  const bool big = ax >= 0x1p20f;
  vm_trigred t;
  t.r = big ? b.r : s.r;
  t.lo = big ? b.lo : s.lo;
  t.q = big ? b.q : s.q;
  return t;
}
static inline float vm_sin_poly(float r, float lo, float r2) {
  float p = 0x1.6ccf5ep-19f;
  p = PYPTO_RT_MADD(p, r2, -0x1.a00f74p-13f);
  p = PYPTO_RT_MADD(p, r2, 0x1.111108p-7f);
  p = PYPTO_RT_MADD(p, r2, -0x1.555556p-3f);
  return r + PYPTO_RT_MADD(r * r2, p, lo); /* sin(r + lo) = sin(r) + lo cos(r), cos(r) ~ 1 at this order */
}
static inline float vm_cos_poly(float r, float lo, float r2) {
  float p = -0x1.241caap-22f;
  p = PYPTO_RT_MADD(p, r2, 0x1.a010d6p-16f);
  p = PYPTO_RT_MADD(p, r2, -0x1.6c16b8p-10f);
  p = PYPTO_RT_MADD(p, r2, 0x1.555556p-5f);
  return PYPTO_RT_MADD(r2 * r2, p, PYPTO_RT_MADD(-0.5f, r2, 1.0f)) - r * lo; /* - lo sin(r) */
}
static inline float vm_flip(float v, uint32_t neg) { return bits_f32(f32_bits(v) ^ (neg << 31)); }
/* Each function is written once on a given reduction t of x: sin_/cos_/tan_ pass vm_trig_reduce (both paths),
 * the block forms below pass the small one where a block allows it; for |x| < 2^20 the two reductions are the
 * same, so both give the same bits. */
static inline float vm_sin_of(float x, vm_trigred t) {
  const float r2 = t.r * t.r;
  const float v = (t.q & 1u) ? vm_cos_poly(t.r, t.lo, r2) : vm_sin_poly(t.r, t.lo, r2);
  const float y = vm_flip(v, ((t.q >> 1) & 1u) ^ (f32_bits(x) >> 31));
  return __builtin_fabsf(x) < 0x1p-12f ? x : (x - x == 0.0f ? y : vm_nan()); /* tiny: x (keeps subnormals) */
}
static inline float vm_cos_of(float x, vm_trigred t) {
  const float r2 = t.r * t.r;
  const float v = (t.q & 1u) ? vm_sin_poly(t.r, t.lo, r2) : vm_cos_poly(t.r, t.lo, r2);
  const float y = vm_flip(v, ((t.q >> 1) ^ t.q) & 1u);
  return x - x == 0.0f ? y : vm_nan();
}
/* tan = sin(r) / cos(r), or -cos(r) / sin(r) in the odd quadrants */
static inline float vm_tan_of(float x, vm_trigred t) {
  const float r2 = t.r * t.r;
  const float s = vm_sin_poly(t.r, t.lo, r2), c = vm_cos_poly(t.r, t.lo, r2);
  const float v = (t.q & 1u) ? -c / s : s / c;
  const float y = vm_flip(v, f32_bits(x) >> 31);
  return __builtin_fabsf(x) < 0x1p-12f ? x : (x - x == 0.0f ? y : vm_nan());
}
static inline float sin_(float x) { return vm_sin_of(x, vm_trig_reduce(x)); }
static inline float cos_(float x) { return vm_cos_of(x, vm_trig_reduce(x)); }
static inline float tan_(float x) { return vm_tan_of(x, vm_trig_reduce(x)); }

/* Block forms (codegen hoists the arguments of a block of N elements into a[], as for exp16): in place, with
 * sin_/cos_/tan_'s bits. Where every |x| of the block is below 2^20 (the common case; inf and NaN count as
 * large) only the fp64 Cody-Waite reduction runs: 2.6-2.7x less work than computing and selecting both
 * (benchmarks/vmath_trig_speed.cpp). One test per block of N, a vectorized OR over the lanes. */
template <int N>
static inline bool vm_block_small(const float* a) {
  uint32_t big = 0;
  for (int l = 0; l < N; ++l) big |= (uint32_t)((f32_bits(a[l]) & 0x7fffffffu) >= 0x49800000u); /* 2^20 */
  return big == 0;
}
#define PYPTO_VM_TRIG_BLOCK(NAME, OF)                                                                         \
  template <int N>                                                                                            \
  static inline void NAME(float* a) {                                                                         \
    if (vm_block_small<N>(a)) {                                                                               \
      for (int l = 0; l < N; ++l) a[l] = OF(a[l], vm_trig_reduce_small(__builtin_fabsf(a[l])));               \
    } else {                                                                                                  \
      for (int l = 0; l < N; ++l) a[l] = OF(a[l], vm_trig_reduce(a[l]));                                     \
    }                                                                                                         \
  }
PYPTO_VM_TRIG_BLOCK(sin_block, vm_sin_of)
PYPTO_VM_TRIG_BLOCK(cos_block, vm_cos_of)
PYPTO_VM_TRIG_BLOCK(tan_block, vm_tan_of)
#undef PYPTO_VM_TRIG_BLOCK

/* bf16 sin/cos blocks (codegen/templates.py BF16_BLOCK_FNS: a bf16 op on a bf16 value, rounded to bf16 at once).
 * Where every |x| of the block is below 512 (8 bits of n, the common case) all in float: sin reduces by pi
 * (n = rint(|x| / pi), r = |x| - n pi with pi as 16 + 15 + 24 bits, n times the first two exact, |r| <= pi/2 a
 * little), cos by pi/2 with an odd multiple m = 2 rint(|x| / pi - 1/2) + 1 (15 + 13 + 24 bits), and both take
 * one sine polynomial on |r| <= pi/2 (degree 9, 2^-27 relative: benchmarks/vmath_fit.py sin_hp) and flip the
 * sign by n's parity (and x's, for sin). No fp64 and one polynomial, not two selected: bf16 sin 4096x1024, one
 * thread: avx2 5.4 -> 2.0 ms, native 4.2 -> 1.7 ms (the block alone). The float results differ from sin_/cos_'s
 * in the last fp32 bits, but round to the same bf16 on every bf16 input below 512 at every ISA (with FMA and
 * without: test_vmath.py test_bf16_functions_give_the_fp32_functions_bf16_on_every_input), so a bf16 element's
 * bits do not depend on whether it falls in a block or in the loop's scalar tail (sin_). Other blocks take
 * sin_block's two paths. */
static inline float vm_sin_hp(float r) {
  const float r2 = r * r;
  float p = 0x1.5db3aap-19f;
  p = PYPTO_RT_MADD(p, r2, -0x1.9f6f50p-13f);
  p = PYPTO_RT_MADD(p, r2, 0x1.110ed0p-7f);
  p = PYPTO_RT_MADD(p, r2, -0x1.55554cp-3f);
  return PYPTO_RT_MADD(r * r2, p, r);
}
static inline float vm_sin_bf16_fast(float x) {
  const float ax = __builtin_fabsf(x);
  const float n = __builtin_rintf(ax * 0x1.45f306p-2f);
  const float r = ((ax - n * 0x1.921ep+1f) - n * 0x1.b544p-15f) - n * 0x1.0b4612p-33f;
  return vm_flip(vm_sin_hp(r), ((uint32_t)(int32_t)n & 1u) ^ (f32_bits(x) >> 31));
}
static inline float vm_cos_bf16_fast(float x) {
  const float ax = __builtin_fabsf(x);
  const float n = __builtin_rintf(ax * 0x1.45f306p-2f - 0.5f);
  const float m = n + n + 1.0f;
  const float r = ((ax - m * 0x1.921cp+0f) - m * 0x1.daap-15f) - m * 0x1.10b462p-30f;
  return vm_flip(vm_sin_hp(r), ((uint32_t)(int32_t)n & 1u) ^ 1u);
}
template <int N>
static inline uint32_t vm_block_max_abs_bits(const float* a) {
  uint32_t m = 0;
  for (int l = 0; l < N; ++l) {
    const uint32_t b = f32_bits(a[l]) & 0x7fffffffu;
    m = b > m ? b : m;
  }
  return m;
}
#define PYPTO_VM_TRIG_BF16_BLOCK(NAME, FAST, OF)                                                              \
  template <int N>                                                                                            \
  static inline void NAME(float* a) {                                                                         \
    const uint32_t m = vm_block_max_abs_bits<N>(a); /* inf and NaN: above both bounds */                      \
    if (m < 0x44000000u) {                                          /* 512 */                                 \
      for (int l = 0; l < N; ++l) a[l] = FAST(a[l]);                                                          \
    } else if (m < 0x49800000u) {                                   /* 2^20 */                                \
      for (int l = 0; l < N; ++l) a[l] = OF(a[l], vm_trig_reduce_small(__builtin_fabsf(a[l])));               \
    } else {                                                                                                  \
      for (int l = 0; l < N; ++l) a[l] = OF(a[l], vm_trig_reduce(a[l]));                                     \
    }                                                                                                         \
  }
PYPTO_VM_TRIG_BF16_BLOCK(sin_bf16_block, vm_sin_bf16_fast, vm_sin_of)
PYPTO_VM_TRIG_BF16_BLOCK(cos_bf16_block, vm_cos_bf16_fast, vm_cos_of)
#undef PYPTO_VM_TRIG_BF16_BLOCK

/* ---- pow, erfc, hypot, atan2 ---------------------------------------------------------------------------------
 * pow(x, y) = 2^(y log2|x|) in fp64: |x| = 2^k (1 + f) by vm_log_reduce (f exact), log2(1 + f) = 2 log2(e) atanh(s)
 * with s = f / (2 + f), |s| < 0.172, the atanh series to s^13 (2^-40 relative: |z| <= 160 keeps z within 2^-32
 * absolute); z = y L (|z| <= 160 matters); 2^z = 2^n 2^r, n = rint(z), 2^r by a degree-7 fit on |r| <= 1/2
 * (2^-34.5 relative); the fp64 result (~2^-31 relative, a few hundredths of a float ulp) is rounded to float
 * once, which also gives overflow (inf) and gradual underflow their one rounding. The IEEE special cases by selects: pow(x, +-0) = 1 and pow(1, y) = 1 (even for NaN), pow(-1, +-inf) = 1, a negative finite x with a
 * non-integer finite y is NaN, a negative x (-0 and -inf included) with an odd integer y gives the negated
 * |x|^y; the zeros and infinities of x and y follow from L = -inf / +inf. */
/* a*b + c in fp64 for F = true: one fused multiply-add where the machine has it (erfc_), else, and for F = false
 * (pow_, whose bound was measured so), a multiply and an add */
template <bool F>
static inline double vm_maddd(double a, double b, double c) {
#if defined(__FMA__) || defined(__aarch64__)
  if (F) return __builtin_fma(a, b, c);
#endif
  return a * b + c;
}
template <bool F = false>
static inline double vm_exp2d(double z) {
  z = z < -160.0 ? -160.0 : z;
  z = z > 160.0 ? 160.0 : z; /* NaN stays */
  const double n = __builtin_rint(z == z ? z : 0.0);
  const double r = z - n;
  double p = 0x1.fe17816ef2c00p-17; /* degree 7 near-minimax on [-1/2, 1/2]: 2^-34.5 (vmath_fit.py exp2d) */
  p = vm_maddd<F>(p, r, 0x1.446a1fd5223c0p-13);
  p = vm_maddd<F>(p, r, 0x1.5d8a708a2ee30p-10);
  p = vm_maddd<F>(p, r, 0x1.3b29dc40dd5a8p-7);
  p = vm_maddd<F>(p, r, 0x1.c6b08aaf2d501p-5);
  p = vm_maddd<F>(p, r, 0x1.ebfbe0a4be778p-3);
  p = vm_maddd<F>(p, r, 0x1.62e42ff11629ap-1);
  p = vm_maddd<F>(p, r, 0x1.ffffffffabbc1p-1);
  const int64_t ni = (int64_t)(int32_t)n;
  double sc;
  const uint64_t sb = (uint64_t)(ni + 1023) << 52;
  __builtin_memcpy(&sc, &sb, 8);
  return z == z ? p * sc : z;
}
/* vm_exp2d<true> for z in [-160, 0] only (erfc_: |x| <= 10.5; its other lanes are selected away): no clamps,
 * no NaN select, n = rint(z) by the 1.5 2^52 shifter, whose low bits then give the scale's exponent without a
 * double -> int conversion (AVX2 has no packed fp64 -> int64 one). The same bits as vm_exp2d<true> there. */
static inline double vm_exp2d_neg(double z) {
  const double m = z + 0x1.8p52;
  const double n = m - 0x1.8p52;
  const double r = z - n;
  double p = 0x1.fe17816ef2c00p-17;
  p = vm_maddd<true>(p, r, 0x1.446a1fd5223c0p-13);
  p = vm_maddd<true>(p, r, 0x1.5d8a708a2ee30p-10);
  p = vm_maddd<true>(p, r, 0x1.3b29dc40dd5a8p-7);
  p = vm_maddd<true>(p, r, 0x1.c6b08aaf2d501p-5);
  p = vm_maddd<true>(p, r, 0x1.ebfbe0a4be778p-3);
  p = vm_maddd<true>(p, r, 0x1.62e42ff11629ap-1);
  p = vm_maddd<true>(p, r, 0x1.ffffffffabbc1p-1);
  uint64_t mb;
  __builtin_memcpy(&mb, &m, 8);
  const uint64_t sb = (mb + 1023u) << 52; /* the low 12 bits of mb are n mod 2^12 */
  double sc;
  __builtin_memcpy(&sc, &sb, 8);
  return p * sc;
}
static inline float pow_(float x, float y) {
  const float ax = __builtin_fabsf(x);
  const vm_logred l = vm_log_reduce(ax);
  const double f = (double)l.f, s = f / (2.0 + f), s2 = s * s;
  double q = 1.0 / 13;
  q = q * s2 + 1.0 / 11;
  q = q * s2 + 1.0 / 9;
  q = q * s2 + 1.0 / 7;
  q = q * s2 + 1.0 / 5;
  q = q * s2 + 1.0 / 3;
  q = q * s2 + 1.0;
  double lg = (double)l.kf + (s * 0x1.71547652b82fep+1) * q; /* k + 2 log2(e) atanh(s) */
  lg = ax == 0.0f ? -(double)vm_inf() : lg;
  lg = ax == vm_inf() ? (double)vm_inf() : lg;
  lg = x != x ? (double)x : lg;
  const float v = (float)vm_exp2d((double)y * lg);
  const bool yint = __builtin_rintf(y) == y; /* +-inf included */
  const float ay = __builtin_fabsf(y);
  /* y odd: an integer below 2^24 whose lowest bit is set (read as y / 2 not being an integer) */
  const bool odd = yint & (ay < 0x1p24f) & (__builtin_rintf(0.5f * y) != 0.5f * y);
  float r = odd & ((f32_bits(x) >> 31) != 0) ? -v : v;
  r = (x < 0.0f) & (x > -vm_inf()) & !yint & (y == y) ? vm_nan() : r;
  r = (x == -1.0f) & (ay == vm_inf()) ? 1.0f : r;
  return (y == 0.0f) | (x == 1.0f) ? 1.0f : r;
}
/* erfc(x) = exp(-x^2) erfcx(|x|) for x >= 0 and 2 minus that for x < 0, in fp64, rounded to float once:
 * erfcx(x) = P(t), t = 3 / (3 + x), degree 10 on [0, 10.5] (relative error 1.4e-9 = 2^-29.4:
 * benchmarks/vmath_fit.py erfc), 1 / (3 + x) a float division refined by one fp64 Newton step (2^-47; an fp64
 * division costs twice the float one, four lanes a ymm on AVX2), exp(-x^2) = vm_exp2d(-x^2 log2(e)) (x^2 is exact
 * in fp64). Past 10.5 erfc is below half the smallest subnormal: 0 (and 2 for x < -10.5); NaN gives NaN. No
 * cancellation anywhere: 2 - e for x < 0 is >= 1. The fp64 multiply-adds (Newton step, P, 2^r) are fused where
 * the machine has FMA (vm_maddd<true>): the same 0.523 ulp maximum (vmath_ulp 17, native, avx2 and no-FMA), fp32
 * erfc 4096x1024, one thread: native 8.8 -> 6.2 ms, avx2 14.1 -> 9.6 ms (the loop alone); 2^z by vm_exp2d_neg
 * (the same bits on all 2^32 floats): native 4.7 ms, avx2 6.9 ms. */
static inline float erfc_(float x) {
  const float axf = __builtin_fabsf(x);
  const double ax = (double)axf, d = 3.0 + ax;
  double r = (double)(1.0f / (3.0f + axf));
  r = vm_maddd<true>(r, vm_maddd<true>(-d, r, 1.0), r);
  const double t = 3.0 * r;
  double p = 0x1.d630ed7ea93dap-5;
  p = vm_maddd<true>(p, t, -0x1.352d0b68a5858p-2);
  p = vm_maddd<true>(p, t, 0x1.1f2128945033ep-1);
  p = vm_maddd<true>(p, t, -0x1.e9da8f95e8fdcp-2);
  p = vm_maddd<true>(p, t, 0x1.c15f731060fffp-2);
  p = vm_maddd<true>(p, t, -0x1.8ef12fdc015c7p-6);
  p = vm_maddd<true>(p, t, 0x1.9d3b3f7ddf175p-3);
  p = vm_maddd<true>(p, t, 0x1.596db8fd28377p-3);
  p = vm_maddd<true>(p, t, 0x1.837646825344ep-3);
  p = vm_maddd<true>(p, t, 0x1.80fd1219b56a8p-3);
  p = vm_maddd<true>(p, t, 0x1.47407151c9abcp-19);
  double e = vm_exp2d_neg(-(ax * ax) * 0x1.71547652b82fep+0) * p;
  e = ax > 10.5 ? 0.0 : e;
  const double q = x < 0.0f ? 2.0 - e : e;
  return x != x ? x : (float)q;
}
/* hypot in fp64: a^2 + b^2 is exact-ish (48-bit squares, one rounding), never overflows, the root rounded to
 * float once (within 0.5 ulp + 2^-29); an infinite argument gives +inf even beside a NaN (IEEE) */
static inline float hypot_(float a, float b) {
  const double ad = (double)a, bd = (double)b;
  const float h = (float)__builtin_sqrt(ad * ad + bd * bd);
  return (__builtin_fabsf(a) == vm_inf()) | (__builtin_fabsf(b) == vm_inf()) ? vm_inf() : h;
}
/* atan2(y, x): a = atan(min(|x|, |y|) / max(|x|, |y|)) (atan_ above), then pi/2 - a when |y| > |x|, pi - that
 * when x has its sign bit set (-0 too), the sign of y copied; the constants combined with a in fp64 (one rounding).
 * Both zero: the quotient is taken as 0 (+-0, +-pi); both infinite: as 1 (+-pi/4, +-3pi/4); NaN gives NaN. */
static inline float atan2_(float y, float x) {
  const float ax = __builtin_fabsf(x), ay = __builtin_fabsf(y);
  const bool swap = ay > ax;
  float t = (swap ? ax : ay) / (swap ? ay : ax);
  t = (ax == 0.0f) & (ay == 0.0f) ? 0.0f : t;
  t = (ax == vm_inf()) & (ay == vm_inf()) ? 1.0f : t;
  const double a = (double)atan_(t);
  double r = swap ? 0x1.921fb54442d18p+0 - a : a;
  r = (f32_bits(x) >> 31) ? 0x1.921fb54442d18p+1 - r : r;
  const float v = vm_copysign((float)r, y);
  return (x != x) | (y != y) ? x + y : v;
}

}  // namespace pypto_rt

#endif /* PYPTO_KERNEL_VMATH_H_ */
