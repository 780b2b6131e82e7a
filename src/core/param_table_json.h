// param_table_json: the one decoder of a kernel's parameter table, from its one encoding — the JSON object a bundle
// manifest holds per kernel ({"name", "dim_names", "params": [...]}; docs/embedding.md). The Python front end
// encodes the same object for pypto._core.JitFunction (python/pypto/frontend/jit.py: JITKernel.param_table), the
// export writes it into the manifest, and the C++ runtime reads it back: all three go through decode_param_table.
//
// The names the encoding uses for parameter kinds, dimension kinds and dtypes are defined here and in core/dtype
// (kParamKindNames, kDimKindNames, dtype_name); pypto._core exposes them to Python.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/const_value.h"
#include "core/param_table.h"

namespace pypto {

// Indexed by ParamKind / DimKind.
inline constexpr const char* kParamKindNames[] = {"tensor", "constant", "scalar"};
inline constexpr const char* kDimKindNames[] = {"FIXED", "STATIC", "DYNAMIC", "NAMED"};
static_assert(int(ParamKind::kTensor) == 0 && int(ParamKind::kConstexpr) == 1 && int(ParamKind::kScalar) == 2);
static_assert(int(DimKind::kFixed) == 0 && int(DimKind::kStatic) == 1 && int(DimKind::kDynamic) == 2 &&
              int(DimKind::kNamed) == 3);

// What a malformed table (or value) throws; the message names the kernel and the parameter.
struct DecodeError {
  std::string message;
};

// Decodes `kernel` into a finalized ParamTable. When `defaults` is given it receives, per parameter, the decoded
// "default" value (std::nullopt where the parameter has none). Throws DecodeError (and nlohmann::json::exception
// for a missing or mistyped field).
ParamTable decode_param_table(const nlohmann::json& kernel, std::vector<std::optional<ConstValue>>* defaults = nullptr);

// A typed constant value ({"type": "int", "value": 2}, {"type": "float", "bits": "0x..."}, ...).
ConstValue decode_value(const nlohmann::json& j, const std::string& where);
// A strict integer in [lo, hi] (nlohmann's get<int64_t>() would truncate a float and wrap a large unsigned value).
int64_t decode_int(const nlohmann::json& j, const std::string& what, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
// A non-negative integer word.
uint64_t decode_word(const nlohmann::json& j, const std::string& what);
// A dtype name ("float32"), or kAnyDType for null.
int decode_dtype(const nlohmann::json& j, const std::string& where);

}  // namespace pypto
