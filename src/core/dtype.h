// dtype: pypto dtype codes (kernel_abi.h) <-> DLPack dtypes, and their names for messages.
#pragma once

#include <cstdint>

#include "pypto/dlpack.h"
#include "pypto/kernel_abi.h"

namespace pypto {

constexpr int kAnyDType = -1;

// DLPack (code, bits, lanes) -> PyptoDType, or -1 when pypto has no such dtype. The packed FP4 pair is
// (kDLFloat4_e2m1fn, 4, 2) as torch exports float4_e2m1fn_x2.
inline int dtype_from_dlpack(DLDataType t) noexcept {
  if (t.lanes != 1) return t.code == kDLFloat4_e2m1fn && t.bits == 4 && t.lanes == 2 ? PYPTO_DT_FP4_E2M1X2 : -1;
  switch (t.code) {
    case kDLFloat:
      return t.bits == 32 ? PYPTO_DT_FP32 : t.bits == 16 ? PYPTO_DT_FP16 : t.bits == 64 ? PYPTO_DT_FP64 : -1;
    case kDLInt:
      return t.bits == 32 ? PYPTO_DT_INT32 : t.bits == 64 ? PYPTO_DT_INT64 : t.bits == 16 ? PYPTO_DT_INT16
           : t.bits == 8 ? PYPTO_DT_INT8 : -1;
    case kDLUInt:
      return t.bits == 8 ? PYPTO_DT_UINT8 : t.bits == 16 ? PYPTO_DT_UINT16 : t.bits == 32 ? PYPTO_DT_UINT32
           : t.bits == 64 ? PYPTO_DT_UINT64 : -1;
    case kDLBfloat:
      return t.bits == 16 ? PYPTO_DT_BF16 : -1;
    case kDLBool:
      return t.bits == 8 ? PYPTO_DT_BOOL : -1;
    case kDLFloat8_e4m3fn:
      return t.bits == 8 ? PYPTO_DT_FP8E4M3 : -1;
    case kDLFloat8_e5m2:
      return t.bits == 8 ? PYPTO_DT_FP8E5M2 : -1;
    case kDLFloat8_e8m0fnu:
      return t.bits == 8 ? PYPTO_DT_FP8E8M0 : -1;
    default:
      return -1;
  }
}

// By PyptoDType code: the DLPack layout of each dtype, the one table for every caller (the binder's annotations,
// the C++ runtime's TensorRef arguments, the manifest's recorded tensors). {0, 0, 0}: named only, no storage layout.
// The dtypes torch lacks (hifloat8, unpacked fp4_e2m1) are stored as uint8: a uint8 tensor is read as the dtype its
// annotation names, so dtype_from_dlpack of their layout gives uint8, never them.
inline constexpr DLDataType kDLPackLayout[PYPTO_DT_COUNT] = {
    {kDLBool, 8, 1},  {kDLInt, 8, 1},   {kDLInt, 16, 1},    {kDLInt, 32, 1},   {kDLInt, 64, 1},   {kDLUInt, 8, 1},
    {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLUInt, 16, 1}, {kDLUInt, 32, 1},
    {kDLUInt, 64, 1}, {0, 0, 0} /* int4 */, {0, 0, 0} /* fp8 */, {kDLFloat8_e4m3fn, 8, 1}, {kDLFloat8_e5m2, 8, 1},
    {kDLFloat8_e8m0fnu, 8, 1}, {kDLUInt, 8, 1} /* fp4_e2m1: packed pairs as bytes */, {kDLFloat4_e2m1fn, 4, 2},
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {kDLUInt, 8, 1} /* hifloat8: bytes */};

inline DLDataType dtype_to_dlpack(int dtype) noexcept {
  return static_cast<unsigned>(dtype) < PYPTO_DT_COUNT ? kDLPackLayout[dtype] : DLDataType{0, 0, 0};
}
// The second DLPack layout a tensor of `dtype` may arrive in ({0, 0, 0}: none): uint8 bytes for the packed FP4 pair
// (as the reference's callers pass them), torch's float4_e2m1fn_x2 for unpacked FP4 E2M1 (the same bytes).
inline DLDataType dtype_alt_dlpack(int dtype) noexcept {
  if (dtype == PYPTO_DT_FP4_E2M1X2) return DLDataType{kDLUInt, 8, 1};
  if (dtype == PYPTO_DT_FP4_E2M1) return DLDataType{kDLFloat4_e2m1fn, 4, 2};
  return DLDataType{0, 0, 0};
}
// whether a tensor of DLPack dtype `t` may be passed where `dtype` (a PyptoDType, or kAnyDType) is annotated
inline bool dtype_accepts(int dtype, DLDataType t) noexcept {
  if (dtype == kAnyDType) return dtype_from_dlpack(t) >= 0;
  const DLDataType a = dtype_to_dlpack(dtype), b = dtype_alt_dlpack(dtype);
  return (a.bits != 0 && a.code == t.code && a.bits == t.bits && a.lanes == t.lanes) ||
         (b.bits != 0 && b.code == t.code && b.bits == t.bits && b.lanes == t.lanes);
}
int dtype_itemsize(int dtype) noexcept;  // bytes per element of the shape (1 for the packed FP4 pair); 0: named only
// "float32", "bfloat16", ... ; "any" for kAnyDType
const char* dtype_name(int dtype) noexcept;
// a message's name for any DLPack dtype: pypto's name when pypto has it, else the DLPack code's name with its bits
// and lanes ("complex64", "int4", "float32 x4")
void dlpack_dtype_describe(DLDataType t, char* buf, int cap) noexcept;

}  // namespace pypto
