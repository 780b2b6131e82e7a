// torch_reader: a DLTensor reader for torch.Tensor compiled against the *installed* torch's own headers.
//
// Built on demand by python/pypto/compiler/torch_reader.py (cached on disk per torch installation) and loaded by
// the core. It reads TensorImpl through torch's inline accessors: ~60 instructions per tensor instead of ~500 for
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
constexpr int kDtypeTableSize = 48;  // > Float4_e2m1fn_x2 (45)

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
    case c10::ScalarType::UInt16: return {{kDLUInt, 16, 1}, 2};
    case c10::ScalarType::UInt32: return {{kDLUInt, 32, 1}, 4};
    case c10::ScalarType::UInt64: return {{kDLUInt, 64, 1}, 8};
    case c10::ScalarType::Float8_e4m3fn: return {{kDLFloat8_e4m3fn, 8, 1}, 1};
    case c10::ScalarType::Float8_e5m2: return {{kDLFloat8_e5m2, 8, 1}, 1};
    case c10::ScalarType::Float8_e8m0fnu: return {{kDLFloat8_e8m0fnu, 8, 1}, 1};
    case c10::ScalarType::Float4_e2m1fn_x2: return {{kDLFloat4_e2m1fn, 4, 2}, 1};  // as torch's DLPack export
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

// Tensors read elsewhere: Python-dispatch subclasses, and lazy negation/conjugation views. All four are functionality
// keys (no backend bits), so one AND of the raw sets tests them.
constexpr c10::DispatchKeySet kDeclined =
    c10::DispatchKeySet(c10::DispatchKey::Python) | c10::DispatchKeySet(c10::DispatchKey::PythonTLSSnapshot) |
    c10::DispatchKeySet(c10::DispatchKey::Negative) | c10::DispatchKeySet(c10::DispatchKey::Conjugate);

// TensorImpl's sizes(), strides() and storage_offset() each re-test the sizes/strides policy and fall back to a virtual
// call; with those calls in the function, g++ saves six registers on every read. Member pointers formed through a
// derived class (the standard's protected-access rule) let the reader test the policy once, decline any custom one,
// and read the fields the accessors would have returned. Never instantiated.
struct ImplFields : c10::TensorImpl {
  static constexpr auto kMatchesPolicy = &ImplFields::matches_policy;
  static constexpr auto kSizesAndStrides = &ImplFields::sizes_and_strides_;
  static constexpr auto kStorageOffset = &ImplFields::storage_offset_;
  static constexpr auto kNumel = &ImplFields::numel_;
};

}  // namespace

// 1: read; 0: not handled here (use the fallback reader). Never throws, never sets a Python error.
// flatten: every accessor inlined (g++ otherwise leaves some out of line as the function grows).
extern "C" __attribute__((visibility("default"), flatten)) int pypto_torch_read(PyObject* obj, DLTensor* out) noexcept {
  try {
    const c10::TensorImpl* t = reinterpret_cast<THPVariableMirror*>(obj)->impl;
    if (t == nullptr || t->device_type() != c10::DeviceType::CPU || t->layout() != c10::kStrided) return 0;
    // Lazy negation/conjugation views (torch._neg_view, .conj()) are not resolved in memory: never read raw. The
    // storage is checked through its pointer, not has_storage() (a virtual call).
    if ((t->key_set().raw_repr() & kDeclined.raw_repr()) != 0 || t->has_symbolic_sizes_strides() ||
        t->unsafe_storage().unsafeGetStorageImpl() == nullptr)
      return 0;
    // CustomStrides or above: sizes, strides or the offset come from a virtual method (symbolic sizes included:
    // they force CustomSizes, refresh_sizes_strides_policy)
    if ((t->*ImplFields::kMatchesPolicy)(c10::TensorImpl::SizesStridesPolicy::CustomStrides)) return 0;
    const unsigned st = static_cast<unsigned>(t->dtype().toScalarType());
    if (st >= kDtypeTableSize || kDtypes.v[st].itemsize == 0) return 0;
    const DtypeInfo& info = kDtypes.v[st];
    out->dtype = info.dl;
    const c10::impl::SizesAndStrides& ss = t->*ImplFields::kSizesAndStrides;
    const void* base = t->unsafe_storage().data();
    if (base == nullptr && t->*ImplFields::kNumel != 0) return 0;  // storage resized away: the fallback reports it
    out->data = static_cast<char*>(const_cast<void*>(base)) +
                (t->*ImplFields::kStorageOffset) * static_cast<int64_t>(info.itemsize);
    out->device = DLDevice{kDLCPU, 0};
    out->ndim = static_cast<int32_t>(ss.size());
    out->shape = const_cast<int64_t*>(ss.sizes_data());
    // strides as they are: the binder checks contiguity (TensorImpl::is_contiguous() is an out-of-line call that
    // costs more than the binder's stride walk on small ranks)
    out->strides = const_cast<int64_t*>(ss.strides_data());
    out->byte_offset = 0;
    return 1;
  } catch (...) {
    return 0;
  }
}

// Called before launch for each tensor the specialization writes, as torch's in-place ops behave: 0 and its version
// counter bumped (so that a backward that saved the old value raises instead of computing a wrong gradient); 1 it
// requires grad while grad mode is on (autograd could not see the write); 2 an inference tensor outside
// InferenceMode. Bumping before the write instead of after it is not observable by autograd.
extern "C" __attribute__((visibility("default"))) int pypto_torch_begin_write(PyObject* obj) noexcept {
  try {
    c10::TensorImpl* t = reinterpret_cast<THPVariableMirror*>(obj)->impl;
    if (t == nullptr) return 0;
    if (t->autograd_meta() != nullptr && t->requires_grad() && c10::GradMode::is_enabled()) return 1;
    try {
      t->bump_version();  // throws only for an inference tensor outside InferenceMode (it has no version counter)
    } catch (...) {
      return 2;
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

extern "C" __attribute__((visibility("default"))) unsigned pypto_torch_reader_abi(void) { return 2; }
