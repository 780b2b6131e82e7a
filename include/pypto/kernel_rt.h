/* pypto kernel runtime helpers: included by every generated kernel after kernel_abi.h.
 *
 * Every kernel compile parses all of it (a simple kernel's compile time is the budget), so it includes nothing
 * but <stdint.h> and pypto's own kernel headers (threaded kernels add kernel_par.h: <pthread.h>, <dlfcn.h>): no
 * <iostream>, no STL containers, no libm or intrinsics headers (GCC/Clang builtins call libm directly; vector
 * code uses GCC vector types, builtins and inline asm). Provides
 *   - half / bf16 storage types with exact round-to-nearest-even conversion from float (bit manipulation);
 *   - FP8 (e4m3fn, e5m2, e8m0fnu) storage types converted as torch converts them, the packed FP4 pair as bytes;
 *     HiFloat8 (kernel_hifloat8.h, included after this namespace);
 *   - Cvt<To>::from(x): the one conversion every generated load/store goes through;
 *   - integer helpers with Python semantics (floor division / modulo) used by symbolic index expressions;
 *   - math wrappers overloaded on float/double;
 *   - Buffer: an RAII heap block for temporaries that do not fit on the stack;
 *   - exp_ for float without libm (vectorizes); the fixed lane order of float reductions (fold_*);
 *   - kernel_vmath.h: the float transcendentals without libm (they vectorize; one section per family there);
 *   - Scratch: uninitialised aligned heap tile buffers;
 *   - exp16, stable_sort_idx, prefetch_at, stream64 (streaming stores), overlaps, and the failure and
 *     runtime_debug_mode=4 bounds-check helpers (fail, numel, check_view) that generated code calls;
 *   - run_parts / parallel_for: on the process-wide thread pool of kernel_par.h when PYPTO_RT_THREADS is defined
 *     before inclusion, else serial;
 *   - gemm_f32: the packed, register-blocked matmul (kernel_gemm.h).
 * Size: ~790 lines, over the ~600 guide: the storage types, their conversions and the helpers above are one unit
 * every kernel parses anyway; the parts that grow (vector math, threads, gemm) are already headers of their own.
 */
#ifndef PYPTO_KERNEL_RT_H_
#define PYPTO_KERNEL_RT_H_

#include <stdint.h>

#include "kernel_abi.h"


