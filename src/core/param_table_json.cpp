// param_table_json: decoding a parameter table and constant values from their JSON form.
#include "core/param_table_json.h"

#include <cstdlib>

namespace pypto {

using json = nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& m) { throw DecodeError{m}; }

template <size_t N>
int index_of(const char* const (&names)[N], const std::string& name) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<int>(i);
  return -1;
}

DimAnnotation decode_dim(const json& jd, const std::vector<std::string>& dim_names, const std::string& pw) {
  const std::string dk = jd.at("kind").get<std::string>();
  DimAnnotation d;
  const int k = index_of(kDimKindNames, dk);
  if (k < 0) fail(pw + ": unknown dimension kind '" + dk + "'");
  d.kind = static_cast<DimKind>(k);
  if (d.kind == DimKind::kFixed) d.value = decode_int(jd.at("value"), pw + ": fixed dimension", 0);
  if (d.kind == DimKind::kNamed) {
    const std::string name = jd.at("name").get<std::string>();
    size_t idx = 0;
    while (idx < dim_names.size() && dim_names[idx] != name) ++idx;
    if (idx == dim_names.size()) fail(pw + ": named dimension '" + name + "' is not in dim_names");
    d.value = static_cast<int64_t>(idx);
  }
  return d;
}

}  // namespace

ParamTable decode_param_table(const json& kernel, std::vector<std::optional<ConstValue>>* defaults) {
  ParamTable t;
  t.kernel = kernel.at("name").get<std::string>();
  const std::string where = "kernel '" + t.kernel + "'";
  for (const json& n : kernel.at("dim_names")) t.dim_names.push_back(n.get<std::string>());
  for (const json& jp : kernel.at("params")) {
    Param p;
    p.name = jp.at("name").get<std::string>();
    const std::string pw = where + ": parameter '" + p.name + "'";
    const std::string kind = jp.at("kind").get<std::string>();
    const int k = index_of(kParamKindNames, kind);
    if (k < 0) fail(pw + ": unknown parameter kind '" + kind + "'");
    p.kind = static_cast<ParamKind>(k);
    p.keyword_only = jp.at("keyword_only").get<bool>();
    if (p.kind == ParamKind::kTensor) {
      p.tensor.dtype = decode_dtype(jp.at("dtype"), pw);
      p.tensor.any_shape = jp.at("any_shape").get<bool>();
      p.tensor.ellipsis = jp.at("ellipsis").get<bool>();
      p.tensor.format = static_cast<int>(decode_int(jp.at("format"), pw + ": format", 0, 255));
      for (const json& jd : jp.at("dims")) p.tensor.dims.push_back(decode_dim(jd, t.dim_names, pw));
    } else if (p.kind == ParamKind::kScalar) {
      p.scalar_dtype = decode_dtype(jp.at("dtype"), pw);
      if (p.scalar_dtype == kAnyDType) fail(pw + ": a scalar needs a dtype");
    }
    if (defaults != nullptr)
      defaults->push_back(jp.contains("default") ? std::optional<ConstValue>(decode_value(jp.at("default"),
                                                                                          pw + " (default)"))
                                                 : std::nullopt);
    t.params.push_back(std::move(p));
  }
  const std::string err = t.finalize();
  if (!err.empty()) fail(err);
  return t;
}

int64_t decode_int(const json& j, const std::string& what, int64_t lo, int64_t hi) {
  if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    fail(what + ": expected an integer, got " + j.dump());
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) fail(what + ": " + std::to_string(v) + " is out of range");
  return v;
}

uint64_t decode_word(const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    fail(what + ": expected an unsigned integer, got " + j.dump());
  return j.get<uint64_t>();
}

int decode_dtype(const json& j, const std::string& where) {
  if (j.is_null()) return kAnyDType;
  const std::string name = j.get<std::string>();
  for (int d = 0; d < PYPTO_DT_COUNT; ++d)
    if (name == dtype_name(d)) return d;
  fail(where + ": unknown dtype '" + name + "'");
}

ConstValue decode_value(const json& j, const std::string& where) {
  ConstValue v;
  const std::string type = j.at("type").get<std::string>();
  using K = ConstValue::Kind;
  if (type == "none") {
    v.kind = K::kNone;
  } else if (type == "bool") {
    v.kind = K::kBool;
    v.i = j.at("value").get<bool>() ? 1 : 0;
  } else if (type == "int") {
    v.kind = K::kInt;
    v.i = decode_int(j.at("value"), where + ": int constant");
  } else if (type == "float") {
    v.kind = K::kFloat;
    const std::string bits = j.at("bits").get<std::string>();
    char* end = nullptr;
    v.float_bits = std::strtoull(bits.c_str(), &end, 16);
    if (bits.size() < 3 || end == nullptr || *end != '\0') fail(where + ": malformed float bits '" + bits + "'");
  } else if (type == "str") {
    v.kind = K::kStr;
    v.s = j.at("value").get<std::string>();
  } else if (type == "enum") {
    v.kind = K::kEnum;
    v.s = j.at("name").get<std::string>();
    v.i = decode_int(j.at("value"), where + ": enum constant");
  } else if (type == "tuple" || type == "list") {
    v.kind = type == "tuple" ? K::kTuple : K::kList;
    for (const json& item : j.at("items")) v.items.push_back(decode_value(item, where));
  } else {
    fail(where + ": unknown constant type '" + type + "'");
  }
  return v;
}

}  // namespace pypto
