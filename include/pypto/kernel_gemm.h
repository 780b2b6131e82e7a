/* pypto matmul with float32 accumulation: cache blocks from the cube tile shapes, packing, a register-blocked
 * micro-kernel. Included by kernel_rt.h when the kernel defines PYPTO_RT_GEMM (only kernels with a matmul).
 *
 * C[M x N] (float, row stride ldc) = A[M x K] * B[K x N] with A(i, k) = a[i*as0 + k*as1], B(k, j) = b[k*bs0 + j*bs1]
 * for any strides (transposed views need no copy) and any input type Cvt<float> converts (fp32, fp16, bf16).
 * Order of the sums, which fixes the bits: for each cache block of kc along K, in order, a fresh float
 * accumulator sums a*b over k in order with fused multiply-adds (matmul is a multiply-accumulate: the one op
 * that is contracted; -ffp-contract=off keeps every other op rounded on its own), then adds into C. The split
 * of M and N into tasks and threads does not change any element's sum, so results are identical for every
 * thread count. bf16 x bf16 with AVX512-BF16: the same blocks and sums on vdpbf16ps, behind an exponent guard
 * (gemm_f32 for bf16 at the end of this file).
 */
#ifndef PYPTO_KERNEL_GEMM_H_
#define PYPTO_KERNEL_GEMM_H_

#ifdef PYPTO_RT_GEMM

namespace pypto_rt {

#if defined(__AVX512F__)
enum { GEMM_VL = 16, GEMM_MR = 8 };  /* 8 x 32 block: 16 zmm accumulators of 32 */
#else
enum { GEMM_VL = 8, GEMM_MR = 6 };   /* 6 x 16 block: 12 ymm accumulators of 16 */
#endif
enum { GEMM_NR = 2 * GEMM_VL };
typedef float gemm_vf __attribute__((vector_size(GEMM_VL * 4)));

#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
/* C block (mr x nr valid of MR x NR) = (accumulate ? C : 0) + sum_k A(r, k) * bp[k][j], where A(r, k) is
 * ap[k * ask + r * asr]: a packed panel (ask = MR, asr = 1) or float rows read in place (ask = 1, asr = lda) */
static __attribute__((noinline)) void gemm_micro(int64_t kc, const float* __restrict ap, int64_t ask, int64_t asr,
                                                 const float* __restrict bp, float* __restrict c, int64_t ldc,
                                                 int accumulate, int mr, int nr) {
  gemm_vf acc[GEMM_MR][2];
  const float* __restrict ar[GEMM_MR];
#pragma GCC unroll 16
  for (int r = 0; r < GEMM_MR; ++r) {
    acc[r][0] = acc[r][1] = (gemm_vf){};
    ar[r] = ap + (r < mr ? r : mr - 1) * asr; /* rows past mr repeat the last one (their sums are dropped) */
  }
  /* unrolled by 4 (the loop overhead shows: 512^3 ~5% faster); each accumulator still sums k in order */
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const gemm_vf b0 = *(const gemm_vf*)(bp + k * GEMM_NR);
    const gemm_vf b1 = *(const gemm_vf*)(bp + k * GEMM_NR + GEMM_VL);
    const int64_t ko = k * ask;
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; ++r) {
      const float x = ar[r][ko];
      acc[r][0] += x * b0;
      acc[r][1] += x * b1;
    }
  }
  if (mr == GEMM_MR && nr == GEMM_NR) {
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; ++r) {
      float* cr = c + r * ldc;
      if (accumulate) {
        gemm_vf c0, c1;
        __builtin_memcpy(&c0, cr, sizeof c0);
        __builtin_memcpy(&c1, cr + GEMM_VL, sizeof c1);
        acc[r][0] = c0 + acc[r][0];
        acc[r][1] = c1 + acc[r][1];
      }
      __builtin_memcpy(cr, &acc[r][0], sizeof acc[r][0]);
      __builtin_memcpy(cr + GEMM_VL, &acc[r][1], sizeof acc[r][1]);
    }
    return;
  }
  for (int r = 0; r < mr; ++r)
    for (int j = 0; j < nr; ++j) {
      const float v = acc[r][j / GEMM_VL][j % GEMM_VL];
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + v : v;
    }
}
#pragma GCC pop_options

