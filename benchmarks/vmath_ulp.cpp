// Error of kernel_vmath.h's float functions against fp64 libm, over every float of each function's useful range.
//
//   g++ -O3 -march=native -ffp-contract=off -fno-math-errno -fno-trapping-math -I include \
//       benchmarks/vmath_ulp.cpp -o /tmp/vmath_ulp && /tmp/vmath_ulp [STEP] [NAME...]
//   (add -mno-avx512f for the AVX2 build, -mno-fma for the machines without FMA)
//
// STEP (default 1: every float) takes every STEP-th float of each range. The reference is the fp64 function of
// glibc's libm (< 1 ulp of fp64, i.e. ~2^-29 float ulp: a correctly rounded float reference for this purpose).
// The error of a result y against the exact e is |y - e| / ulp(e), ulp(e) the spacing of floats at |e| (the
// subnormal spacing 2^-149 below 2^-126). Results that must be NaN, +-inf or +-0 are checked exactly, the sign of
// zero included, and counted as "bad" when they differ. The loop over our function is a plain loop g++ vectorizes
// with the target's width, as in generated code.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "pypto/kernel_abi.h"
#include "pypto/kernel_rt.h"

namespace {

typedef float (*FloatFn)(float);
typedef double (*RefFn)(double);

struct Case {
  const char* name;
  FloatFn fn;
  RefFn ref;
  float lo, hi;  // the range measured: every float in [lo, hi]
};

float f_log(float x) { return pypto_rt::log_(x); }
float f_log2(float x) { return pypto_rt::log2_(x); }
float f_log10(float x) { return pypto_rt::log10_(x); }
float f_log1p(float x) { return pypto_rt::log1p_(x); }
float f_exp(float x) { return pypto_rt::exp_(x); }
float f_exp2(float x) { return pypto_rt::exp2_(x); }
float f_expm1(float x) { return pypto_rt::expm1_(x); }
float f_tanh(float x) { return pypto_rt::tanh_(x); }
float f_erf(float x) { return pypto_rt::erf_(x); }
float f_erfc(float x) { return pypto_rt::erfc_(x); }
float f_sinh(float x) { return pypto_rt::sinh_(x); }
float f_cosh(float x) { return pypto_rt::cosh_(x); }
float f_asinh(float x) { return pypto_rt::asinh_(x); }
float f_acosh(float x) { return pypto_rt::acosh_(x); }
float f_atanh(float x) { return pypto_rt::atanh_(x); }
float f_atan(float x) { return pypto_rt::atan_(x); }
float f_asin(float x) { return pypto_rt::asin_(x); }
float f_acos(float x) { return pypto_rt::acos_(x); }
float f_cbrt(float x) { return pypto_rt::cbrt_(x); }
float f_sin(float x) { return pypto_rt::sin_(x); }
float f_cos(float x) { return pypto_rt::cos_(x); }
float f_tan(float x) { return pypto_rt::tan_(x); }
float f_sigmoid(float x) { return pypto_rt::sigmoid<float>(x); }
double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

const Case CASES[] = {
    {"log", f_log, log, 0x1p-149f, 0x1.fffffep127f},
    {"log2", f_log2, log2, 0x1p-149f, 0x1.fffffep127f},
    {"log10", f_log10, log10, 0x1p-149f, 0x1.fffffep127f},
    {"log1p", f_log1p, log1p, -0x1.fffffep-1f, 0x1.fffffep127f},
    {"exp", f_exp, exp, -104.0f, 88.72f},
    {"exp2", f_exp2, exp2, -151.0f, 127.99f},
    {"expm1", f_expm1, expm1, -30.0f, 88.72f},
    {"tanh", f_tanh, tanh, -10.0f, 10.0f},
    {"erf", f_erf, erf, -4.5f, 4.5f},
    {"erfc", f_erfc, erfc, -4.5f, 10.1f},
    {"sinh", f_sinh, sinh, -89.4f, 89.4f},
    {"cosh", f_cosh, cosh, -89.4f, 89.4f},
    {"asinh", f_asinh, asinh, -0x1.fffffep127f, 0x1.fffffep127f},
    {"acosh", f_acosh, acosh, 1.0f, 0x1.fffffep127f},
    {"atanh", f_atanh, atanh, -0x1.fffffep-1f, 0x1.fffffep-1f},
    {"atan", f_atan, atan, -0x1.fffffep127f, 0x1.fffffep127f},
    {"asin", f_asin, asin, -1.0f, 1.0f},
    {"acos", f_acos, acos, -1.0f, 1.0f},
    {"cbrt", f_cbrt, cbrt, -0x1.fffffep127f, 0x1.fffffep127f},
    {"sin", f_sin, sin, -0x1.fffffep127f, 0x1.fffffep127f},
    {"cos", f_cos, cos, -0x1.fffffep127f, 0x1.fffffep127f},
    {"tan", f_tan, tan, -0x1.fffffep127f, 0x1.fffffep127f},
    {"sigmoid", f_sigmoid, r_sigmoid, -88.7f, 104.0f},  // below -88.72 exp_(-x) is inf: 0, as torch
};

uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

double ulp_of(double e) {
  const double a = fabs(e);
  if (a < 0x1p-126) return 0x1p-149;
  int ex;
  frexp(a, &ex);  // a = m 2^ex, m in [0.5, 1)
  return ldexp(1.0, ex - 24);
}

struct Stats {
  double max_ulp = 0;
  float worst = 0;
  uint64_t n = 0, bad = 0;
  float bad_x = 0;
};

void check(const Case& c, const float* x, const float* y, int n, Stats& s) {
  for (int i = 0; i < n; ++i) {
    const double e = c.ref((double)x[i]);
    const float ef = (float)e;
    ++s.n;
    if (isnan(e) || isinf(ef) || ef == 0.0f) {
      const bool same = isnan(e) ? isnan(y[i]) : bits(y[i]) == bits(ef);
      // an exact zero or infinity must match, sign included; a result that rounds to zero may be the
      // subnormal next to it (within the ulp measure below)
      if (!same && !(ef == 0.0f && e != 0.0 && fabs((double)y[i] - e) <= 0x1p-149)) {
        if (!s.bad) s.bad_x = x[i];
        ++s.bad;
      }
      continue;
    }
    const double err = fabs((double)y[i] - e) / ulp_of(e);
    if (!(err <= s.max_ulp)) {
      s.max_ulp = err;
      s.worst = x[i];
    }
  }
}

// every step-th float of [lo, hi], negative part first (bits from -0 up to bits(lo)), then [0, hi]
void run(const Case& c, uint32_t step) {
  enum { N = 4096 };
  static float xs[N], ys[N];
  Stats s;
  int n = 0;
  auto flush = [&]() {
#pragma GCC ivdep
    for (int i = 0; i < n; ++i) ys[i] = c.fn(xs[i]);
    check(c, xs, ys, n, s);
    n = 0;
  };
  auto range = [&](uint64_t a, uint64_t b) {
    for (uint64_t u = a; u <= b; u += step) {
      xs[n++] = from_bits((uint32_t)u);
      if (n == N) flush();
    }
  };
  if (c.lo < 0) range(0x80000000u, bits(c.lo));
  if (c.hi >= 0) range(c.lo > 0 ? bits(c.lo) : 0u, bits(c.hi));
  // specials: zeros, infinities, NaNs, the largest and smallest floats
  const uint32_t sp[] = {0x0u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7fa5a5a5u,
                         0x7f7fffffu, 0xff7fffffu, 0x1u, 0x80000001u, 0x00800000u, 0x80800000u};
  for (uint32_t b : sp) {
    xs[n++] = from_bits(b);
    if (n == N) flush();
  }
  flush();
  printf("%-8s [%g, %g] step %u: %llu floats, max %.3f ulp (at %a), %llu bad specials%s%a\n", c.name, c.lo, c.hi,
         step, (unsigned long long)s.n, s.max_ulp, s.worst, (unsigned long long)s.bad, s.bad ? " first at " : "",
         s.bad ? s.bad_x : 0.0f);
}

// Two-argument functions: the first argument walks every step-th float of [lo, hi] (both signs where lo < 0)
// for each second argument of a fixed set (the integers -8 ... 8, halves, a few others, their neighbours, and
// the specials), both orders of the arguments for atan2 and hypot.
typedef float (*FloatFn2)(float, float);
typedef double (*RefFn2)(double, double);
struct Case2 {
  const char* name;
  FloatFn2 fn;
  RefFn2 ref;
  float lo, hi;
};
float f_pow(float x, float y) { return pypto_rt::pow_(x, y); }
float f_atan2(float y, float x) { return pypto_rt::atan2_(y, x); }
float f_hypot(float a, float b) { return pypto_rt::hypot_(a, b); }
const Case2 CASES2[] = {
    {"pow", f_pow, pow, -0x1.fffffep127f, 0x1.fffffep127f},
    {"atan2", f_atan2, atan2, -0x1.fffffep127f, 0x1.fffffep127f},
    {"hypot", f_hypot, hypot, -0x1.fffffep127f, 0x1.fffffep127f},
};

void run2(const Case2& c, uint32_t step) {
  enum { N = 4096 };
  static float xs[N], ys[N], out[N];
  std::vector<float> second;
  const float base[] = {0.5f, 1.5f, 2.5f, 1.0f / 3, 0.1f, 7.25f, 10.0f, 20.5f, 33.0f, 100.0f, 1e-3f, 1e4f, 1e20f, 1e-20f};
  for (int i = -8; i <= 8; ++i) second.push_back((float)i);
  for (float b : base) second.push_back(b), second.push_back(-b);
  const size_t nb = second.size();
  for (size_t i = 0; i < nb; ++i)
    if (second[i] != 0) second.push_back(nextafterf(second[i], 0)), second.push_back(nextafterf(second[i], 1e30f));
  const uint32_t sp[] = {0x0u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x1u, 0x80000001u, 0x7f7fffffu};
  for (uint32_t b : sp) second.push_back(from_bits(b));
  Stats s;
  int n = 0;
  auto flush = [&]() {
#pragma GCC ivdep
    for (int i = 0; i < n; ++i) out[i] = c.fn(xs[i], ys[i]);
    for (int i = 0; i < n; ++i) {
      const double e = c.ref((double)xs[i], (double)ys[i]);
      const float ef = (float)e;
      ++s.n;
      if (isnan(e) || isinf(ef) || ef == 0.0f) {
        const bool same = isnan(e) ? isnan(out[i]) : bits(out[i]) == bits(ef);
        if (!same && !(ef == 0.0f && e != 0.0 && fabs((double)out[i] - e) <= 0x1p-149)) {
          if (!s.bad) s.bad_x = xs[i], s.worst = ys[i];
          ++s.bad;
        }
        continue;
      }
      const double err = fabs((double)out[i] - e) / ulp_of(e);
      if (!(err <= s.max_ulp)) s.max_ulp = err, s.bad_x = s.bad ? s.bad_x : xs[i], s.worst = ys[i];
    }
    n = 0;
  };
  auto add = [&](float a, float b) {
    xs[n] = a, ys[n] = b, ++n;
    if (n == N) flush();
  };
  for (float b : second) {
    for (uint64_t u = 0; u <= bits(c.hi); u += step) {
      add(from_bits((uint32_t)u), b);
      add(from_bits((uint32_t)u | 0x80000000u), b);
      if (c.fn != f_pow) add(b, from_bits((uint32_t)u)), add(b, from_bits((uint32_t)u | 0x80000000u));
    }
    for (uint32_t a : sp) add(from_bits(a), b), add(b, from_bits(a));
  }
  flush();
  printf("%-8s first arg every %u-th float, %zu second args: %llu pairs, max %.3f ulp (at %a, %a), %llu bad specials\n",
         c.name, step, second.size(), (unsigned long long)s.n, s.max_ulp, s.bad_x, s.worst,
         (unsigned long long)s.bad);
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t step = argc > 1 ? (uint32_t)strtoul(argv[1], 0, 10) : 1u;
  for (const Case& c : CASES) {
    bool want = argc <= 2;
    for (int i = 2; i < argc; ++i) want |= strcmp(argv[i], c.name) == 0;
    if (want) run(c, step ? step : 1u);
  }
  for (const Case2& c : CASES2) {
    bool want = argc <= 2;
    for (int i = 2; i < argc; ++i) want |= strcmp(argv[i], c.name) == 0;
    if (want) run2(c, step ? step : 1u);
  }
  return 0;
}
