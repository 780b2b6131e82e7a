// dtype: names and sizes of pypto dtypes.
#include "core/dtype.h"

#include <cstdio>

namespace pypto {

namespace {
struct DTypeInfo {
  const char* name;
  uint8_t itemsize;  // 0: named only (no storage layout; dtype.h kDLPackLayout has {0, 0, 0})
};
// names are torch's where torch has the type (python/pypto/vocab/dtypes.py _SHORT)
constexpr DTypeInfo kInfo[PYPTO_DT_COUNT] = {
    {"bool", 1},          {"int8", 1},          {"int16", 2},           {"int32", 4},        {"int64", 8},
    {"uint8", 1},         {"float16", 2},       {"bfloat16", 2},        {"float32", 4},      {"float64", 8},
    {"uint16", 2},        {"uint32", 4},        {"uint64", 8},          {"int4", 0},         {"fp8", 0},
    {"float8_e4m3fn", 1}, {"float8_e5m2", 1},   {"float8_e8m0fnu", 1},  {"fp4_e2m1", 1},     {"float4_e2m1fn_x2", 1},
    {"fp4_e1m2", 0},      {"fp4_e1m2_x2", 0},   {"hifloat4", 0},        {"hifloat8", 1},
};
}  // namespace

int dtype_itemsize(int dtype) noexcept {
  return (dtype < 0 || dtype >= PYPTO_DT_COUNT) ? 0 : kInfo[dtype].itemsize;
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
  static const char* codes[] = {"int",      "uint",       "float",         "opaque",       "bfloat",
                                "complex",  "bool",       "float8_e3m4",   "float8_e4m3",  "float8_e4m3b11fnuz",
                                "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                                "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"};
  const char* c = t.code < sizeof codes / sizeof codes[0] ? codes[t.code] : "dtype";
  if (t.code >= 7 && t.lanes == 1)  // the narrow float codes name their width
    std::snprintf(buf, cap, "%s", c);
  else if (t.lanes != 1)
    std::snprintf(buf, cap, "%s%u x%u", c, t.bits, t.lanes);
  else
    std::snprintf(buf, cap, "%s%u", c, t.bits);
}

}  // namespace pypto
