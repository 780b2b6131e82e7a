// const_value: a compile-time constant by value, exactly and type-tagged — the form a bundle records
// constants in (the Python path keys them by process-local interned ids, which mean nothing in another process).
//
// Same equality as the Python interner (src/python/const_interner.cpp): 1, True, 1.0 and "1" differ; floats
// compare by bit pattern (-0.0 != 0.0, a NaN equals itself); tuples compare item by item. Enum members (and pypto
// dtypes) are recorded by class, member name and integer value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pypto {

struct ConstValue {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kTuple, kList, kEnum };
  Kind kind = Kind::kNone;
  int64_t i = 0;               // kBool (0/1), kInt, kEnum (the member's value)
  uint64_t float_bits = 0;     // kFloat: the IEEE-754 double's bits
  std::string s;               // kStr; kEnum: "Class.NAME"
  std::vector<ConstValue> items;  // kTuple, kList

  double as_double() const noexcept;
  static ConstValue from_double(double v) noexcept;
  bool operator==(const ConstValue& o) const noexcept;
  bool operator!=(const ConstValue& o) const noexcept { return !(*this == o); }
  // Python-style repr: 2.0, -0.0, nan, 'relu', (1, 2), None, True, TileOpFormat.TILEOP_ND
  std::string repr() const;
};

// Python's repr of a float (shortest round-trip digits, always with a '.' or an exponent).
std::string float_repr(double v);

}  // namespace pypto
