/* What sin_/cos_/tan_ pay for their two argument reductions: the element loop as generated (both reductions
 * computed, selected per lane) vs the same loop with only the fp64 Cody-Waite reduction (what a fast path for
 * vectors with every |x| < 2^20 would run), next to nothing else. Prints medians of 7 runs over 4M floats in
 * [-100, 100].
 *   g++ -O3 -march=native [-mno-avx512f] -ffp-contract=off -fno-math-errno -fno-trapping-math -I include \
 *       benchmarks/vmath_trig_speed.cpp -o t && ./t */
#include <pypto/kernel_rt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace pypto_rt;

static inline float sin_small_only(float x) {
  const vm_trigred t = vm_trig_reduce_small(__builtin_fabsf(x));
  const float r2 = t.r * t.r;
  const float v = (t.q & 1u) ? vm_cos_poly(t.r, t.lo, r2) : vm_sin_poly(t.r, t.lo, r2);
  const float y = vm_flip(v, ((t.q >> 1) & 1u) ^ (f32_bits(x) >> 31));
  return __builtin_fabsf(x) < 0x1p-12f ? x : (x - x == 0.0f ? y : vm_nan());
}
__attribute__((noinline)) static void both(const float* x, float* o, int n) {
  for (int i = 0; i < n; i++) o[i] = sin_(x[i]);
}
__attribute__((noinline)) static void small(const float* x, float* o, int n) {
  for (int i = 0; i < n; i++) o[i] = sin_small_only(x[i]);
}
__attribute__((noinline)) static void cw_only(const float* x, float* o, int n) {
  for (int i = 0; i < n; i++) o[i] = vm_trig_reduce_small(__builtin_fabsf(x[i])).r;
}
__attribute__((noinline)) static void ph_only(const float* x, float* o, int n) {
  for (int i = 0; i < n; i++) o[i] = vm_trig_reduce_big(__builtin_fabsf(x[i])).r;
}

static double median_ms(void (*f)(const float*, float*, int), const std::vector<float>& x, std::vector<float>& o) {
  std::vector<double> t;
  for (int r = 0; r < 7; r++) {
    const auto a = std::chrono::steady_clock::now();
    f(x.data(), o.data(), (int)x.size());
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count() * 1e3);
  }
  std::sort(t.begin(), t.end());
  return t[3];
}

int main() {
  const int n = 4096 * 1024;
  std::vector<float> x(n), o(n);
  for (int i = 0; i < n; i++) x[i] = (float)(i % 20001) * 0.01f - 100.0f;
  const double b = median_ms(both, x, o), s = median_ms(small, x, o);
  const double c = median_ms(cw_only, x, o), p = median_ms(ph_only, x, o);
  std::printf("sin_ as generated (both reductions): %7.2f ms\n", b);
  std::printf("sin_ with the small reduction only:  %7.2f ms  (%.2fx faster)\n", s, b / s);
  std::printf("Cody-Waite reduction alone:          %7.2f ms\n", c);
  std::printf("Payne-Hanek reduction alone:         %7.2f ms\n", p);
  return 0;
}
