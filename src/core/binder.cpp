// binder: argument checks and key packing (see binder.h).
#include "core/binder.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace pypto {

namespace {

inline bool rank_ok(const TensorAnnotation& s, int ndim) noexcept {
  if (s.any_shape) return ndim <= PYPTO_MAX_RANK;
  const int n = static_cast<int>(s.dims.size());
  return s.ellipsis ? (ndim >= n && ndim <= PYPTO_MAX_RANK) : ndim == n;
}

// the size a kernel sees for dim d: a DT_FP4_E2M1 tensor's last dim holds two values per byte
inline int64_t logical_size(const TensorStep& s, int d, int nd, int64_t v) noexcept {
  if (!(s.packed_last && d == nd - 1)) return v;
  return v > INT64_MAX / 2 ? -1 : v * 2;  // a hostile producer's size: -1 matches no annotation (sizes are >= 0)
}

// kCount: also sum the element counts (for tables with DYNAMIC/named dims, whose keys do not fix them): one multiply
// per dim inside the walk the checks make anyway, instead of a second pass over the shapes.
template <bool kCount>
[[gnu::always_inline]] inline int bind_impl(const ParamTable& table, const DLTensor* tensors, uint64_t* key,
                                            int64_t* elements) noexcept {
  int64_t named[kMaxParams];
  int64_t total = 0;
  if (table.has_named_dims)
    for (size_t i = 0; i < table.dim_names.size() && i < size_t(kMaxParams); ++i) named[i] = -1;
  const TensorStep* steps = table.steps.data();
  const int nt = static_cast<int>(table.steps.size());
  int n = 0;
  for (int i = 0; i < nt; ++i) {
    const TensorStep& s = steps[i];
    const DLTensor& t = tensors[i];
    if (t.device.device_type != kDLCPU) return -1;
    const int nd = t.ndim;
    if (s.ndim >= 0 ? nd != s.ndim : (nd < s.annotated || nd > PYPTO_MAX_RANK)) return -1;
    if (s.dtype_word != 0) {
      uint32_t w;
      std::memcpy(&w, &t.dtype, sizeof w);
      if (w != s.dtype_word && w != s.dtype_word_alt) return -1;
    }
    if (s.key_head) {
      // a fixed dtype was matched above: its code is known (an open rank under a STATIC/DYNAMIC annotation keys
      // only the rank, at no decoding cost)
      int dt = s.head_dtype;
      if (dt < 0 && (dt = dtype_from_dlpack(t.dtype)) < 0) return -1;
      key[n++] = static_cast<uint64_t>(dt) | (static_cast<uint64_t>(nd) << 8);
    }
    // One pass from the last dim down: contiguity (needs the suffix product), fixed sizes, named dims, and the key
    // words (STATIC dims, then open-rank dims, in ascending dim order: written from the end of this tensor's span).
    const int64_t* shape = t.shape;
    const int64_t* strides = t.strides;  // NULL: compact
    const int span = s.n_static + (nd - s.annotated);
    int pos = n + span;
    int64_t expected = 1, count = 1;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t v = shape[d];
      if constexpr (kCount) count *= v;
      if (strides != nullptr) {
        if (v != 1 && strides[d] != expected && !has_no_elements(t)) return -1;
        expected *= v;
      }
      switch (s.op[d]) {
        case DimKind::kStatic:
          key[--pos] = static_cast<uint64_t>(v);
          break;
        case DimKind::kFixed:
          if (logical_size(s, d, nd, v) != s.fixed[d]) return -1;
          break;
        case DimKind::kNamed: {
          const int64_t lv = logical_size(s, d, nd, v);
          int64_t& seen = named[s.named[d]];
          if (seen < 0) seen = lv;
          else if (seen != lv) return -1;
          break;
        }
        case DimKind::kDynamic:
          break;
      }
    }
    n += span;
    if constexpr (kCount) total += count;
  }
  if constexpr (kCount) *elements = total;
  return n;
}

}  // namespace

int bind_tensors(const ParamTable& table, const DLTensor* tensors, uint64_t* key) noexcept {
  return bind_impl<false>(table, tensors, key, nullptr);
}

int bind_tensors_counting(const ParamTable& table, const DLTensor* tensors, uint64_t* key,
                          int64_t* elements) noexcept {
  return bind_impl<true>(table, tensors, key, elements);
}

