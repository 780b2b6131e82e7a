// dtype: names and sizes of pypto dtypes.
#include "core/dtype.h"

#include <cstdio>

namespace pypto {

namespace {
struct DTypeInfo {
  const char* name;
  uint8_t code;
  uint8_t bits;
};
constexpr DTypeInfo kInfo[PYPTO_DT_COUNT] = {
    {"bool", kDLBool, 8},       {"int8", kDLInt, 8},     {"int16", kDLInt, 16},
    {"int32", kDLInt, 32},      {"int64", kDLInt, 64},   {"uint8", kDLUInt, 8},
    {"float16", kDLFloat, 16},  {"bfloat16", kDLBfloat, 16}, {"float32", kDLFloat, 32},
    {"float64", kDLFloat, 64},
};
}  // namespace

DLDataType dtype_to_dlpack(int dtype) noexcept {
  if (dtype < 0 || dtype >= PYPTO_DT_COUNT) return DLDataType{0, 0, 0};
  return DLDataType{kInfo[dtype].code, kInfo[dtype].bits, 1};
}

int dtype_itemsize(int dtype) noexcept {
  return (dtype < 0 || dtype >= PYPTO_DT_COUNT) ? 0 : kInfo[dtype].bits / 8;
}

const char* dtype_name(int dtype) noexcept {
  if (dtype == kAnyDType) return "any";
  return (dtype < 0 || dtype >= PYPTO_DT_COUNT) ? "unknown" : kInfo[dtype].name;
}

void dlpack_dtype_describe(DLDataType t, char* buf, int cap) noexcept {
  int d = dtype_from_dlpack(t);
  if (d >= 0) {
    std::snprintf(buf, cap, "%s", kInfo[d].name);
    return;
  }
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const char* c = t.code < 7 ? codes[t.code] : "dtype";
  if (t.lanes != 1)
    std::snprintf(buf, cap, "%s%u x%u", c, t.bits, t.lanes);
  else
    std::snprintf(buf, cap, "%s%u", c, t.bits);
}

}  // namespace pypto
