// const_value: typed constant values (see const_value.h).
#include "core/const_value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pypto {

double ConstValue::as_double() const noexcept {
  double d;
  std::memcpy(&d, &float_bits, sizeof d);
  return d;
}

ConstValue ConstValue::from_double(double v) noexcept {
  ConstValue c;
  c.kind = Kind::kFloat;
  std::memcpy(&c.float_bits, &v, sizeof v);
  return c;
}

bool ConstValue::operator==(const ConstValue& o) const noexcept {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kNone: return true;
    case Kind::kBool:
    case Kind::kInt: return i == o.i;
    case Kind::kFloat: return float_bits == o.float_bits;
    case Kind::kStr: return s == o.s;
    case Kind::kEnum: return s == o.s && i == o.i;
    case Kind::kTuple:
    case Kind::kList: return items == o.items;
  }
  return false;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  // Python switches to exponent notation outside 1e-4 <= |v| < 1e16; %g switches at 1e-5 / precision.
  std::string s = buf;
  const double a = std::fabs(v);
  if (s.find('e') == std::string::npos && a != 0 && a >= 1e16) {
    std::snprintf(buf, sizeof buf, "%.16e", v);
    s = buf;
  }
  const size_t e = s.find('e');
  if (e != std::string::npos) {  // 1e+20 -> 1e+20, 1.5e-07 -> 1.5e-07 (Python keeps two exponent digits)
    std::string mant = s.substr(0, e), ex = s.substr(e + 1);
    if (mant.find('.') != std::string::npos) {
      while (mant.back() == '0') mant.pop_back();
      if (mant.back() == '.') mant.pop_back();
    }
    const char sign = ex[0];
    std::string digits = ex.substr(1);
    while (digits.size() > 2 && digits[0] == '0') digits.erase(0, 1);
    return mant + "e" + sign + digits;
  }
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

std::string ConstValue::repr() const {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return i ? "True" : "False";
    case Kind::kInt: return std::to_string(i);
    case Kind::kFloat: return float_repr(as_double());
    case Kind::kEnum: return s;
    case Kind::kStr: {
      std::string r = "'";
      for (char c : s) {
        if (c == '\'' || c == '\\') r += '\\';
        r += c;
      }
      return r + "'";
    }
    case Kind::kTuple:
    case Kind::kList: {
      std::string r = kind == Kind::kTuple ? "(" : "[";
      for (size_t k = 0; k < items.size(); ++k) r += (k ? ", " : "") + items[k].repr();
      if (kind == Kind::kTuple && items.size() == 1) r += ",";
      return r + (kind == Kind::kTuple ? ")" : "]");
    }
  }
  return "?";
}

}  // namespace pypto