BindError tensor_error(const ParamTable& table, const DLTensor* tensors) {
  std::vector<int64_t> named(table.dim_names.size(), -1);
  std::vector<std::string> named_where(table.dim_names.size());
  char buf[64];
  for (int i = 0; i < table.n_tensors(); ++i) {
    const Param& p = table.tensor(i);
    const TensorAnnotation& s = p.tensor;
    const DLTensor& t = tensors[i];
    const std::string head = "kernel '" + table.kernel + "': parameter '" + p.name + "': ";
    auto shape_str = [&]() {
      std::string r = "[";
      for (int d = 0; d < t.ndim; ++d) r += (d ? ", " : "") + std::to_string(t.shape[d]);
      return r + "]";
    };
    if (t.device.device_type != kDLCPU) {
      const char* dev = t.device.device_type == kDLCUDA ? "cuda" : "a non-CPU device";
      return {ErrorKind::kValue, head + "expected a CPU tensor (run_mode SIM computes on the CPU), got a tensor on " +
                                     dev + " (device type " + std::to_string(int(t.device.device_type)) + ")"};
    }
    if (!dtype_accepts(s.dtype, t.dtype)) {
      dlpack_dtype_describe(t.dtype, buf, sizeof buf);
      std::string expected = s.dtype == kAnyDType ? std::string("a dtype pypto supports") : dtype_name(s.dtype);
      const DLDataType alt = dtype_alt_dlpack(s.dtype), lay = dtype_to_dlpack(s.dtype);
      if (s.dtype != kAnyDType && lay.code == kDLUInt && dtype_from_dlpack(lay) != s.dtype)
        expected += " (stored as uint8)";
      else if (alt.bits != 0)
        expected += std::string(" (or ") + (alt.code == kDLUInt ? "uint8" : "float4_e2m1fn_x2") + " bytes)";
      return {ErrorKind::kType, head + "expected dtype " + expected + ", got " + buf +
                                    " (the tensor does not match the dtype of its annotation)"};
    }
    if (!rank_ok(s, t.ndim)) {
      std::string expected = s.any_shape ? "at most " + std::to_string(PYPTO_MAX_RANK)
                             : s.ellipsis ? "at least " + std::to_string(s.dims.size())
                                          : std::to_string(s.dims.size());
      return {ErrorKind::kValue, head + "expected " + expected + " dimensions (" + table.describe_tensor(i) +
                                     "), got " + std::to_string(t.ndim) + " (shape " + shape_str() +
                                     "): the tensor does not match the number of dimensions of its annotation"};
    }
    const bool packed = s.dtype == PYPTO_DT_FP4_E2M1;  // sizes count values: the last dim is twice the bytes
    auto size_at = [&](size_t d) -> int64_t {
      if (!(packed && int(d) == t.ndim - 1)) return t.shape[d];
      return t.shape[d] > INT64_MAX / 2 ? -1 : t.shape[d] * 2;
    };
    if (!s.any_shape) {
      for (size_t d = 0; d < s.dims.size(); ++d) {
        const DimAnnotation& ds = s.dims[d];
        if (ds.kind == DimKind::kFixed && size_at(d) != ds.value)
          return {ErrorKind::kValue, head + "dimension " + std::to_string(d) + " must be " +
                                         std::to_string(ds.value) + " (" + table.describe_tensor(i) + "), got " +
                                         std::to_string(size_at(d)) + " (shape " + shape_str() +
                                         (packed ? " in bytes, two values each" : "") +
                                         "): the tensor does not match the shape of its annotation"};
        if (ds.kind == DimKind::kNamed) {
          int64_t& v = named[ds.value];
          if (v < 0) {
            v = size_at(d);
            named_where[ds.value] = "'" + p.name + "' dimension " + std::to_string(d);
          } else if (v != size_at(d)) {
            return {ErrorKind::kValue, head + "dimension " + std::to_string(d) + " is the named dimension '" +
                                           table.dim_names[ds.value] + "', expected " + std::to_string(v) +
                                           " (as " + named_where[ds.value] + "), got " + std::to_string(size_at(d)) +
                                           " (the tensor does not match the shape of its annotation)"};
          }
        }
      }
    }
    if (!is_row_major(t)) {
      std::string strides = "[";
      for (int d = 0; d < t.ndim; ++d) strides += (d ? ", " : "") + std::to_string(t.strides[d]);
      return {ErrorKind::kValue, head + "expected a contiguous (row-major) tensor, got strides " + strides +
                                     "] for shape " + shape_str() + " (not all tensors are contiguous); call .contiguous() first"};
    }
  }
  return {};
}

}  // namespace pypto
