// pypto_rt::exp16 (the 16-lane exp of generated elementwise loops) against the scalar pypto_rt::exp_, bit for bit,
// over all 2^32 float inputs (NaN payloads, infinities, subnormals, the clamp's boundaries included). Prints the
// number of mismatches (the first five in full) and exits non-zero if there is any. About 80 s on one core.
//   g++ -O3 -march=native -std=c++17 -ffp-contract=off -fno-math-errno -Iinclude \
//       benchmarks/exp16_exhaustive.cpp -o /tmp/exp16 && /tmp/exp16
// Built with the kernels' own flags (toolchain.py): on a machine with AVX-512 exp16 is the vscalefps path,
// elsewhere it is the scalar function and the check is trivially clean.
#include <pypto/kernel_abi.h>
#include <pypto/kernel_rt.h>

#include <cstdio>
#include <cstring>

int main() {
  alignas(64) float block[16];
  alignas(64) float input[16];
  unsigned long mismatches = 0;
  uint32_t u = 0;
  do {
    for (int l = 0; l < 16; ++l) {
      const uint32_t w = u + (uint32_t)l;
      std::memcpy(&input[l], &w, 4);
    }
    std::memcpy(block, input, sizeof block);
    pypto_rt::exp16(block);
    for (int l = 0; l < 16; ++l) {
      const float ref = pypto_rt::exp_(input[l]);
      uint32_t want, got;
      std::memcpy(&want, &ref, 4);
      std::memcpy(&got, &block[l], 4);
      if (want != got) {
        if (mismatches < 5) std::printf("input %08x: exp_ %08x, exp16 %08x\n", u + (uint32_t)l, want, got);
        ++mismatches;
      }
    }
    u += 16;
  } while (u != 0);
#if defined(__AVX512F__) && defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
  std::printf("exp16 (AVX-512 vscalefps path) vs exp_: %lu mismatches over 2^32 inputs\n", mismatches);
#else
  std::printf("exp16 (scalar path) vs exp_: %lu mismatches over 2^32 inputs\n", mismatches);
#endif
  return mismatches != 0;
}