namespace pypto_rt {

typedef __SIZE_TYPE__ size_t;

/* ------------------------------------------------------------------------------------------------------ */
/* float <-> fp16 / bf16, round to nearest even. */

static inline uint32_t f32_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
static inline float bits_f32(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

/* c ? a : b as a mask: g++ turns a chain of `?:` on one value into branches, which no loop vectorizes through */
static inline uint32_t sel_u32(bool c, uint32_t a, uint32_t b) { return b ^ ((a ^ b) & (0u - (uint32_t)c)); }

/* Both directions are branch-free (every case computed, one chosen by selects) so that loops converting fp16
 * vectorize; the results are those of the plain case analysis (checked on every input: benchmarks/f16_exhaustive.cpp
 * against the branchy reference it keeps). */
static inline uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  /* nan keeps its top payload bits and stays quiet */
  const uint32_t r_nan = 0x7c00u | 0x200u | ((ax >> 13) & 0x3ffu);
  /* normal half: round the 13 dropped bits to nearest even */
  const uint32_t r_norm = (ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13;
  /* subnormal half: m = round(|f| * 2^24) = mantissa >> (126 - e), rounded to even; e clamped so the shift stays in
   * [1, 26] for the inputs that take another case */
  uint32_t e = ax >> 23;
  e = e > 125u ? 125u : (e < 100u ? 100u : e);
  const uint32_t sh = 126u - e;
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  /* adding (half - 1) plus the kept lowest bit, then truncating, rounds to nearest even (no compare: a bool
   * here keeps g++ from vectorizing) */
  const uint32_t r_sub = (mant + ((1u << (sh - 1u)) - 1u) + ((mant >> sh) & 1u)) >> sh;
  uint32_t r = sel_u32(ax <= 0x33000000u, 0u, r_sub);  /* <= 2^-25 rounds (to even) to zero */
  r = sel_u32(ax >= 0x38800000u, r_norm, r);
  r = sel_u32(ax >= 0x477ff000u, 0x7c00u, r);           /* >= 65520 rounds to inf; inf */
  r = sel_u32(ax > 0x7f800000u, r_nan, r);
  return (uint16_t)(sign | r);
}

static inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  const uint32_t em = (uint32_t)h & 0x7fffu;
  const uint32_t e = em >> 10;
  /* normal: rebias the exponent; inf/nan: exponent 255, the payload kept; subnormal: m 2^-24, a normal float:
   * the integer m converted (exact) and 24 taken from its exponent field (integer arithmetic, so a flush-to-zero
   * mode cannot touch it); zero: 0 */
  const uint32_t o_norm = (em << 13) + (112u << 23);
  const uint32_t o_inf = (em << 13) | 0x7f800000u;
  const uint32_t o_sub = f32_bits((float)(int32_t)em) - (24u << 23);
  uint32_t o = e == 0x1fu ? o_inf : o_norm;
  o = e == 0u ? (em == 0u ? 0u : o_sub) : o;
  return bits_f32(sign | o);
}

/* Round to nearest even: add 0x7fff plus the lowest kept bit, keep the top half; a NaN keeps its top payload bits
 * and is quieted (bit 22 set, no rounding: it could carry into the sign). Two spellings of the same bits (all
 * 2^32 floats: benchmarks/f16_exhaustive.cpp checks both against the plain case analysis at every ISA), each what
 * g++ vectorizes best at its width. Without AVX-512, one `?:` on the 32-bit value before the shift: one
 * vpackusdw + vpermq per 16 values (g++ made the early return three selects in 16-bit lanes after packing each
 * arm: 48 -> 38 instructions a 16-element bf16 add loop); bf16 loops alone, 4M elements, avx2: mul 1.06 -> 0.88
 * ms, sqrt 1.27 -> 0.88, exp 2.89 -> 2.57, tanh 4.34 -> 3.97, log 4.51 -> 4.55. (A mask select, sel_u32, was
 * faster still on log but left a fused kernel of eight bf16 ops unvectorized at avx2.) With AVX-512 (masked ops,
 * vpermt2w) the early return stays: the select form was 5% slower on bf16 log there. */
static inline uint16_t f32_to_bf16_bits(float f) {
#if defined(__AVX512F__)
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
#else
  const uint32_t x = f32_bits(f);
  const uint32_t r = f != f ? x | 0x400000u : x + 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(r >> 16);
#endif
}
static inline float bf16_bits_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

struct half {
  uint16_t bits;
  operator float() const { return f16_bits_to_f32(bits); }
  static half from_float(float f) {
    half h;
    h.bits = f32_to_f16_bits(f);
    return h;
  }
};
struct bf16 {
  uint16_t bits;
  operator float() const { return bf16_bits_to_f32(bits); }
  static bf16 from_float(float f) {
    bf16 b;
    b.bits = f32_to_bf16_bits(f);
    return b;
  }
};

/* Narrowings of values that are bf16 values by construction (codegen/templates.py EXACT_OPS: neg, abs, floor,
 * maximum, ... of bf16 inputs computed in float). Rounding such a float changes nothing, so only the NaN quieting
 * of f32_to_bf16_bits is left: the same bits as Cvt<bf16>::from, in about half the vector instructions
 * (bf16 neg 1023x1000, one thread: 138 -> 84 us). The sign-bit ops never leave 16-bit lanes at all (44 us, a
 * copy's speed): float(b) negated or made positive, then narrowed, is b with its sign bit flipped or cleared,
 * quieted when NaN. */
static inline uint16_t bf16_quiet(uint16_t h) {
  return (uint16_t)(h | (((h & 0x7fffu) > 0x7f80u) ? 0x40u : 0u));
}
static inline bf16 bf16_exact(float f) {
  bf16 b;
  b.bits = bf16_quiet((uint16_t)(f32_bits(f) >> 16));
  return b;
}
static inline bf16 bf16_neg(bf16 x) {
  bf16 b;
  b.bits = bf16_quiet((uint16_t)(x.bits ^ 0x8000u));
  return b;
}
static inline bf16 bf16_abs(bf16 x) {
  bf16 b;
  b.bits = bf16_quiet((uint16_t)(x.bits & 0x7fffu));
  return b;
}

/* ------------------------------------------------------------------------------------------------------ */
/* FP8 storage types, converted exactly as torch's .to() converts them (tested on every byte value and on
 * float32 edge values in tests/ut/language/test_narrow_and_unsigned_dtypes.py). They are never computed on:
 * generated code only loads them through float and stores them from float. */

/* |f| (float bits ax, finite, below the overflow bound) rounded to nearest even in a format with M mantissa
 * bits and exponent bias B; returns exponent and mantissa fields (sign not included). */
static inline uint32_t narrow_float_bits(uint32_t ax, uint32_t M, uint32_t B) {
  const uint32_t min_normal = (128u - B) << 23;
  if (ax >= min_normal) {
    const uint32_t sh = 23u - M;
    return (ax - ((127u - B) << 23) + ((1u << (sh - 1u)) - 1u) + ((ax >> sh) & 1u)) >> sh;
  }
  /* subnormal in the narrow format: m = round(|f| / 2^(1 - B - M)) */
  const uint32_t e = ax >> 23;
  const uint32_t mant = e ? ((ax & 0x7fffffu) | 0x800000u) : (ax & 0x7fffffu);
  const uint32_t shift = 151u - B - M - (e ? e : 1u);
  if (shift >= 25u) return 0u;
  uint32_t m = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
  return m;
}
/* exponent/mantissa fields of a narrow float with M mantissa bits and bias B -> float bits (no sign) */
static inline uint32_t widen_float_bits(uint32_t em, uint32_t M, uint32_t B) {
  const uint32_t e = em >> M, m = em & ((1u << M) - 1u);
  if (e != 0) return ((e + 127u - B) << 23) | (m << (23u - M));
  if (m == 0) return 0u;
  return f32_bits((float)m * bits_f32((128u - B - M) << 23)); /* m * 2^(1-B-M), exact */
}

struct fp8_e4m3fn { /* 1.4.3, bias 7, no infinities; S.1111.111 is NaN. As torch: a finite value beyond the
                       largest (448) and +-inf saturate to +-448; NaN stays NaN */
  uint8_t bits;
  operator float() const {
    const uint32_t sign = (uint32_t)(bits & 0x80u) << 24;
    if ((bits & 0x7fu) == 0x7fu) return bits_f32(sign | 0x7ff00000u);
    return bits_f32(sign | widen_float_bits(bits & 0x7fu, 3u, 7u));
  }
  static fp8_e4m3fn from_float(float f) {
    const uint32_t x = f32_bits(f), ax = x & 0x7fffffffu;
    uint32_t em;
    if (ax > 0x7f800000u) em = 0x7fu;
    else if (ax >= 0x43f00000u) em = 0x7eu; /* >= 480 */
    else {
      em = narrow_float_bits(ax, 3u, 7u);
      if (em == 0x7fu) em = 0x7eu; /* rounded into the NaN pattern */
    }
    fp8_e4m3fn r;
    r.bits = (uint8_t)(((x >> 24) & 0x80u) | em);
    return r;
  }
};
struct fp8_e5m2 { /* 1.5.2, bias 15, IEEE-like: |x| >= 61440 rounds to inf */
  uint8_t bits;
  operator float() const {
    const uint32_t sign = (uint32_t)(bits & 0x80u) << 24;
    const uint32_t em = bits & 0x7fu;
    if (em >= 0x7cu) return bits_f32(sign | (em == 0x7cu ? 0x7f800000u : 0x7fc00000u | ((em & 3u) << 21)));
    return bits_f32(sign | widen_float_bits(em, 2u, 15u));
  }
  static fp8_e5m2 from_float(float f) {
    const uint32_t x = f32_bits(f), ax = x & 0x7fffffffu;
    uint32_t em;
    if (ax > 0x7f800000u) em = 0x7fu;        /* NaN */
    else if (ax >= 0x47800000u) em = 0x7cu;  /* >= 65536 (and inf): inf */
    else em = narrow_float_bits(ax, 2u, 15u); /* may round up to 0x7c (inf) */
    fp8_e5m2 r;
    r.bits = (uint8_t)(((x >> 24) & 0x80u) | em);
    return r;
  }
};
struct fp8_e8m0fnu { /* 2^(bits - 127), no sign, no zero (0 is 2^-127), 0xff NaN. The sign of the input is ignored;
                        the exponent rounds to nearest with ties (mantissa exactly .5) up for normal inputs */
  uint8_t bits;
  operator float() const {
    if (bits == 0xffu) return bits_f32(0x7f800001u);
    return bits_f32(bits ? (uint32_t)bits << 23 : 0x00400000u);
  }
  static fp8_e8m0fnu from_float(float f) {
    const uint32_t x = f32_bits(f);
    uint32_t e = (x >> 23) & 0xffu;
    if (e != 0xffu) {
      const uint32_t g = (x >> 22) & 1u, rs = (x & 0x3fffffu) != 0;
      if (g && (rs || e > 0)) ++e;
    }
    fp8_e8m0fnu r;
    r.bits = (uint8_t)e;
    return r;
  }
};
/* two FP4 E2M1 values in one byte (torch.float4_e2m1fn_x2): moved as bytes, never converted */
struct fp4_e2m1x2 {
  uint8_t bits;
};

/* Cvt<To>::from(x): value conversion used by every load and store of generated code.
 * float -> int truncates toward zero (as torch does); anything -> bool is `x != 0`;
 * anything -> half/bf16 goes through float and rounds to nearest even. */
template <class To>
struct Cvt {
  template <class F>
  static To from(F x) { return static_cast<To>(x); }
  static To from(half h) { return static_cast<To>(float(h)); }
  static To from(bf16 b) { return static_cast<To>(float(b)); }
};
template <>
struct Cvt<half> {
  template <class F>
  static half from(F x) { return half::from_float(static_cast<float>(x)); }
  static half from(half h) { return h; }
  static half from(bf16 b) { return half::from_float(float(b)); }
};
template <>
struct Cvt<bf16> {
  template <class F>
  static bf16 from(F x) { return bf16::from_float(static_cast<float>(x)); }
  static bf16 from(bf16 b) { return b; }
  static bf16 from(half h) { return bf16::from_float(float(h)); }
};
#define PYPTO_RT_CVT_NARROW(T)                                            \
  template <>                                                             \
  struct Cvt<T> {                                                         \
    template <class F>                                                    \
    static T from(F x) { return T::from_float(static_cast<float>(x)); }  \
    static T from(T v) { return v; }                                      \
  };
PYPTO_RT_CVT_NARROW(fp8_e4m3fn)
PYPTO_RT_CVT_NARROW(fp8_e5m2)
PYPTO_RT_CVT_NARROW(fp8_e8m0fnu)
#undef PYPTO_RT_CVT_NARROW
template <>
struct Cvt<fp4_e2m1x2> {
  static fp4_e2m1x2 from(fp4_e2m1x2 v) { return v; }
};
template <>
struct Cvt<bool> {
  template <class F>
  static bool from(F x) { return x != 0; }
  static bool from(half h) { return float(h) != 0.0f; }
  static bool from(bf16 b) { return float(b) != 0.0f; }
};

/* ------------------------------------------------------------------------------------------------------ */
/* integer helpers with Python semantics */

static inline int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
static inline int64_t floormod(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
/* unsigned 64-bit (the compute type of uint16/32/64): C unsigned arithmetic, x // 0 and x % 0 yield 0 */
static inline uint64_t ufloordiv(uint64_t a, uint64_t b) { return b ? a / b : 0u; }
static inline uint64_t ufloormod(uint64_t a, uint64_t b) { return b ? a % b : 0u; }
static inline uint64_t uipow(uint64_t a, uint64_t b) {
  uint64_t r = 1;
  while (b) {
    if (b & 1u) r *= a;
    a *= a;
    b >>= 1;
  }
  return r;
}
static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline double fmin_(double a, double b) { return a < b ? a : b; }
static inline double fmax_(double a, double b) { return a > b ? a : b; }

/* ------------------------------------------------------------------------------------------------------ */
/* math on float / double / integers (compute types of generated code) */

#define PYPTO_RT_UNARY(name, fb, db)                     \
  static inline float name(float x) { return fb(x); }   \
  static inline double name(double x) { return db(x); }
static inline double exp_(double x) { return __builtin_exp(x); }
/* a*b + c inside exp_: one explicit fused multiply-add where the machine has it (twice the throughput of the
 * FP ports, and more accurate), else a multiply and an add. Part of exp_'s definition, so fused and unfused
 * code agree; the kernel's own ops are never contracted (-ffp-contract=off). */
#define PYPTO_RT_EXP_C2 0x1.fffffcp-2f
#define PYPTO_RT_EXP_C3 0x1.555492p-3f
#define PYPTO_RT_EXP_C4 0x1.5558f4p-5f
#define PYPTO_RT_EXP_C5 0x1.123a1cp-7f
#define PYPTO_RT_EXP_C6 0x1.6a23acp-10f
#if defined(__FMA__) || defined(__aarch64__)
#define PYPTO_RT_MADD(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define PYPTO_RT_MADD(a, b, c) ((a) * (b) + (c))
#endif
/* exp_'s reduction and polynomial: exp(xs) = p 2^n, n = rint(xs / ln2), p in [sqrt(1/2), sqrt(2)] (one
 * rounding per step); shared by exp_ and kernel_vmath.h's vm_exp_normal, which scale p differently. */
static inline float exp_core(float xs, float& n) {
  n = __builtin_rintf(xs * 1.44269504088896341f);
  const float r = PYPTO_RT_MADD(n, 2.12194440e-4f, PYPTO_RT_MADD(n, -0.693359375f, xs));
  float p = PYPTO_RT_EXP_C6;
  p = PYPTO_RT_MADD(p, r, PYPTO_RT_EXP_C5);
  p = PYPTO_RT_MADD(p, r, PYPTO_RT_EXP_C4);
  p = PYPTO_RT_MADD(p, r, PYPTO_RT_EXP_C3);
  p = PYPTO_RT_MADD(p, r, PYPTO_RT_EXP_C2);
  p = PYPTO_RT_MADD(p, r, 1.0f);
  return PYPTO_RT_MADD(p, r, 1.0f);
}
/* float exp without a libm call, so that loops over it vectorize (glibc's expf is a scalar call). Cody-Waite
 * reduction x = n*ln2 + r with |r| <= ln2/2 (ln2 split so n*LN2_HI is exact), a degree-6 polynomial 1 + r +
 * c2 r^2 + ... + c6 r^6 (c2..c6 fitted for the least maximum relative error of e^r on [-ln2/2, ln2/2]: 3e-9,
 * 0.06 ulp, with the float coefficients of exp_core above; the degree-7 Taylor polynomial it replaced took one FMA more), then
 * the scale 2^n applied in two halves so subnormal results round once. Inputs are clamped to [-104, 89]: below, the result
 * rounds to +0; above, it overflows to +inf. NaN comes back as NaN. Branch-free: every choice is a select
 * (max 0.89 ulp from the exact result with FMA, 1.18 without, over every float of [-104, 88.7]:
 * benchmarks/exp16_exhaustive.cpp; tests/ut/language/test_exp_range.py checks every 97th float of the range, the
 * clamp boundaries, infinities and NaNs). */
static inline float exp_(float x) {
  /* The clamp on the bits: unsigned order puts every negative float below -104 (-inf, -NaN included) above
   * bits(-104), signed order every positive float above 89 (+inf, +NaN) above bits(89). Two integer min
   * instructions, where the same clamp written on floats vectorizes into ~10 mask instructions (g++ cannot use
   * maxps/minps for a NaN-safe float select); a NaN x becomes a number here and comes back as x below. */
  uint32_t ub = f32_bits(x);
  ub = ub < 0xC2D00000u ? ub : 0xC2D00000u;                 /* bits(-104.0f) */
  int32_t ib = (int32_t)ub;
  ib = ib < (int32_t)0x42B20000 ? ib : (int32_t)0x42B20000; /* bits(89.0f) */
  const float xs = bits_f32((uint32_t)ib);
  float n;
  const float p = exp_core(xs, n);
  const int32_t ni = (int32_t)n;
  const int32_t n1 = ni >> 1, n2 = ni - (ni >> 1);
  const float s1 = bits_f32((uint32_t)(n1 + 127) << 23), s2 = bits_f32((uint32_t)(n2 + 127) << 23);
  const float y = (p * s1) * s2;
  return x != x ? x : y;
}
/* exp16(a): a[0..16) = exp_(a[0..16)) in place, bit for bit (a 64-byte aligned block; codegen hoists the exp
 * arguments of a 16-element block into it). With AVX-512 the same steps run as one vector: the clamp, rint,
 * reduction and polynomial are the scalar code's operations lane by lane, and the scale is vscalefps, p * 2^n
 * rounded once, which is what (p * s1) * s2 gives (p * s1 is exact: 2^n1 >= 2^-75 keeps it normal), for every n
 * the clamp allows (exhaustive check over all 2^32 inputs: benchmarks/exp16_exhaustive.cpp). That replaces the
 * ~10 integer instructions that build s1 and s2: 19 vector instructions per 16 elements instead of 30. Without
 * AVX-512 (or with another compiler) the scalar function, which g++ vectorizes with the target's width. GCC
 * builtins rather than <immintrin.h>, whose parsing alone adds ~190 ms to every kernel's compile. */
#if defined(__AVX512F__) && defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
typedef float v16f_t __attribute__((vector_size(64)));
typedef int32_t v16i_t __attribute__((vector_size(64)));
static inline v16f_t madd16(v16f_t a, v16f_t b, v16f_t c) {
  return __builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)0xFFFF, 4 /* current rounding */);
}
static inline void exp16(float* a) {
  v16f_t x;
  __builtin_memcpy(&x, a, 64);
  const v16i_t zi = {};
  const v16i_t ub = __builtin_ia32_pminud512_mask((v16i_t)x, zi + (int32_t)0xC2D00000u, zi, (unsigned short)0xFFFF);
  const v16i_t ib = __builtin_ia32_pminsd512_mask(ub, zi + (int32_t)0x42B20000, zi, (unsigned short)0xFFFF);
  const v16f_t xs = (v16f_t)ib;
  const v16f_t z = {};
  const v16f_t n = __builtin_ia32_rndscaleps_mask(xs * 1.44269504088896341f, 4 /* rint */, z, (unsigned short)0xFFFF, 4);
  const v16f_t r = madd16(n, z + 2.12194440e-4f, madd16(n, z - 0.693359375f, xs));
  v16f_t p = z + PYPTO_RT_EXP_C6;
  p = madd16(p, r, z + PYPTO_RT_EXP_C5);
  p = madd16(p, r, z + PYPTO_RT_EXP_C4);
  p = madd16(p, r, z + PYPTO_RT_EXP_C3);
  p = madd16(p, r, z + PYPTO_RT_EXP_C2);
  p = madd16(p, r, z + 1.0f);
  p = madd16(p, r, z + 1.0f);
  const v16f_t y = __builtin_ia32_scalefps512_mask(p, n, z, (unsigned short)0xFFFF, 4);
  const v16f_t out = x != x ? x : y;
  __builtin_memcpy(a, &out, 64);
}
#else
static inline void exp16(float* a) {
  for (int l = 0; l < 16; ++l) a[l] = exp_(a[l]);
}
#endif
PYPTO_RT_UNARY(sqrt_, __builtin_sqrtf, __builtin_sqrt)
/* fp64 keeps libm; the float versions of these are kernel_vmath.h's (vectorizable, same bits in every lane) */
static inline double log_(double x) { return __builtin_log(x); }
static inline double log2_(double x) { return __builtin_log2(x); }
static inline double log10_(double x) { return __builtin_log10(x); }
static inline double log1p_(double x) { return __builtin_log1p(x); }
static inline double exp2_(double x) { return __builtin_exp2(x); }
static inline double expm1_(double x) { return __builtin_expm1(x); }
static inline double tanh_(double x) { return __builtin_tanh(x); }
static inline double erf_(double x) { return __builtin_erf(x); }
static inline double atan_(double x) { return __builtin_atan(x); }
static inline double acos_(double x) { return __builtin_acos(x); }
static inline double asin_(double x) { return __builtin_asin(x); }
static inline double atanh_(double x) { return __builtin_atanh(x); }
static inline double acosh_(double x) { return __builtin_acosh(x); }
static inline double asinh_(double x) { return __builtin_asinh(x); }
static inline double cosh_(double x) { return __builtin_cosh(x); }
static inline double sinh_(double x) { return __builtin_sinh(x); }
static inline double erfc_(double x) { return __builtin_erfc(x); }
static inline float erfc_(float x); /* kernel_vmath.h */
static inline double cbrt_(double x) { return __builtin_cbrt(x); }
static inline double tan_(double x) { return __builtin_tan(x); }
PYPTO_RT_UNARY(floor_, __builtin_floorf, __builtin_floor)
PYPTO_RT_UNARY(ceil_, __builtin_ceilf, __builtin_ceil)
PYPTO_RT_UNARY(trunc_, __builtin_truncf, __builtin_trunc)
PYPTO_RT_UNARY(rint_, __builtin_rintf, __builtin_rint) /* default rounding mode: half to even */
PYPTO_RT_UNARY(fabs_, __builtin_fabsf, __builtin_fabs)
static inline double sin_(double x) { return __builtin_sin(x); }
static inline double cos_(double x) { return __builtin_cos(x); }
#undef PYPTO_RT_UNARY