/* rows [i0, i0 + m) x cols [k0, k0 + kc) of A into panels of MR rows: ap[panel][k][r], zero-padded */
template <class TA>
static void gemm_pack_a(const TA* a, int64_t s0, int64_t s1, int64_t i0, int64_t m, int64_t k0, int64_t kc,
                        float* __restrict ap) {
  for (int64_t p = 0; p < m; p += GEMM_MR) {
    float* dst = ap + (p / GEMM_MR) * kc * GEMM_MR;
    const int64_t rows = m - p < GEMM_MR ? m - p : GEMM_MR;
    for (int64_t r = 0; r < GEMM_MR; ++r) {
      if (r >= rows) {
        for (int64_t k = 0; k < kc; ++k) dst[k * GEMM_MR + r] = 0.0f;
        continue;
      }
      const TA* src = a + (i0 + p + r) * s0 + k0 * s1;
      for (int64_t k = 0; k < kc; ++k) dst[k * GEMM_MR + r] = Cvt<float>::from(src[k * s1]);
    }
  }
}

/* rows [k0, k0 + kc) x cols [j0, j0 + n) of B into panels of NR columns: bp[panel][k][j], zero-padded */
template <class TB>
static void gemm_pack_b(const TB* b, int64_t s0, int64_t s1, int64_t k0, int64_t kc, int64_t j0, int64_t n,
                        float* __restrict bp) {
  for (int64_t q = 0; q < n; q += GEMM_NR) {
    float* dst = bp + (q / GEMM_NR) * kc * GEMM_NR;
    const int64_t cols = n - q < GEMM_NR ? n - q : GEMM_NR;
    for (int64_t k = 0; k < kc; ++k) {
      const TB* src = b + (k0 + k) * s0 + (j0 + q) * s1;
      float* d = dst + k * GEMM_NR;
      if (cols == GEMM_NR && s1 == 1) {
        for (int64_t j = 0; j < GEMM_NR; ++j) d[j] = Cvt<float>::from(src[j]);
      } else {
        for (int64_t j = 0; j < GEMM_NR; ++j) d[j] = j < cols ? Cvt<float>::from(src[j * s1]) : 0.0f;
      }
    }
  }
}

/* Packing buffers, kept per thread and grown on demand: a malloc per task is an mmap (blocks are > 128 KiB), and
 * its page faults cost more than the packing. Never freed: pool workers live as long as the process. */
static inline float* gemm_scratch(int which, size_t floats) {
  static thread_local float* buf[4];
  static thread_local size_t cap[4];
  if (cap[which] < floats) {
    __builtin_free(buf[which]);
    buf[which] = (float*)__builtin_malloc(floats * 4 + 64);
    cap[which] = floats;
  }
  return (float*)(((size_t)buf[which] + 63) & ~(size_t)63);
}

/* A is read in place (no packing) when it is float with contiguous rows: the micro-kernel broadcasts each
 * element from its row anyway */
template <class TA>
static inline bool gemm_a_direct(int64_t) { return false; }
template <>
inline bool gemm_a_direct<float>(int64_t as1) { return as1 == 1; }

/* C = 0 where K <= 0; true where there is nothing else to do (also an empty C) */
static inline bool gemm_trivial(int64_t M, int64_t N, int64_t K, float* c, int64_t ldc) {
  if (M <= 0 || N <= 0) return true;
  if (K > 0) return false;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = 0.0f;
  return true;
}

/* the cache blocks and tasks of a matmul (they change no sum): nc columns of B per block (b_elems / kc of them,
 * whole panels, at most N rounded up), mc rows of A per block (a_elems / kc, whole micro rows); a task is one
 * column block and a run of row blocks, so B's (kc x nc) block is packed once per K block for all its row
 * blocks; enough runs per column block to give every thread ~4 tasks; small products run on one thread */
