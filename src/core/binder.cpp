// binder: argument checks and key packing (see binder.h).
#include "core/binder.h"

#include <cstdio>

namespace pypto {

bool is_row_major(const DLTensor& t) noexcept {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

namespace {

inline bool rank_ok(const TensorSpec& s, int ndim) noexcept {
  if (s.any_shape) return ndim <= PYPTO_MAX_RANK;
  const int n = static_cast<int>(s.dims.size());
  return s.ellipsis ? (ndim >= n && ndim <= PYPTO_MAX_RANK) : ndim == n;
}

}  // namespace

bool check_tensors(const ParamTable& table, const DLTensor* tensors) noexcept {
  int64_t named[kMaxParams];
  const int n_names = static_cast<int>(table.dim_names.size());
  for (int i = 0; i < n_names && i < kMaxParams; ++i) named[i] = -1;
  const int n = table.n_tensors();
  for (int i = 0; i < n; ++i) {
    const TensorSpec& s = table.tensor(i).tensor;
    const DLTensor& t = tensors[i];
    if (t.device.device_type != kDLCPU) return false;
    const int dt = dtype_from_dlpack(t.dtype);
    if (dt < 0 || (s.dtype != kAnyDType && dt != s.dtype)) return false;
    if (!rank_ok(s, t.ndim)) return false;
    if (!s.any_shape) {
      const int nd = static_cast<int>(s.dims.size());
      for (int d = 0; d < nd; ++d) {
        const DimSpec& ds = s.dims[d];
        if (ds.kind == DimKind::kFixed) {
          if (t.shape[d] != ds.value) return false;
        } else if (ds.kind == DimKind::kNamed) {
          int64_t& v = named[ds.value];
          if (v < 0) v = t.shape[d];
          else if (v != t.shape[d]) return false;
        }
      }
    }
    if (!is_row_major(t)) return false;
  }
  return true;
}

BindError tensor_error(const ParamTable& table, const DLTensor* tensors) {
  std::vector<int64_t> named(table.dim_names.size(), -1);
  std::vector<std::string> named_where(table.dim_names.size());
  char buf[64];
  for (int i = 0; i < table.n_tensors(); ++i) {
    const ParamSpec& p = table.tensor(i);
    const TensorSpec& s = p.tensor;
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
    const int dt = dtype_from_dlpack(t.dtype);
    if (dt < 0 || (s.dtype != kAnyDType && dt != s.dtype)) {
      dlpack_dtype_describe(t.dtype, buf, sizeof buf);
      std::string expected = s.dtype == kAnyDType ? std::string("a dtype pypto supports") : dtype_name(s.dtype);
      return {ErrorKind::kType, head + "expected dtype " + expected + ", got " + buf};
    }
    if (!rank_ok(s, t.ndim)) {
      std::string expected = s.any_shape ? "at most " + std::to_string(PYPTO_MAX_RANK)
                             : s.ellipsis ? "at least " + std::to_string(s.dims.size())
                                          : std::to_string(s.dims.size());
      return {ErrorKind::kValue, head + "expected " + expected + " dimensions (" + table.describe_tensor(i) +
                                     "), got " + std::to_string(t.ndim) + " (shape " + shape_str() + ")"};
    }
    if (!s.any_shape) {
      for (size_t d = 0; d < s.dims.size(); ++d) {
        const DimSpec& ds = s.dims[d];
        if (ds.kind == DimKind::kFixed && t.shape[d] != ds.value)
          return {ErrorKind::kValue, head + "dimension " + std::to_string(d) + " must be " +
                                         std::to_string(ds.value) + " (" + table.describe_tensor(i) + "), got " +
                                         std::to_string(t.shape[d]) + " (shape " + shape_str() + ")"};
        if (ds.kind == DimKind::kNamed) {
          int64_t& v = named[ds.value];
          if (v < 0) {
            v = t.shape[d];
            named_where[ds.value] = "'" + p.name + "' dimension " + std::to_string(d);
          } else if (v != t.shape[d]) {
            return {ErrorKind::kValue, head + "dimension " + std::to_string(d) + " is the named dimension '" +
                                           table.dim_names[ds.value] + "', expected " + std::to_string(v) +
                                           " (as " + named_where[ds.value] + "), got " + std::to_string(t.shape[d])};
          }
        }
      }
    }
    if (!is_row_major(t)) {
      std::string strides = "[";
      for (int d = 0; d < t.ndim; ++d) strides += (d ? ", " : "") + std::to_string(t.strides[d]);
      return {ErrorKind::kValue, head + "expected a contiguous (row-major) tensor, got strides " + strides +
                                     "] for shape " + shape_str() + "; call .contiguous() first"};
    }
  }
  return {};
}

int pack_tensor_key(const ParamTable& table, const DLTensor* tensors, uint64_t* out) noexcept {
  int n = 0;
  const int nt = table.n_tensors();
  for (int i = 0; i < nt; ++i) {
    const TensorSpec& s = table.tensor(i).tensor;
    const DLTensor& t = tensors[i];
    if (s.dtype == kAnyDType || !s.rank_is_fixed())
      out[n++] = static_cast<uint64_t>(dtype_from_dlpack(t.dtype)) | (static_cast<uint64_t>(t.ndim) << 8);
    const int annotated = s.any_shape ? 0 : static_cast<int>(s.dims.size());
    for (int d = 0; d < annotated; ++d)
      if (s.dims[d].kind == DimKind::kStatic) out[n++] = static_cast<uint64_t>(t.shape[d]);
    for (int d = annotated; d < t.ndim; ++d) out[n++] = static_cast<uint64_t>(t.shape[d]);  // any-shape / `...` dims
  }
  return n;
}

}  // namespace pypto