static inline float pow_(float a, float b); /* kernel_vmath.h */
static inline double pow_(double a, double b) { return __builtin_pow(a, b); }
static inline float fmod_(float a, float b) { return __builtin_fmodf(a, b); }
static inline double fmod_(double a, double b) { return __builtin_fmod(a, b); }
static inline bool isnan_(float x) { return x != x; }
static inline bool isnan_(double x) { return x != x; }
static inline bool isnan_(int64_t) { return false; }
static inline bool isnan_(uint64_t) { return false; }

/* Stable sort of the indices ids[0..n) by `before(a, b)` (a strictly ranks before b): bottom-up merge sort
 * through the scratch array tmp[0..n) (pypto.argsort). */
template <class Before>
static inline void stable_sort_idx(int64_t* ids, int64_t* tmp, int64_t n, Before before) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = before(ids[j], ids[i]) ? ids[j++] : ids[i++];
      while (i < mid) tmp[k++] = ids[i++];
      while (j < hi) tmp[k++] = ids[j++];
    }
    for (int64_t k = 0; k < n; ++k) ids[k] = tmp[k];
  }
}
static inline float atan2_(float y, float x); /* kernel_vmath.h */
static inline double atan2_(double y, double x) { return __builtin_atan2(y, x); }
static inline float hypot_(float a, float b); /* kernel_vmath.h */
static inline double hypot_(double a, double b) { return __builtin_hypot(a, b); }
static inline bool isfinite_(float x) { return __builtin_isfinite(x); }
static inline bool isfinite_(double x) { return __builtin_isfinite(x); }
static inline bool isfinite_(int64_t) { return true; }
/* the sign bit read from the bits (g++ 12 fails with an internal error on a vectorized __builtin_signbit of a
 * float converted from bf16) */
