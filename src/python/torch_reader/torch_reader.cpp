// torch_reader: a DLTensor reader for torch.Tensor compiled against the *installed* torch's own headers.
//
// Built on demand by python/pypto/compiler/torch_reader.py (cached on disk per torch installation) and loaded by
// the core. It reads TensorImpl through torch's inline accessors: ~30 instructions per tensor instead of ~500 for
// the DLPack exchange API (whose no-sync reader acquires the GIL through pybind11 and builds DLPack metadata).
// Only plain dense CPU tensors are read here; anything else (python-dispatch subclasses, sparse, nested,
// symbolic, other devices) returns 0 and the core falls back to the exchange API, which reports errors properly.
// The core validates this reader against the exchange API on probe tensors before it trusts it.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>

#include "pypto/dlpack.h"

namespace {

// torch/csrc/autograd/python_variable.h: struct THPVariable { PyObject_HEAD; at::Tensor cdata; ... };
// at::Tensor is a single intrusive_ptr<TensorImpl>. Mirrored rather than included (that header pulls in most of
// torch); the mirror is checked by the validation probes.
struct THPVariableMirror {
  PyObject_HEAD
  c10::TensorImpl* impl;
};

// ScalarType -> DLPack dtype and item size, as a table indexed by the ScalarType value (cheaper than a switch
// and than TensorImpl::itemsize(), which re-checks the TypeMeta). itemsize 0: not read here.
struct DtypeInfo {
  DLDataType dl;
  uint8_t itemsize;
};
constexpr int kDtypeTableSize = 32;

constexpr DtypeInfo dtype_info(int i) {
  switch (static_cast<c10::ScalarType>(i)) {
    case c10::ScalarType::Float: return {{kDLFloat, 32, 1}, 4};
    case c10::ScalarType::Half: return {{kDLFloat, 16, 1}, 2};
    case c10::ScalarType::BFloat16: return {{kDLBfloat, 16, 1}, 2};
    case c10::ScalarType::Double: return {{kDLFloat, 64, 1}, 8};
    case c10::ScalarType::Int: return {{kDLInt, 32, 1}, 4};
    case c10::ScalarType::Long: return {{kDLInt, 64, 1}, 8};
    case c10::ScalarType::Short: return {{kDLInt, 16, 1}, 2};
    case c10::ScalarType::Char: return {{kDLInt, 8, 1}, 1};
    case c10::ScalarType::Byte: return {{kDLUInt, 8, 1}, 1};
    case c10::ScalarType::Bool: return {{kDLBool, 8, 1}, 1};
    default: return {{0, 0, 0}, 0};
  }
}

struct DtypeTable {
  DtypeInfo v[kDtypeTableSize];
  constexpr DtypeTable() : v() {
    for (int i = 0; i < kDtypeTableSize; ++i) v[i] = dtype_info(i);
  }
};
constexpr DtypeTable kDtypes;

}  // namespace

// 1: read; 0: not handled here (use the fallback reader). Never throws, never sets a Python error.
extern "C" __attribute__((visibility("default"))) int pypto_torch_read(PyObject* obj, DLTensor* out) noexcept {
  try {
    const c10::TensorImpl* t = reinterpret_cast<THPVariableMirror*>(obj)->impl;
    if (t == nullptr || t->device_type() != c10::DeviceType::CPU || t->layout() != c10::kStrided) return 0;
    const c10::DispatchKeySet ks = t->key_set();
    // storage checked through the pointer, not has_storage() (a virtual call)
    // Lazy negation/conjugation views (torch._neg_view, .conj()) are not resolved in memory: never read raw.
    if (ks.has(c10::DispatchKey::Python) || ks.has(c10::DispatchKey::PythonTLSSnapshot) ||
        ks.has(c10::DispatchKey::Negative) || ks.has(c10::DispatchKey::Conjugate) ||
        t->has_symbolic_sizes_strides() || t->unsafe_storage().unsafeGetStorageImpl() == nullptr)
      return 0;
    const unsigned st = static_cast<unsigned>(t->dtype().toScalarType());
    if (st >= kDtypeTableSize || kDtypes.v[st].itemsize == 0) return 0;
    const DtypeInfo& info = kDtypes.v[st];
    out->dtype = info.dl;
    const c10::IntArrayRef sizes = t->sizes();
    const void* base = t->unsafe_storage().data();
    if (base == nullptr && t->numel() != 0) return 0;  // storage resized away: the fallback reports it
    out->data = static_cast<char*>(const_cast<void*>(base)) + t->storage_offset() * static_cast<int64_t>(info.itemsize);
    out->device = DLDevice{kDLCPU, 0};
    out->ndim = static_cast<int32_t>(sizes.size());
    out->shape = const_cast<int64_t*>(sizes.data());
    // strides as they are: the binder checks contiguity (TensorImpl::is_contiguous() is an out-of-line call that
    // costs more than the binder's stride walk on small ranks)
    out->strides = const_cast<int64_t*>(t->strides().data());
    out->byte_offset = 0;
    return 1;
  } catch (...) {
    return 0;
  }
}

// Whether the kernel may write `obj` in place, as torch decides for its own in-place ops: 0 yes; 1 no, it
// requires grad while grad mode is on (autograd could not see the write); 2 no, it is an inference tensor
// outside InferenceMode. Called before launch for the tensors a specialization writes.
extern "C" __attribute__((visibility("default"))) int pypto_torch_write_check(PyObject* obj) noexcept {
  try {
    c10::TensorImpl* t = reinterpret_cast<THPVariableMirror*>(obj)->impl;
    if (t == nullptr) return 0;
    if (t->requires_grad() && c10::GradMode::is_enabled()) return 1;
    if (t->is_inference() && !c10::InferenceMode::is_enabled()) return 2;
    return 0;
  } catch (...) {
    return 1;
  }
}

// Marks a tensor the kernel wrote as modified in place (its version counter), so that autograd refuses a
// backward that saved its old value instead of computing a wrong gradient.
extern "C" __attribute__((visibility("default"))) void pypto_torch_bump_version(PyObject* obj) noexcept {
  try {
    c10::TensorImpl* t = reinterpret_cast<THPVariableMirror*>(obj)->impl;
    if (t != nullptr && !t->is_inference()) t->bump_version();
  } catch (...) {
  }
}

extern "C" __attribute__((visibility("default"))) unsigned pypto_torch_reader_abi(void) { return 2; }
