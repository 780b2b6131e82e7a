// overlap: refusing a written tensor argument whose memory partially overlaps another tensor argument — one check
// for the Python extension's hit path and the C++ runtime's call path, with one message.
//
// A kernel reads its inputs while it writes its outputs, tile by tile: an output that shares some but not all of its
// bytes with another argument (`out = x[1:]`) would read values it already overwrote, a silent wrong result. torch
// refuses such `out=` arguments; so do we. Full aliasing (the same bytes, the same shape: `k(x, x)`) is an in-place
// update and stays allowed. Arguments are row-major (the binder checked), so a tensor's memory is the byte range
// [data, data + numel * itemsize).
#pragma once

#include <cstdint>
#include <string>

#include "core/param_table.h"
#include "pypto/dlpack.h"
#include "pypto/kernel_abi.h"

namespace pypto {

// Byte length of a row-major tensor (sub-byte dtypes rounded up).
inline uint64_t tensor_bytes(const DLTensor& t) noexcept {
  uint64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= static_cast<uint64_t>(t.shape[d]);
  return (n * t.dtype.bits * t.dtype.lanes + 7) >> 3;
}

// The longest byte length among `n` tensors, capped at 2^61 (so that twice it cannot wrap). Two tensors whose
// starts are this far apart or more cannot share a byte.
inline uint64_t overlap_window(const DLTensor* t, int n) noexcept {
  uint64_t w = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t b = tensor_bytes(t[i]);
    if (b > w) w = b;
  }
  return w < (uint64_t{1} << 61) ? w : uint64_t{1} << 61;
}

// Whether `a` and `b` share some bytes without being the same tensor (the same start, byte length and shape).
[[gnu::cold, gnu::noinline]] bool partially_overlap(const DLTensor& a, const DLTensor& b) noexcept;

// The first pair (written tensor w, other tensor j) that partially overlaps, as w * 256 + j; -1 when none.
// `window`: at least the longest tensor's byte length (the specialization's overlap_window when its key fixes every
// shape), or 0 to measure the tensors here. Only tensors starting within `window` bytes of a written one are
// compared exactly.
[[gnu::noinline]] int find_partial_overlap(const DLTensor* t, int n, uint64_t written, uint64_t window) noexcept;

// How a specialization's calls are checked: `tensor` = its one written tensor when its key fixes every shape (then
// `window` = overlap_window of its tensors, and pack_tensor_args runs the one-pass form), else -1 (the general form).
struct OverlapPlan {
  uint64_t window = 0;
  int tensor = -1;
};
OverlapPlan plan_overlap_check(const DLTensor* t, int n, uint64_t written, bool shapes_keyed) noexcept;

// The general form of pack_tensor_args (several written tensors, or shapes not fixed by the key: `elements`, the
// arguments' total element count, bounds every tensor's length at 8 bytes an element). Out of line: cold.
[[gnu::noinline]] int pack_tensor_args_general(const DLTensor* t, int n, PyptoTensorArg* out, uint64_t written,
                                               int64_t elements) noexcept;

// The Python hit path's form: copies the tensor arguments for the launch (data, shape, rank) and, in the same pass
// over the pointers, counts the tensors that start within the window of the one written tensor (itself included);
// only when another one does are they compared exactly. One add, compare and add-with-carry per tensor on top of
// the copy (callgrind: docs/security.md). Returns find_partial_overlap's result.
[[gnu::always_inline]] inline int pack_tensor_args(const DLTensor* t, int n, PyptoTensorArg* out,
                                                   const OverlapPlan& plan, uint64_t written,
                                                   int64_t elements) noexcept {
  if (plan.tensor < 0) [[unlikely]] return pack_tensor_args_general(t, n, out, written, elements);
  // modular arithmetic: a wrap below address 0 only adds candidates
  const uintptr_t offset = plan.window - reinterpret_cast<uintptr_t>(t[plan.tensor].data);
  const uint64_t span = 2 * plan.window;
  int near = 0;
  const DLTensor* p = t;
  const DLTensor* const end = t + n;  // n >= 1: the written tensor is one of them
  do {
    out->data = p->data;
    out->shape = p->shape;
    out->ndim = p->ndim;
    near += reinterpret_cast<uintptr_t>(p->data) + offset < span;
    ++p;
    ++out;
  } while (p != end);
  return near > 1 ? find_partial_overlap(t, n, written, plan.window) : -1;
}

// "kernel 'k': parameter 'out' partially overlaps parameter 'x' in memory ..." for find_partial_overlap's `pair`.
[[gnu::cold]] std::string overlap_message(const ParamTable& table, int pair);

}  // namespace pypto
