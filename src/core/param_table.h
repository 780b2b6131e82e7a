// param_table: a kernel's parameter table — what the binder checks every call against.
//
// Built once per kernel (from Python at decoration, or from a bundle manifest in C++), immutable afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace pypto {

enum class ParamKind : uint8_t { kTensor = 0, kConstexpr = 1, kScalar = 2 };

// kFixed: the argument's size must equal `value`. kStatic: any size, keyed (a new size specializes).
// kDynamic: any size, passed at run time, never keyed. kNamed: like kDynamic, and every dim with the same
// name id (`value`) must agree within one call.
enum class DimKind : uint8_t { kFixed = 0, kStatic = 1, kDynamic = 2, kNamed = 3 };

struct DimAnnotation {
  DimKind kind = DimKind::kStatic;
  int64_t value = 0;
};

struct TensorAnnotation {
  int dtype = kAnyDType;     // kAnyDType: taken from the argument (and keyed)
  bool any_shape = false;    // bare pypto.Tensor: any rank, every dim kStatic
  bool ellipsis = false;     // trailing `...`: any number of extra kStatic dims
  int format = 0;            // TileOpFormat (recorded; part of the kernel, not of the per-call key)
  std::vector<DimAnnotation> dims;

  bool rank_is_fixed() const { return !any_shape && !ellipsis; }
};

struct Param {
  std::string name;
  ParamKind kind = ParamKind::kConstexpr;
  int kind_index = 0;        // index among parameters of the same kind (the ABI order for tensors/scalars)
  bool keyword_only = false;
  TensorAnnotation tensor;         // kTensor
  int scalar_dtype = PYPTO_DT_FP32;  // kScalar
};

// The tensor part of a table compiled for the call path (finalize() builds it): one flat record per tensor
// parameter, so that binder's bind_tensors() checks and keys each tensor in one pass over its dims without chasing
// Param/TensorAnnotation/vector indirections.
struct TensorStep {
  uint32_t dtype_word = 0;   // expected DLDataType as a word (code | bits << 8 | lanes << 16); 0: any dtype (keyed)
  uint32_t dtype_word_alt = 0;  // the second layout that dtype may arrive in (dtype.h dtype_alt_dlpack), else dtype_word
  bool packed_last = false;  // DT_FP4_E2M1: the last dim holds two values per byte (annotated sizes count values)
  int16_t ndim = -1;         // exact rank; -1 when open (bare pypto.Tensor or `...`): annotated..PYPTO_MAX_RANK
  int16_t annotated = 0;     // annotated dims (the least rank); dims beyond them (open rank) are keyed
  int16_t n_static = 0;      // STATIC dims among the annotated ones (one key word each)
  bool key_head = false;     // the key carries a dtype/rank word (dtype or rank open)
  int16_t head_dtype = -1;   // with a fixed dtype: the annotation's dtype code (both layouts key the same)
  // per dim, what a call does with its size: kFixed compare with fixed[d], kStatic key it, kNamed agree with
  // the other dims named named[d], kDynamic nothing. Dims beyond the annotated ones (open rank) are kStatic.
  DimKind op[PYPTO_MAX_RANK];
  int64_t fixed[PYPTO_MAX_RANK];
  int16_t named[PYPTO_MAX_RANK];
};

constexpr int kMaxParams = 64;
constexpr int kMaxKeyWords = 1024;

struct ParamTable {
  std::string kernel;
  std::vector<Param> params;
  std::vector<std::string> dim_names;   // kNamed ids index this
  // derived by finalize()
  std::vector<int> tensor_pos, scalar_pos, constexpr_pos;  // parameter positions by kind
  int max_key_words = 0;
  std::vector<TensorStep> steps;         // by tensor index
  bool has_named_dims = false;
  bool all_dims_keyed = true;            // no DYNAMIC/named dim: a key fixes every tensor's element count

  // Computes the derived fields and validates limits; returns "" or an error message.
  std::string finalize();
  int n_tensors() const { return static_cast<int>(tensor_pos.size()); }
  int n_scalars() const { return static_cast<int>(scalar_pos.size()); }
  int n_constexprs() const { return static_cast<int>(constexpr_pos.size()); }
  const Param& tensor(int i) const { return params[tensor_pos[i]]; }
  // A human-readable annotation, e.g. "pypto.Tensor([DYNAMIC, 64], float32)".
  std::string describe_tensor(int i) const;

 private:
  void build_steps();
};

}  // namespace pypto