struct GemmPlan {
  int64_t nc, mc, mb, nb, runs;
  int32_t nt;
};
static inline GemmPlan gemm_plan(int64_t M, int64_t N, int64_t K, int64_t kc, int64_t b_elems, int64_t a_elems,
                                 int32_t nthreads) {
  GemmPlan p;
  const int64_t nmax = (N + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
  p.nc = b_elems / kc / GEMM_NR * GEMM_NR;
  if (p.nc < GEMM_NR) p.nc = GEMM_NR;
  if (p.nc > nmax) p.nc = nmax;
  p.mc = a_elems / kc / GEMM_MR * GEMM_MR;
  if (p.mc < GEMM_MR) p.mc = GEMM_MR;
  p.mb = (M + p.mc - 1) / p.mc;
  p.nb = (N + p.nc - 1) / p.nc;
  p.nt = (double)M * (double)N * (double)K < 64.0 * 65536.0 ? 1 : nthreads;
  p.runs = p.nt <= 1 ? 1 : ((int64_t)p.nt * 4 + p.nb - 1) / p.nb;
  if (p.runs > p.mb) p.runs = p.mb;
  return p;
}

template <class TA, class TB>
static int gemm_f32(int64_t M, int64_t N, int64_t K, const TA* a, int64_t as0, int64_t as1, const TB* b,
                    int64_t bs0, int64_t bs1, float* c, int64_t ldc, int64_t mc, int64_t kc, int64_t nc,
                    int32_t nthreads) {
  if (gemm_trivial(M, N, K, c, ldc)) return 0;
  /* Cache blocks. kc comes from the cube tiles and fixes the order of the sums (so the bits). mc and nc change
   * no sum: the tiles' m and n are hints, and the blocks are sized for the caches instead: a (kc x nc) block of
   * packed B of up to 1 MiB stays in L2 and serves every row, an A block of mc x kc (~32 KiB) stays in L1 while
   * the micro-kernel sweeps B's panels (measured, 1 thread, 1024^3: 13.9 -> 13.0 ms against the 128 x 256
   * blocks of the bench's tiles; 512^3 ~1.5% faster). The mc and nc passed in are overwritten. */
  if (kc < 1) kc = 1;
  const GemmPlan pl = gemm_plan(M, N, K, kc, (int64_t)1 << 18, 8192, nthreads);
  nc = pl.nc;
  mc = pl.mc;
  const int64_t mb = pl.mb, nb = pl.nb, runs = pl.runs;
  const int32_t nt = pl.nt;
  const bool adirect = gemm_a_direct<TA>(as1);
  const int64_t kmax = K < kc ? K : kc, kbn = (K + kc - 1) / kc, bblock = nc * kmax;
  /* with several runs per column block, B is packed once, by all threads, into one shared buffer of
   * (column block, K block) blocks, and every run reads it: no thread repacks what another packed. The caller's
   * scratch is used; workers only touch it inside run_parts. Up to 16 MiB of packed B; beyond, each task packs
   * its own blocks. */
  float* ball = runs > 1 && nb * kbn * bblock <= (int64_t)1 << 22 ? gemm_scratch(1, (size_t)(nb * kbn * bblock)) : 0;
  if (ball) {
    auto pack = [&](int64_t t) -> int {
      const int64_t jb = (t / kbn) * nc, kb = (t % kbn) * kc;
      gemm_pack_b(b, bs0, bs1, kb, K - kb < kc ? K - kb : kc, jb, N - jb < nc ? N - jb : nc, ball + t * bblock);
      return 0;
    };
    run_parts(nb * kbn, nt, pack);
  }
  auto task = [&](int64_t t) -> int {
    const int64_t jbi = t / runs, jb = jbi * nc, run = t % runs;
    const int64_t ib0 = mb * run / runs * mc, ib1 = mb * (run + 1) / runs * mc;
    const int64_t n = N - jb < nc ? N - jb : nc;
    const int64_t npad = (n + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
    float* ap = adirect ? 0 : gemm_scratch(0, (size_t)(mc * kmax));
    float* bp = ball ? 0 : gemm_scratch(1, (size_t)(npad * kmax));
    for (int64_t kb = 0; kb < K; kb += kc) {
      const int64_t k = K - kb < kc ? K - kb : kc;
      if (ball)
        bp = ball + (jbi * kbn + kb / kc) * bblock;
      else
        gemm_pack_b(b, bs0, bs1, kb, k, jb, n, bp);
      for (int64_t ib = ib0; ib < ib1 && ib < M; ib += mc) {
        const int64_t m = M - ib < mc ? M - ib : mc;
        if (!adirect) gemm_pack_a(a, as0, as1, ib, m, kb, k, ap);
        for (int64_t jr = 0; jr < n; jr += GEMM_NR)
          for (int64_t ir = 0; ir < m; ir += GEMM_MR) {
            const float* pa = adirect ? (const float*)(const void*)a + (ib + ir) * as0 + kb
                                      : ap + (ir / GEMM_MR) * k * GEMM_MR;
            gemm_micro(k, pa, adirect ? 1 : GEMM_MR, adirect ? as0 : 1, bp + (jr / GEMM_NR) * k * GEMM_NR,
                       c + (ib + ir) * ldc + jb + jr, ldc, kb > 0, (int)(m - ir < GEMM_MR ? m - ir : GEMM_MR),
                       (int)(n - jr < GEMM_NR ? n - jr : GEMM_NR));
          }
      }
    }
    return 0;
  };
  return run_parts(nb * runs, nt, task);
}


#if defined(__AVX512BF16__) && defined(__AVX512BW__) && defined(__GNUC__) && !defined(__clang__)
/* bf16 x bf16 on vdpbf16ps (AVX512-BF16): per fp32 lane j, acc += a.hi * b.hi, then acc += a.lo * b.lo, where
 * (lo, hi) are the two bf16 halves of dword j; products exact, each add rounded to nearest even, but with
 * denormal inputs and results flushed to zero (DAZ/FTZ). Checked on this CPU against an fp32 FMA loop: the high
 * (odd) half is added first, every bit equal over 3.2M random lanes, and inf/NaN give the FMA's bits.
 * So the pairs are packed with element k in the high half and k + 1 in the low half: the accumulator then adds
 * a(k) b(k), then a(k+1) b(k+1), in k order, each add rounded like the fp32 path's fused multiply-add
 * (fma(a, b, s) = round(s + a b), and a b of two bf16 is exact in fp32 when it is a normal float).
 *
 * When the bits are those of the fp32 path (the guard, gemm_dp_exact, per A block x B block): let Ea, Eb be the
 * smallest biased exponents of the nonzero elements of the A and the B block. A normal bf16 of exponent E is
 * an integer times 2^(E - 134), so every product is a multiple of 2^q, q = Ea + Eb - 268, and so is every partial
 * sum (the accumulator starts at +0; rounding a multiple of 2^q gives a multiple of 2^q: a result it changes
 * has an ulp above 2^q). With q >= -126 (Ea + Eb >= 142) every nonzero product and partial sum is >= 2^-126,
 * a normal float: DAZ/FTZ never acts. Denormal inputs (exponent field 0) fail it (Ea >= 1 is required), inf and
 * NaN (255) go to the fp32 path, and the largest exponents must keep every product finite and exact:
 * |a b| < 2^(Fa + Fb - 252) <= 2^128 for Fa + Fb <= 380 (a 16-bit significand below 2^128 is a float); a sum that
 * overflows is inf in both paths. A failed block runs the fp32 path on the same block (packed from the operands).
 * The pad of an odd K block is +0 in both operands: s + (+0) = s, as s is never -0 (it starts at +0 and a sum
 * rounded to nearest is -0 only when both addends are). */
typedef float gemm_v16f __attribute__((vector_size(64)));
typedef short gemm_v32h __attribute__((vector_size(64)));
typedef unsigned short gemm_v32u __attribute__((vector_size(64)));
typedef uint32_t gemm_v16u __attribute__((vector_size(64)));
struct GemmExpRange {
  int lo = 255, hi = 0; /* smallest exponent field of the nonzero elements, largest of all */
  void add(GemmExpRange o) {
    lo = o.lo < lo ? o.lo : lo;
    hi = o.hi > hi ? o.hi : hi;
  }
};
static inline bool gemm_dp_exact(GemmExpRange a, GemmExpRange b) {
  return a.lo >= 1 && b.lo >= 1 && a.lo + b.lo >= 142 && a.hi <= 254 && b.hi <= 254 && a.hi + b.hi <= 380;
}
static inline void gemm_exp_scalar(uint16_t h, GemmExpRange& s) {
  const int e = (h >> 7) & 0xff;
  if ((h & 0x7fff) && e < s.lo) s.lo = e;
  if (e > s.hi) s.hi = e;
}
/* the exponent range of 32 bf16 lanes, as running vectors (min over nonzero lanes, max over all) */
static inline void gemm_exp_vec(gemm_v32u x, gemm_v32u& lo, gemm_v32u& hi) {
  const gemm_v32u e = (x >> 7) & 0xff;
  const gemm_v32u big = (gemm_v32u){} + (unsigned short)255;
  const gemm_v32u el = (x & 0x7fff) != 0 ? e : big;
  lo = el < lo ? el : lo;
  hi = e > hi ? e : hi;
}
static inline GemmExpRange gemm_exp_reduce(gemm_v32u lo, gemm_v32u hi) {
  GemmExpRange s;
  for (int i = 0; i < 32; ++i) {
    if (lo[i] < s.lo) s.lo = lo[i];
    if (hi[i] > s.hi) s.hi = hi[i];
  }
  return s;
}

#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
/* C block (mr x nr valid of MR x NR) = (accumulate ? C : 0) + the pair sums: ap[r][p] and bp[p][j] dwords of
 * (k, k + 1) pairs, kp pairs */
static __attribute__((noinline)) void gemm_micro_dp(int64_t kp, const uint32_t* __restrict ap,
                                                    const uint32_t* __restrict bp, float* __restrict c, int64_t ldc,
                                                    int accumulate, int mr, int nr) {
  gemm_v16f acc[GEMM_MR][2];
  const uint32_t* __restrict ar[GEMM_MR];
#pragma GCC unroll 16
  for (int r = 0; r < GEMM_MR; ++r) {
    acc[r][0] = acc[r][1] = (gemm_v16f){};
    ar[r] = ap + r * kp;
    /* C's block is read only at the end, after ~2k cycles of dot products: fetched now, its misses (C does not
     * stay in L2 between K blocks) overlap them (1 thread, 1024^3 ~1%, 512^3 ~4%) */
    __builtin_prefetch(c + r * ldc, 1);
    __builtin_prefetch(c + r * ldc + 16, 1);
  }
#pragma GCC unroll 2
  for (int64_t p = 0; p < kp; ++p) {
    gemm_v32h b0, b1;
    __builtin_memcpy(&b0, bp + p * GEMM_NR, 64);
    __builtin_memcpy(&b1, bp + p * GEMM_NR + 16, 64);
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; ++r) {
      const gemm_v32h x = (gemm_v32h)((gemm_v16u){} + ar[r][p]);
      acc[r][0] = __builtin_ia32_dpbf16ps_v16sf(acc[r][0], x, b0);
      acc[r][1] = __builtin_ia32_dpbf16ps_v16sf(acc[r][1], x, b1);
    }
  }
  if (mr == GEMM_MR && nr == GEMM_NR) {
#pragma GCC unroll 16
    for (int r = 0; r < GEMM_MR; ++r) {
      float* cr = c + r * ldc;
      if (accumulate) {
        gemm_v16f c0, c1;
        __builtin_memcpy(&c0, cr, 64);
        __builtin_memcpy(&c1, cr + 16, 64);
        acc[r][0] = c0 + acc[r][0];
        acc[r][1] = c1 + acc[r][1];
      }
      __builtin_memcpy(cr, &acc[r][0], 64);
      __builtin_memcpy(cr + 16, &acc[r][1], 64);
    }
    return;
  }
  for (int r = 0; r < mr; ++r)
    for (int j = 0; j < nr; ++j) {
      const float v = acc[r][j / 16][j % 16];
      c[r * ldc + j] = accumulate ? c[r * ldc + j] + v : v;
    }
}
#pragma GCC pop_options

/* rows [i0, i0 + m) x cols [k0, k0 + kc) of A into panels of MR rows of pairs, each row's pairs together:
 * ap[panel][r][p] = a(k) << 16 | a(k + 1), zero-padded (rows past m, the k + 1 past kc); returns the exponent
 * range of the block. Rows rather than gemm_pack_a's k-major panels: a contiguous row is then its dwords with
 * the halves swapped, a vector copy (the micro-kernel broadcasts from 8 row streams in L1 as fast) */
static GemmExpRange gemm_pack_a_dp(const bf16* a, int64_t s0, int64_t s1, int64_t i0, int64_t m, int64_t k0,
                                   int64_t kc, uint32_t* __restrict ap) {
  const int64_t kp = (kc + 1) / 2;
  GemmExpRange st;
  gemm_v32u lo = (gemm_v32u){} + (unsigned short)255, hi = {};
  for (int64_t p = 0; p < m; p += GEMM_MR) {
    uint32_t* pan = ap + (p / GEMM_MR) * kp * GEMM_MR;
    const int64_t rows = m - p < GEMM_MR ? m - p : GEMM_MR;
    for (int64_t r = 0; r < GEMM_MR; ++r) {
      uint32_t* dst = pan + r * kp;
      if (r >= rows) {
        for (int64_t q = 0; q < kp; ++q) dst[q] = 0;
        continue;
      }
      const uint16_t* src = (const uint16_t*)(const void*)(a + (i0 + p + r) * s0 + k0 * s1);
      int64_t q = 0;
      if (s1 == 1) {
        for (; q + 16 <= kc / 2; q += 16) {
          gemm_v32u x;
          __builtin_memcpy(&x, src + 2 * q, 64);
          gemm_exp_vec(x, lo, hi);
          const gemm_v16u w = (gemm_v16u)x;
          const gemm_v16u sw = (w << 16) | (w >> 16);
          __builtin_memcpy(dst + q, &sw, 64);
        }
      }
      for (; q < kp; ++q) {
        const uint16_t h = src[2 * q * s1];
        const uint16_t l = 2 * q + 1 < kc ? src[(2 * q + 1) * s1] : (uint16_t)0;
        gemm_exp_scalar(h, st);
        gemm_exp_scalar(l, st);
        dst[q] = (uint32_t)h << 16 | l;
      }
    }
  }
  st.add(gemm_exp_reduce(lo, hi));
  return st;
}

/* rows [k0, k0 + kc) x cols [j0, j0 + n) of B into panels of NR columns of pairs: bp[panel][p][j] = b(k, j) << 16
 * | b(k + 1, j), zero-padded; returns the exponent range of the block */
static GemmExpRange gemm_pack_b_dp(const bf16* b, int64_t s0, int64_t s1, int64_t k0, int64_t kc, int64_t j0,
                                   int64_t n, uint32_t* __restrict bp) {
  const int64_t kp = (kc + 1) / 2;
  GemmExpRange st;
  gemm_v32u lo = (gemm_v32u){} + (unsigned short)255, hi = {};
  for (int64_t q = 0; q < n; q += GEMM_NR) {
    uint32_t* dst = bp + (q / GEMM_NR) * kp * GEMM_NR;
    const int64_t cols = n - q < GEMM_NR ? n - q : GEMM_NR;
    for (int64_t p = 0; p < kp; ++p) {
      const int64_t k = k0 + 2 * p;
      const bool two = 2 * p + 1 < kc;
      const uint16_t* s_hi = (const uint16_t*)(const void*)(b + k * s0 + (j0 + q) * s1);
      const uint16_t* s_lo = (const uint16_t*)(const void*)(b + (k + 1) * s0 + (j0 + q) * s1);
      uint32_t* d = dst + p * GEMM_NR;
      if (cols == GEMM_NR && s1 == 1) {
        gemm_v32u h, l = {};
        __builtin_memcpy(&h, s_hi, 64);
        if (two) __builtin_memcpy(&l, s_lo, 64);
        gemm_exp_vec(h, lo, hi);
        gemm_exp_vec(l, lo, hi);
        const gemm_v32u d0 = __builtin_shuffle(l, h, (gemm_v32u){0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                                                 8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46,
                                                                 15, 47});
        const gemm_v32u d1 = __builtin_shuffle(l, h, (gemm_v32u){16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22,
                                                                 54, 23, 55, 24, 56, 25, 57, 26, 58, 27, 59, 28, 60,
                                                                 29, 61, 30, 62, 31, 63});
        __builtin_memcpy(d, &d0, 64);
        __builtin_memcpy(d + 16, &d1, 64);
      } else {
        for (int64_t j = 0; j < GEMM_NR; ++j) {
          const uint16_t hv = j < cols ? s_hi[j * s1] : (uint16_t)0;
          const uint16_t lv = j < cols && two ? s_lo[j * s1] : (uint16_t)0;
          gemm_exp_scalar(hv, st);
          gemm_exp_scalar(lv, st);
          d[j] = (uint32_t)hv << 16 | lv;
        }
      }
    }
  }
  st.add(gemm_exp_reduce(lo, hi));
  return st;
}

/* the bf16 matmul: the blocks, tasks and shared packed B of gemm_f32 below, on pairs and vdpbf16ps; a block
 * pair the guard refuses runs gemm_f32's packing and micro-kernel on that block (same sums, so same bits) */
static int gemm_f32(int64_t M, int64_t N, int64_t K, const bf16* a, int64_t as0, int64_t as1, const bf16* b,
                    int64_t bs0, int64_t bs1, float* c, int64_t ldc, int64_t mc, int64_t kc, int64_t nc,
                    int32_t nthreads) {
  if (gemm_trivial(M, N, K, c, ldc)) return 0;
  if (kc < 1) kc = 1;
  /* blocks in bytes of pairs: B's (kc x nc) block 1 MiB (as gemm_f32's), A's block one 8-row panel of kc = 256
   * (4 KiB; 1 thread, 1024^3: 8, 16, 32 rows: 11.4, 11.8, 13.0 ms: a bigger A block and the B panel it sweeps
   * no longer fit L1 together) */
  const GemmPlan pl = gemm_plan(M, N, K, kc, (int64_t)1 << 19, 2048, nthreads);
  nc = pl.nc;
  mc = pl.mc;
  const int64_t mb = pl.mb, nb = pl.nb, runs = pl.runs;
  const int32_t nt = pl.nt;
  const int64_t kmax = K < kc ? K : kc, kbn = (K + kc - 1) / kc, kpmax = (kmax + 1) / 2;
  /* a shared block: 16 dwords of header (its exponent range), then nc x kpmax dwords of pairs */
  const int64_t bblock = 16 + nc * kpmax;
  uint32_t* ball = runs > 1 && nb * kbn * bblock <= (int64_t)1 << 22
                       ? (uint32_t*)gemm_scratch(1, (size_t)(nb * kbn * bblock)) : 0;
  if (ball) {
    auto pack = [&](int64_t t) -> int {
      const int64_t jb = (t / kbn) * nc, kb = (t % kbn) * kc;
      uint32_t* blk = ball + t * bblock;
      const GemmExpRange st = gemm_pack_b_dp(b, bs0, bs1, kb, K - kb < kc ? K - kb : kc, jb,
                                             N - jb < nc ? N - jb : nc, blk + 16);
      blk[0] = (uint32_t)st.lo;
      blk[1] = (uint32_t)st.hi;
      return 0;
    };
    run_parts(nb * kbn, nt, pack);
  }
  auto task = [&](int64_t t) -> int {
    const int64_t jbi = t / runs, jb = jbi * nc, run = t % runs;
    const int64_t ib0 = mb * run / runs * mc, ib1 = mb * (run + 1) / runs * mc;
    const int64_t n = N - jb < nc ? N - jb : nc;
    const int64_t npad = (n + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
    uint32_t* ap = (uint32_t*)gemm_scratch(0, (size_t)(mc * kpmax));
    uint32_t* bp = ball ? 0 : (uint32_t*)gemm_scratch(1, (size_t)(16 + npad * kpmax)) + 16;
    for (int64_t kb = 0; kb < K; kb += kc) {
      const int64_t k = K - kb < kc ? K - kb : kc, kp = (k + 1) / 2;
      GemmExpRange bst;
      if (ball) {
        const uint32_t* blk = ball + (jbi * kbn + kb / kc) * bblock;
        bst.lo = (int)blk[0];
        bst.hi = (int)blk[1];
        bp = (uint32_t*)blk + 16;
      } else {
        bst = gemm_pack_b_dp(b, bs0, bs1, kb, k, jb, n, bp);
      }
      bool bf = false; /* the fp32 packing of this B block is in bp32 */
      float* bp32 = 0;
      for (int64_t ib = ib0; ib < ib1 && ib < M; ib += mc) {
        const int64_t m = M - ib < mc ? M - ib : mc;
        const GemmExpRange ast = gemm_pack_a_dp(a, as0, as1, ib, m, kb, k, ap);
        if (gemm_dp_exact(ast, bst)) {
          for (int64_t jr = 0; jr < n; jr += GEMM_NR)
            for (int64_t ir = 0; ir < m; ir += GEMM_MR)
              gemm_micro_dp(kp, ap + (ir / GEMM_MR) * kp * GEMM_MR, bp + (jr / GEMM_NR) * kp * GEMM_NR,
                            c + (ib + ir) * ldc + jb + jr, ldc, kb > 0, (int)(m - ir < GEMM_MR ? m - ir : GEMM_MR),
                            (int)(n - jr < GEMM_NR ? n - jr : GEMM_NR));
          continue;
        }
        /* the fp32 path on this block pair */
        if (!bf) {
          bp32 = gemm_scratch(3, (size_t)(npad * kmax));
          gemm_pack_b(b, bs0, bs1, kb, k, jb, n, bp32);
          bf = true;
        }
        float* ap32 = gemm_scratch(2, (size_t)(mc * kmax));
        gemm_pack_a(a, as0, as1, ib, m, kb, k, ap32);
        for (int64_t jr = 0; jr < n; jr += GEMM_NR)
          for (int64_t ir = 0; ir < m; ir += GEMM_MR)
            gemm_micro(k, ap32 + (ir / GEMM_MR) * k * GEMM_MR, GEMM_MR, 1, bp32 + (jr / GEMM_NR) * k * GEMM_NR,
                       c + (ib + ir) * ldc + jb + jr, ldc, kb > 0, (int)(m - ir < GEMM_MR ? m - ir : GEMM_MR),
                       (int)(n - jr < GEMM_NR ? n - jr : GEMM_NR));
      }
    }
    return 0;
  };
  return run_parts(nb * runs, nt, task);
}
#endif /* __AVX512BF16__ */

}  // namespace pypto_rt

#endif /* PYPTO_RT_GEMM */
#endif /* PYPTO_KERNEL_GEMM_H_ */
