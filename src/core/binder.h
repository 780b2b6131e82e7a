// binder: checks bound arguments against a ParamTable and packs the specialization key.
//
// Shared by the Python extension (src/python) and the C++ runtime, so both apply the same rules and produce the
// same messages. The fast functions are noexcept and allocation-free; on failure the caller asks for the message
// (cold path), which re-runs the checks and names kernel, parameter, expected and got.
#pragma once

#include <cstdint>
#include <string>

#include "core/param_table.h"
#include "pypto/dlpack.h"

namespace pypto {

enum class ErrorKind : uint8_t { kNone = 0, kType, kValue, kRuntime };

struct BindError {
  ErrorKind kind = ErrorKind::kNone;
  std::string message;
  explicit operator bool() const { return kind != ErrorKind::kNone; }
};

// True when some dim is 0: a tensor with no elements is contiguous whatever its strides (as torch says:
// torch.zeros(2, 0) has strides (1, 1)). Only consulted after a stride mismatch, so the hit path never runs it.
[[gnu::cold, gnu::noinline]] inline bool has_no_elements(const DLTensor& t) noexcept {
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] == 0) return true;
  return false;
}

// Row-major contiguity (dims of size 1 may carry any stride, as may every dim of an empty tensor; NULL strides
// mean compact).
inline bool is_row_major(const DLTensor& t) noexcept {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return has_no_elements(t);
    expected *= t.shape[d];
  }
  return true;
}

// The call path's binder: checks every tensor argument against its annotation (CPU device, dtype, rank, fixed
// dims, named-dim agreement, row-major contiguity) and appends the tensor part of the key — per tensor its
// dtype/rank word when the annotation leaves them open, then the size of every STATIC dim and of every dim beyond
// the annotated ones — in one pass over the table's precompiled TensorSteps. `tensors[i]` is the argument of tensor
// parameter i. Returns the number of key words written, or -1 when an argument violates its annotation (then
// tensor_error() gives the message).
int bind_tensors(const ParamTable& table, const DLTensor* tensors, uint64_t* key) noexcept;
// The same, and the total element count of the arguments in `*elements` (tables with DYNAMIC/named dims, whose
// key does not fix it): counted in the same walk over the dims.
int bind_tensors_counting(const ParamTable& table, const DLTensor* tensors, uint64_t* key,
                          int64_t* elements) noexcept;

// The first violation, as a message (cold path). kind == kNone when everything is fine.
BindError tensor_error(const ParamTable& table, const DLTensor* tensors);

// Fast integer mix over the key words (not cryptographic; collisions are resolved by comparing keys).
inline uint64_t hash_key(const uint64_t* w, int n) noexcept {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    h ^= w[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

}  // namespace pypto
