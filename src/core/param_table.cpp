// param_table: derived indices and descriptions.
#include "core/param_table.h"

namespace pypto {

std::string ParamTable::finalize() {
  tensor_pos.clear();
  scalar_pos.clear();
  constexpr_pos.clear();
  if (params.size() > static_cast<size_t>(kMaxParams))
    return "kernel '" + kernel + "': at most " + std::to_string(kMaxParams) + " parameters are supported, got " +
           std::to_string(params.size());
  int words = 2;  // guard state + spare
  for (size_t i = 0; i < params.size(); ++i) {
    Param& p = params[i];
    switch (p.kind) {
      case ParamKind::kTensor:
        p.kind_index = static_cast<int>(tensor_pos.size());
        tensor_pos.push_back(static_cast<int>(i));
        words += 1 + (p.tensor.rank_is_fixed() ? static_cast<int>(p.tensor.dims.size()) : PYPTO_MAX_RANK);
        if (p.tensor.dims.size() > PYPTO_MAX_RANK)
          return "kernel '" + kernel + "': parameter '" + p.name + "': at most " + std::to_string(PYPTO_MAX_RANK) +
                 " dimensions are supported";
        break;
      case ParamKind::kScalar:
        p.kind_index = static_cast<int>(scalar_pos.size());
        scalar_pos.push_back(static_cast<int>(i));
        break;
      case ParamKind::kConstexpr:
        p.kind_index = static_cast<int>(constexpr_pos.size());
        constexpr_pos.push_back(static_cast<int>(i));
        words += 1;
        break;
    }
  }
  max_key_words = words;
  build_steps();
  if (words > kMaxKeyWords) return "kernel '" + kernel + "': too many parameters for one specialization key";
  return "";
}

void ParamTable::build_steps() {
  steps.clear();
  has_named_dims = false;
  all_dims_keyed = true;
  for (int i = 0; i < n_tensors(); ++i) {
    const TensorAnnotation& s = tensor(i).tensor;
    TensorStep st;
    if (s.dtype != kAnyDType) {
      const DLDataType dl = dtype_to_dlpack(s.dtype);
      const DLDataType alt = dtype_alt_dlpack(s.dtype);
      st.dtype_word = uint32_t(dl.code) | uint32_t(dl.bits) << 8 | uint32_t(dl.lanes) << 16;
      st.dtype_word_alt = alt.bits ? uint32_t(alt.code) | uint32_t(alt.bits) << 8 | uint32_t(alt.lanes) << 16
                                   : st.dtype_word;
      st.head_dtype = static_cast<int16_t>(s.dtype);
      st.packed_last = s.dtype == PYPTO_DT_FP4_E2M1;
    }
    const int annotated = s.any_shape ? 0 : static_cast<int>(s.dims.size());
    st.ndim = s.rank_is_fixed() ? static_cast<int16_t>(annotated) : int16_t(-1);
    st.annotated = static_cast<int16_t>(annotated);
    st.key_head = s.dtype == kAnyDType || !s.rank_is_fixed();
    for (int d = 0; d < PYPTO_MAX_RANK; ++d) {
      st.op[d] = DimKind::kStatic;  // open-rank dims beyond the annotated ones are keyed
      st.fixed[d] = -1;
      st.named[d] = -1;
    }
    for (int d = 0; d < annotated; ++d) {
      const DimAnnotation& ds = s.dims[d];
      st.op[d] = ds.kind;
      switch (ds.kind) {
        case DimKind::kFixed: st.fixed[d] = ds.value; break;
        case DimKind::kStatic: st.n_static++; break;
        case DimKind::kNamed: st.named[d] = static_cast<int16_t>(ds.value); has_named_dims = true; [[fallthrough]];
        case DimKind::kDynamic: all_dims_keyed = false; break;
      }
    }
    steps.push_back(st);
  }
}

std::string ParamTable::describe_tensor(int i) const {
  const TensorAnnotation& t = tensor(i).tensor;
  if (t.any_shape) return std::string("pypto.Tensor (any shape, ") + dtype_name(t.dtype) + ")";
  std::string s = "pypto.Tensor([";
  for (size_t d = 0; d < t.dims.size(); ++d) {
    if (d) s += ", ";
    const DimAnnotation& ds = t.dims[d];
    switch (ds.kind) {
      case DimKind::kFixed: s += std::to_string(ds.value); break;
      case DimKind::kStatic: s += "STATIC"; break;
      case DimKind::kDynamic: s += "DYNAMIC"; break;
      case DimKind::kNamed: s += "dynamic('" + dim_names[ds.value] + "')"; break;
    }
  }
  if (t.ellipsis) s += t.dims.empty() ? "..." : ", ...";
  s += "], ";
  s += dtype_name(t.dtype);
  s += ")";
  return s;
}

}  // namespace pypto
