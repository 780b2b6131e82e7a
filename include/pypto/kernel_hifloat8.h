/* HiFloat8 (PYPTO_DT_HF8) storage type for generated kernels: its byte encoding, decoding to float and rounding
 * from float. Included by kernel_rt.h after its storage types (it uses f32_bits / bits_f32 and Cvt).
 *
 * The byte is S.rest7: a sign bit, then a prefix-coded "dot" field that says how many exponent bits follow, the
 * exponent in sign-magnitude with an implicit leading 1 in its magnitude, then the mantissa (hidden bit 1):
 *   rest7          dot   exponent bits -> E                mantissa bits   value
 *   0000.mmm       0000  (denormal)                        3 (m = 1..7)    2^(m - 23)
 *   0001.mmm       0001  none -> E = 0                     3               1.mmm
 *   001.s.mmm      001   1 (sign only) -> E = +-1          3               1.mmm * 2^E
 *   01.s.e.mmm     01    2 -> |E| = 2 + e (2..3)           3
 *   10.s.ee.mm     10    3 -> |E| = 4 + ee (4..7)          2
 *   11.s.eee.m     11    4 -> |E| = 8 + eee (8..15)        1
 * Specials: 0x00 is zero (there is no -0), 0x80 NaN, 0x6F / 0xEF +-inf (the pattern of 1.1 * 2^15). The largest
 * finite value is 2^15 = 32768, the smallest 2^-22.
 * from_float rounds to the nearest value of that set, ties away from zero (the reference's CAST_ROUND, the only
 * mode it converts to HF8 with); a magnitude that rounds past 32768 (>= 40960, and inf) gives +-inf; NaN gives
 * NaN; a result of zero is 0x00 whatever the sign. */
#ifndef PYPTO_KERNEL_HIFLOAT8_H_
#define PYPTO_KERNEL_HIFLOAT8_H_

namespace pypto_rt {

struct hifloat8 {
  uint8_t bits;
  operator float() const {
    const uint32_t sign = (uint32_t)(bits & 0x80u) << 24, r = bits & 0x7fu;
    if (r == 0u) return bits_f32(sign ? 0x7fc00000u : 0u);
    if (r == 0x6fu) return bits_f32(sign | 0x7f800000u);
    if (r < 0x08u) return bits_f32(sign | ((r + 104u) << 23)); /* 2^(r - 23) */
    int32_t e;
    uint32_t m, mb; /* mantissa field and its width */
    if (r < 0x10u) e = 0, m = r & 7u, mb = 3u;
    else if (r < 0x20u) e = (r & 0x08u) ? -1 : 1, m = r & 7u, mb = 3u;
    else if (r < 0x40u) e = 2 + (int32_t)((r >> 3) & 1u), m = r & 7u, mb = 3u;
    else if (r < 0x60u) e = 4 + (int32_t)((r >> 2) & 3u), m = r & 3u, mb = 2u;
    else e = 8 + (int32_t)((r >> 1) & 7u), m = r & 1u, mb = 1u;
    if (r >= 0x20u && (r & 0x10u)) e = -e;
    return bits_f32(sign | ((uint32_t)(e + 127) << 23) | (m << (23u - mb)));
  }
  /* the byte of 1.m * 2^e for e in [-15, 15] (m a field of the width that e's dot field leaves) */
  static uint8_t normal_code(int32_t e, uint32_t m) {
    const uint32_t a = (uint32_t)(e < 0 ? -e : e), neg = e < 0 ? 1u : 0u;
    if (a == 0u) return (uint8_t)(0x08u | m);
    if (a == 1u) return (uint8_t)(0x10u | neg << 3 | m);
    if (a <= 3u) return (uint8_t)(0x20u | neg << 4 | (a - 2u) << 3 | m);
    if (a <= 7u) return (uint8_t)(0x40u | neg << 4 | (a - 4u) << 2 | m);
    return (uint8_t)(0x60u | neg << 4 | (a - 8u) << 1 | m);
  }
  static hifloat8 from_float(float f) {
    const uint32_t x = f32_bits(f), ax = x & 0x7fffffffu, sign = (x >> 24) & 0x80u;
    hifloat8 h;
    if (ax > 0x7f800000u) { h.bits = 0x80u; return h; }                      /* NaN */
    if (ax >= 0x47200000u) { h.bits = (uint8_t)(sign | 0x6fu); return h; }  /* >= 40960: inf */
    const int32_t e = (int32_t)(ax >> 23) - 127;
    uint32_t r;
    if (e < -15) { /* powers of two 2^-22 .. 2^-16 below the smallest normal 2^-15: nearest, ties up */
      const int32_t k = e == -23 ? -22 : e + (int32_t)((ax >> 22) & 1u);
      r = e < -23 ? 0u : k == -15 ? normal_code(-15, 0u) : (uint32_t)(k + 23);
    } else {
      const int32_t a = e < 0 ? -e : e;
      const uint32_t mb = a <= 3 ? 3u : a <= 7 ? 2u : 1u, sh = 23u - mb;
      const uint32_t q = (ax + (1u << (sh - 1u))) >> sh; /* biased exponent and mantissa, rounded half up */
      r = normal_code((int32_t)(q >> mb) - 127, q & ((1u << mb) - 1u));
    }
    h.bits = (uint8_t)(r ? (sign | r) : 0u);
    return h;
  }
};
template <>
struct Cvt<hifloat8> {
  template <class F>
  static hifloat8 from(F x) { return hifloat8::from_float(static_cast<float>(x)); }
  static hifloat8 from(hifloat8 v) { return v; }
};

}  // namespace pypto_rt

#endif /* PYPTO_KERNEL_HIFLOAT8_H_ */
