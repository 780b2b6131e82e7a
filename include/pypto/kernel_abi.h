/* pypto kernel ABI: the contract between generated kernel code and the runtime.
 *
 * Every specialization is compiled into its own shared library that exports
 *   uint32_t pypto_abi_version(void);           returns PYPTO_KERNEL_ABI_VERSION
 *   int      pypto_entry(const PyptoTensorArg*, const PyptoScalarArg*, PyptoLaunchContext*);
 * and, when built by pypto's pipeline,
 *   const char* pypto_spec_key(void);         the specialization key it was compiled for (JSON text:
 *                                              python/pypto/vocab/speckey.py)
 * The runtime refuses a library whose pypto_abi_version() differs from its own, and one whose pypto_spec_key()
 * is not the key its manifest entry (or the core's miss) loads it for.
 *
 * Argument order: `tensors` holds one entry per tensor parameter, in parameter order;
 * `scalars` one entry per runtime-scalar parameter (pypto.Scalar[...]), in parameter order.
 * Compile-time constants are baked into the library and never passed.
 * Tensors are dense row-major (C-contiguous); `data` already includes any byte offset.
 * Plain C so that any compiler and any host language can use it. Bump the version on any change.
 */
#ifndef PYPTO_KERNEL_ABI_H_
#define PYPTO_KERNEL_ABI_H_

#include <stdint.h>

#define PYPTO_KERNEL_ABI_VERSION 3u /* 2: dtype codes 10-23; 3: HF8 and FP4_E2M1 arguments */
#define PYPTO_MAX_RANK 8

#ifdef __cplusplus
extern "C" {
#endif

/* dtype codes shared by runtime, manifest and codegen (python/pypto/vocab/dtypes.py mirrors them). Codes below
 * PYPTO_DT_COUNT that are marked "named only" have no storage layout here: no tensor argument carries them.
 * PYPTO_DT_FP4_E2M1X2 packs two FP4 E2M1 values in one byte (element 2i in the low nibble, 2i+1 in the high
 * nibble, as torch.float4_e2m1fn_x2); its shape counts bytes.
 * PYPTO_DT_HF8 (HiFloat8) is one byte per element, the encoding of include/pypto/kernel_hifloat8.h; torch has no
 * such dtype, so its tensors arrive as uint8 (DLPack kDLUInt 8): the argument's annotation says how to read them.
 * PYPTO_DT_FP4_E2M1 is stored as DT_FP4_E2M1X2 (two values per byte, element 2i in the low nibble) and arrives as
 * uint8 too, but its shape counts values: `shape` holds the bytes the caller passed, and the kernel's last dim is
 * twice the last entry of `shape` (a kernel reads it as shape[ndim - 1] * 2). */
typedef enum PyptoDType {
  PYPTO_DT_BOOL = 0,
  PYPTO_DT_INT8 = 1,
  PYPTO_DT_INT16 = 2,
  PYPTO_DT_INT32 = 3,
  PYPTO_DT_INT64 = 4,
  PYPTO_DT_UINT8 = 5,
  PYPTO_DT_FP16 = 6,
  PYPTO_DT_BF16 = 7,
  PYPTO_DT_FP32 = 8,
  PYPTO_DT_FP64 = 9,
  PYPTO_DT_UINT16 = 10,
  PYPTO_DT_UINT32 = 11,
  PYPTO_DT_UINT64 = 12,
  PYPTO_DT_INT4 = 13, /* named only */
  PYPTO_DT_FP8 = 14,  /* named only */
  PYPTO_DT_FP8E4M3 = 15, /* float8_e4m3fn: no infinities, NaN = S.1111.111, max 448 */
  PYPTO_DT_FP8E5M2 = 16, /* float8_e5m2: IEEE-like, max 57344 */
  PYPTO_DT_FP8E8M0 = 17, /* float8_e8m0fnu: 2^(e-127), no sign, no zero, NaN = 0xff */
  PYPTO_DT_FP4_E2M1 = 18, /* two per byte, uint8 storage; the kernel's last dim is twice the bytes */
  PYPTO_DT_FP4_E2M1X2 = 19,
  PYPTO_DT_FP4_E1M2 = 20,   /* named only */
  PYPTO_DT_FP4_E1M2X2 = 21, /* named only */
  PYPTO_DT_HF4 = 22,        /* named only */
  PYPTO_DT_HF8 = 23,        /* HiFloat8, uint8 storage (kernel_hifloat8.h) */
  PYPTO_DT_COUNT = 24
} PyptoDType;

typedef struct PyptoTensorArg {
  void* data;            /* first element */
  const int64_t* shape;  /* `ndim` sizes, valid for the duration of the call */
  int64_t ndim;
} PyptoTensorArg;

typedef union PyptoScalarArg {
  int64_t i; /* integer and bool scalars */
  double f;  /* floating scalars */
} PyptoScalarArg;

typedef struct PyptoLaunchContext {
  int32_t num_threads;    /* runtime_options.sim_threads (>= 1) */
  int32_t debug_mode;     /* debug_options.runtime_debug_mode */
  char* error;            /* kernel writes a NUL-terminated message here when it returns non-zero */
  int64_t error_capacity; /* bytes available at `error` */
} PyptoLaunchContext;

typedef int (*PyptoKernelEntry)(const PyptoTensorArg* tensors, const PyptoScalarArg* scalars,
                                PyptoLaunchContext* ctx);
typedef uint32_t (*PyptoAbiVersionFn)(void);

#define PYPTO_ENTRY_SYMBOL "pypto_entry"
#define PYPTO_ABI_VERSION_SYMBOL "pypto_abi_version"
#define PYPTO_SPEC_KEY_SYMBOL "pypto_spec_key"
typedef const char* (*PyptoSpecKeyFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PYPTO_KERNEL_ABI_H_ */