static inline bool signbit_(float x) { return (f32_bits(x) >> 31) != 0; }
static inline bool signbit_(double x) {
  uint64_t u;
  __builtin_memcpy(&u, &x, sizeof u);
  return (u >> 63) != 0;
}
static inline bool signbit_(int64_t x) { return x < 0; }
/* integer fmod (torch.fmod on integers: truncated division's remainder, sign of the dividend); x fmod 0 is 0
 * here (torch raises), and INT64_MIN fmod -1 is 0 (no overflow trap) */
static inline int64_t ifmod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
/* torch.gcd: Euclid on |a|, |b| (the result is never negative except for the most negative value) */
static inline int64_t gcd_(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  while (x != 0) {
    const uint64_t c = x;
    x = y % x;
    y = c;
  }
  return (int64_t)y;
}
/* shifts on the int64 compute type of every integer dtype, with torch's results at the narrower result dtype
 * after truncation: a left shift by >= the width (or a negative count) gives 0, a right shift by >= the width
 * (or a negative count) fills with the sign */
static inline int64_t shl(int64_t a, int64_t b) { return (b < 0 || b >= 64) ? 0 : (int64_t)((uint64_t)a << b); }
static inline int64_t shr(int64_t a, int64_t b) { return (b < 0 || b >= 64) ? (a >> 63) : (a >> b); }

