/* The subset of the DLPack ABI (https://dmlc.github.io/dlpack) that pypto uses.
 *
 * Declared here rather than vendored so that pypto has no build dependency on a framework. The include guard is
 * DLPack's own, so a translation unit that includes the real <dlpack/dlpack.h> first gets the full header and this
 * one becomes a no-op (the layouts are identical by the DLPack ABI guarantee).
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 } DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLBfloat = 4U,
  kDLBool = 6U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat4_e2m1fn = 17U /* bits 4; torch.float4_e2m1fn_x2 is exported with lanes 2 */
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* in elements; NULL means compact row-major */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */
