/* pypto matmul with float32 accumulation: cache blocks from the cube tile shapes, packing, a register-blocked
 * micro-kernel. Included by kernel_rt.h when the kernel defines PYPTO_RT_GEMM (only kernels with a matmul).
 *
 * C[M x N] (float, row stride ldc) = A[M x K] * B[K x N] with A(i, k) = a[i*as0 + k*as1], B(k, j) = b[k*bs0 + j*bs1]
 * for any strides (transposed views need no copy) and any input type Cvt<float> converts (fp32, fp16, bf16).
 * Order of the sums, which fixes the bits: for each cache block of kc along K, in order, a fresh float
 * accumulator sums a*b over k in order with fused multiply-adds (matmul is a multiply-accumulate: the one op
 * that is contracted; -ffp-contract=off keeps every other op rounded on its own), then adds into C. The split
 * of M and N into tasks and threads does not change any element's sum, so results are identical for every
 * thread count.
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
  static thread_local float* buf[2];
  static thread_local size_t cap[2];
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

template <class TA, class TB>
static int gemm_f32(int64_t M, int64_t N, int64_t K, const TA* a, int64_t as0, int64_t as1, const TB* b,
                    int64_t bs0, int64_t bs1, float* c, int64_t ldc, int64_t mc, int64_t kc, int64_t nc,
                    int32_t nthreads) {
  if (M <= 0 || N <= 0) return 0;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = 0.0f;
    return 0;
  }
  /* Cache blocks. kc comes from the cube tiles and fixes the order of the sums (so the bits). mc and nc change
   * no sum: the tiles' m and n are hints, and the blocks are sized for the caches instead: a (kc x nc) block of
   * packed B of up to 1 MiB stays in L2 and serves every row, an A block of mc x kc (~32 KiB) stays in L1 while
   * the micro-kernel sweeps B's panels (measured, 1 thread, 1024^3: 13.9 -> 13.0 ms against the 128 x 256
   * blocks of the bench's tiles; 512^3 ~1.5% faster). The mc and nc passed in are overwritten. */
  if (kc < 1) kc = 1;
  nc = ((int64_t)1 << 18) / kc / GEMM_NR * GEMM_NR;
  if (nc < GEMM_NR) nc = GEMM_NR;
  if (nc > (N + GEMM_NR - 1) / GEMM_NR * GEMM_NR) nc = (N + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
  mc = 8192 / kc / GEMM_MR * GEMM_MR;
  if (mc < GEMM_MR) mc = GEMM_MR;
  const int64_t mb = (M + mc - 1) / mc, nb = (N + nc - 1) / nc;
  const double work = (double)M * (double)N * (double)K;
  const int32_t nt = work < 64.0 * 65536.0 ? 1 : nthreads;
  /* a task is one column block and a run of row blocks: B's (kc x nc) block is packed once per K block for all
   * its row blocks; enough runs per column block to give every thread ~4 tasks */
  int64_t runs = nt <= 1 ? 1 : ((int64_t)nt * 4 + nb - 1) / nb;
  if (runs > mb) runs = mb;
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

}  // namespace pypto_rt

#endif /* PYPTO_RT_GEMM */
#endif /* PYPTO_KERNEL_GEMM_H_ */