/* maximum/minimum propagate NaN like torch.maximum / torch.amax: a if a is NaN, else b if b is NaN, else the
 * larger (smaller), a on a tie (so relu(-0.0) = maximum(-0.0, 0) is -0.0, as torch.relu gives; torch.maximum
 * itself answers a +0/-0 tie differently on its scalar and vector paths). One
 * select (a NaN b fails the compare, a NaN a passes `a != a`): four vector instructions, the three-way
 * if-chain took six. */
template <class T>
static inline T maximum(T a, T b) {
  return (a >= b || a != a) ? a : b;
}
template <class T>
static inline T minimum(T a, T b) {
  return (a <= b || a != a) ? a : b;
}
/* amax/amin's accumulation step (acc: the lane's result so far, v: the next element): the same result as
 * maximum(acc, v) / minimum(acc, v) except which NaN a lane with several NaNs keeps (the last here). `v > acc ? v
 * : acc` is x86's maxps(v, acc) exactly (acc on a tie or when either is NaN: a NaN acc stays), and the NaN test on
 * v alone is off the loop-carried chain: maxps + one compare + a masked move per vector, where maximum's select
 * took two compares, an or of the masks and a blend (amax fp32 128x1024, in L2: 0.0123 -> 0.0094 ms a call at
 * AVX-512). */
template <class T>
static inline T amax_step(T acc, T v) {
  const T m = v > acc ? v : acc;
  return v != v ? v : m;
}
template <class T>
static inline T amin_step(T acc, T v) {
  const T m = v < acc ? v : acc;
  return v != v ? v : m;
}
/* torch.remainder for floats: result has the sign of the divisor */
template <class T>
static inline T fremainder(T a, T b) {
  T r = fmod_(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static inline int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
  int64_t r = 1;
  while (b) {
    if (b & 1) r *= a;
    a *= a;
    b >>= 1;
  }
  return r;
}
template <class T>
static inline T sigmoid(T x) { return T(1) / (T(1) + exp_(-x)); }

/* Float reductions run in L interleaved partial results (L = 64 for float, 32 for double: codegen/lanes.py):
 * element j of the flattened reduced index goes to lane j % L in order, then the lanes fold pairwise
 * (lane l with l + L/2, then L/4, ...). This fixed order is the
 * reduction's definition (fused and unfused code, any thread count and any SIMD width give the same bits) and
 * it is what lets the loop vectorize without -ffast-math: each lane is an independent sequential sum. */
/* The fold runs on GCC vector types of the machine's width (generic vector extensions, no target header): whole
 * vectors first (vector i with vector i + L/(2V)), then each step splits the one vector left into halves and
 * combines low with high; in lanes that is l with l + w for w = L/2 ... 1, exactly the order above. On plain
 * arrays g++ kept the loop over w rolled and went through memory, each narrower reload stalling on the wider
 * store before it: the 64-lane max fold took ~200 cycles, a third of a row softmax's time. */
#if defined(__AVX512F__)
#define PYPTO_RT_VBYTES 64
#elif defined(__AVX__)
#define PYPTO_RT_VBYTES 32
#else
#define PYPTO_RT_VBYTES 16
#endif
template <int W, class T>
struct fold_vec_t {
  typedef T type __attribute__((vector_size(W * sizeof(T))));
  typedef T unaligned __attribute__((vector_size(W * sizeof(T)), aligned(sizeof(T)), may_alias));
};
template <int W, class T, class V, class Op>
static inline T fold_halves(V v, Op op) {
  if constexpr (W == 2) {
    return op(v[0], v[1]);
  } else {
    typedef typename fold_vec_t<W / 2, T>::type H;
    H lo, hi;
    __builtin_memcpy(&lo, &v, sizeof lo);
    __builtin_memcpy(&hi, (const char*)&v + sizeof lo, sizeof hi);
    return fold_halves<W / 2, T>(op(lo, hi), op);
  }
}
template <int N, class V, class Op>
static inline V fold_whole(const V* r, Op op) {
  if constexpr (N == 1) {
    return r[0];
  } else {
    V h[N / 2];
    for (int i = 0; i < N / 2; ++i) h[i] = op(r[i], r[i + N / 2]);
    return fold_whole<N / 2>(h, op);
  }
}
template <int L, class T, class Op>
static inline T fold_lanes(const T* a, Op op) {
  constexpr int V = (int)(PYPTO_RT_VBYTES / sizeof(T)) < L ? (int)(PYPTO_RT_VBYTES / sizeof(T)) : L;
  typedef typename fold_vec_t<V, T>::type R;
  R r[L / V];
  for (int i = 0; i < L / V; ++i) r[i] = *(const typename fold_vec_t<V, T>::unaligned*)(a + i * V);
  return fold_halves<V, T>(fold_whole<L / V>(r, op), op);
}
/* each op works on a scalar and on a vector alike (a vector compare gives a lane mask, `?:` selects per lane);
 * amax/amin are maximum/minimum's select, lane by lane */
template <int L, class T>
static inline T fold_sum(const T* a) {
  return fold_lanes<L>(a, [](auto x, auto y) { return x + y; });
}
template <int L, class T>
static inline T fold_prod(const T* a) {
  return fold_lanes<L>(a, [](auto x, auto y) { return x * y; });
}
template <int L, class T>
static inline T fold_amax(const T* a) {
  return fold_lanes<L>(a, [](auto x, auto y) { return ((x >= y) | (x != x)) ? x : y; });
}
template <int L, class T>
static inline T fold_amin(const T* a) {
  return fold_lanes<L>(a, [](auto x, auto y) { return ((x <= y) | (x != x)) ? x : y; });
}

/* ------------------------------------------------------------------------------------------------------ */
/* errors and memory */

static inline int fail(PyptoLaunchContext* ctx, const char* msg) {
  if (ctx && ctx->error && ctx->error_capacity > 0) {
    int64_t i = 0;
    for (; msg[i] && i + 1 < ctx->error_capacity; ++i) ctx->error[i] = msg[i];
    ctx->error[i] = 0;
  }
  return 1;
}

/* ------------------------------------------------------------------------------------------------------ */
/* runtime_debug_mode=4: bounds checks. Generated code calls check_view before every statement with each
 * operand view (element offset, dims, strides) and its tensor (element count, shape); a view that can touch
 * an element outside the tensor fails the kernel before the statement runs, naming the tensor, the first
 * offending element (as an index into the tensor's shape) and the shape. */

struct MsgBuf {
  char* p;
  int64_t cap, n;
  void s(const char* x) {
    for (; *x; ++x)
      if (p && n + 1 < cap) p[n++] = *x;
    if (p && cap > 0) p[n < cap ? n : cap - 1] = 0;
  }
  void i(int64_t v) {
    char tmp[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
      tmp[k++] = (char)('0' + (int)(u % 10u));
      u /= 10u;
    } while (u);
    if (v < 0) tmp[k++] = '-';
    char out[24];
    for (int j = 0; j < k; ++j) out[j] = tmp[k - 1 - j];
    out[k] = 0;
    s(out);
  }
};

static inline int64_t numel(const PyptoTensorArg& t) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

static inline int check_view(PyptoLaunchContext* ctx, const char* what, int64_t offset, int rank,
                             const int64_t* dims, const int64_t* strides, int64_t numel_, int srank,
                             const int64_t* sshape) {
  int64_t lo = offset, hi = offset;
  for (int k = 0; k < rank; ++k) {
    if (dims[k] <= 0) return 0; /* an empty view touches nothing */
    const int64_t e = (dims[k] - 1) * strides[k];
    if (e < 0)
      lo += e;
    else
      hi += e;
  }
  if (lo >= 0 && hi < numel_) return 0;
  const int64_t bad = lo < 0 ? lo : hi;
  MsgBuf m{ctx ? ctx->error : 0, ctx ? ctx->error_capacity : 0, 0};
  m.s(what);
  m.s(": element index [");
  if (bad >= 0 && srank > 0) {
    int64_t idx[16];
    int64_t r = bad;
    const int n = srank < 16 ? srank : 16;
    for (int k = n - 1; k >= 0; --k) {
      const int64_t d = sshape[k] > 0 ? sshape[k] : 1;
      idx[k] = k == 0 ? r : r % d;
      r = k == 0 ? 0 : r / d;
    }
    for (int k = 0; k < n; ++k) {
      if (k) m.s(", ");
      m.i(idx[k]);
    }
  } else {
    m.i(bad);
  }
  m.s("] (flat ");
  m.i(bad);
  m.s(") is outside the tensor of shape [");
  for (int k = 0; k < srank && k < 16; ++k) {
    if (k) m.s(", ");
    m.i(sshape[k]);
  }
  m.s("] (");
  m.i(numel_);
  m.s(" elements); nothing of this statement was executed");
  return 1;
}

/* A heap temporary freed when the enclosing scope ends (zero-initialised so results are deterministic). */
struct Buffer {
  void* p;
  explicit Buffer(size_t bytes) : p(__builtin_calloc(bytes ? bytes : 1, 1)) {}
  ~Buffer() { __builtin_free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

/* Uninitialised 64-byte-aligned heap scratch for tile buffers too large for the stack, freed at scope end (a tile
 * buffer is always written before it is read, so it needs no zeroing, unlike Buffer). */
struct Scratch {
  void* raw;
  void* p;
  explicit Scratch(size_t bytes) : raw(__builtin_malloc(bytes + 64)) {
    p = (void*)(((size_t)raw + 63) & ~(size_t)63);
  }
  ~Scratch() { __builtin_free(raw); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

/* Streaming (non-temporal) stores for large outputs a fused loop writes once (codegen/fused.py decides by size):
 * a 64-byte line goes to memory without first being read into the cache (the read-for-ownership a plain store
 * pays, a third of a copy's traffic), and without evicting the inputs. Builtins, not <immintrin.h>, which alone
 * costs more compile time than a whole kernel. The values are the same bits either way; only where they land
 * differs. stream_fence() orders them before anything later (a part's completion, the kernel's return). */
/* whether the byte ranges [a0, a1) and [b0, b1) share a byte (a matmul writing its destination directly must
 * not overwrite an input it still reads) */
static inline bool overlaps(const void* a0, const void* a1, const void* b0, const void* b1) {
  return (size_t)a0 < (size_t)b1 && (size_t)b0 < (size_t)a1;
}
/* prefetch_at<BYTES>(base, off): ask for the cache lines of BYTES bytes from element `off` of base (a later tile's
 * rows, fetched while this tile computes). The address is formed as an integer (it may lie past the tensor for the
 * last tile: a prefetch never faults, and no pointer beyond the object is formed). */
template <int BYTES, class T>
static inline void prefetch_at(const T* base, int64_t off) {
  const uintptr_t a = (uintptr_t)base + (uintptr_t)off * sizeof(T);
  for (int b = 0; b < BYTES; b += 64) __builtin_prefetch((const void*)(a + (uintptr_t)b), 0, 3);
}
static inline bool stream_ok(const void* p, int64_t bytes) {
  /* a run that starts on a 64-byte line and is whole lines */
  return ((size_t)p % 64) == 0 && bytes % 64 == 0;
}
static inline void stream64(void* dst, const void* src) {
  /* inline asm with the line as its only memory operand: a builtin call would make g++ assume any memory may
   * change and reload every captured pointer in the loop */
#if defined(__x86_64__) && defined(__AVX512F__)
  typedef long long v8di __attribute__((vector_size(64)));
  v8di v;
  __builtin_memcpy(&v, src, 64);
  __asm__ __volatile__("vmovntdq %1, %0" : "=m"(*(v8di*)dst) : "v"(v));
#elif defined(__x86_64__) && defined(__AVX__)
  typedef long long v4di __attribute__((vector_size(32)));
  v4di v[2];
  __builtin_memcpy(v, src, 64);
  __asm__ __volatile__("vmovntdq %1, %0" : "=m"(((v4di*)dst)[0]) : "x"(v[0]));
  __asm__ __volatile__("vmovntdq %1, %0" : "=m"(((v4di*)dst)[1]) : "x"(v[1]));
#elif defined(__x86_64__)
  typedef long long v2di __attribute__((vector_size(16)));
  v2di v[4];
  __builtin_memcpy(v, src, 64);
  for (int i = 0; i < 4; ++i) __asm__ __volatile__("movntdq %1, %0" : "=m"(((v2di*)dst)[i]) : "x"(v[i]));
#else
  __builtin_memcpy(dst, src, 64);
#endif
}
static inline void stream_fence() {
#if defined(__x86_64__)
  __asm__ __volatile__("sfence" ::: "memory");
#endif
}

#ifndef PYPTO_RT_THREADS
/* Kernels without anything parallel: the same interface, on the calling thread. */
template <class F>
static int run_parts(int64_t nparts, int32_t, F& part) {
  for (int64_t k = 0; k < nparts; ++k) {
    const int r = part(k);
    if (r) return r;
  }
  return 0;
}
#endif

}  // namespace pypto_rt

#include "kernel_hifloat8.h"
#include "kernel_vmath.h"

#ifdef PYPTO_RT_THREADS
#include "kernel_par.h"
#endif
#include "kernel_gemm.h"

#endif /* PYPTO_KERNEL_RT_H_ */
