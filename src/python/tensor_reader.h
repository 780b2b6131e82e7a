// tensor_reader: turns a Python tensor object into a DLTensor without running Python code.
//
// Readers are chosen by Py_TYPE(obj) pointer and cached per type:
//   - torch.Tensor (and any type exposing __dlpack_c_exchange_api__): DLPackExchangeAPI's
//     dltensor_from_py_object_no_sync — a C function pointer, ~70 ns, nothing to release;
//   - numpy.ndarray: its C struct, read directly once the layout was checked against the buffer protocol on a
//     probe array (~the cost of the torch reader; numpy's struct layout is part of its stable C ABI);
//   - other buffer exporters: the buffer protocol (released after the call);
//   - anything else with __dlpack__: the generic capsule protocol (a Python call; the fallback).
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

#include "pypto/dlpack.h"
#include "pypto/kernel_abi.h"

namespace pypto::py {

enum class ReaderKind : uint8_t { kNone = 0, kExchangeApi, kBuffer, kDLPackCapsule, kTorchFast, kNumpy };

// Per-argument state that must outlive the kernel call (buffer views, DLPack capsules).
struct ReadSlot {
  // Plain data, set by read_tensor(): call frames hold arrays of these and must not pay for constructors.
  uint8_t cleanup;   // 0 nothing, 1 Py_buffer, 2 DLManagedTensor, 3 DLManagedTensorVersioned
  bool readonly;
  bool torch;        // a torch.Tensor (or subclass): a write must respect autograd (write_check, bump_version)
  bool ran_python;   // reading it may have run Python code (a __dlpack__ method, a Python-level buffer, ...)
  void* managed;
  int64_t strides[PYPTO_MAX_RANK];
  Py_buffer view;
};

// The fast torch reader, once installed (install_torch_reader): the call path tries it inline first.
using TorchReadFn = int (*)(PyObject*, DLTensor*);
using TorchBeginWriteFn = int (*)(PyObject*);
extern TorchReadFn g_torch_read;
// From the same library, for each torch tensor a kernel is about to write: 0 may write (its version counter bumped),
// 1 it requires grad under grad mode, 2 an inference tensor outside InferenceMode. Null until installed.
extern TorchBeginWriteFn g_torch_begin_write;
extern PyTypeObject* g_torch_exact_type;  // torch.Tensor itself: subclasses go through read_tensor()

// Reads `obj`. Returns 1 when read, 0 when `obj` is not a tensor object (no exception set), -1 on an error
// with a Python exception set. On 1 the caller must call release_slot() once the tensor is no longer used.
int read_tensor(PyObject* obj, DLTensor* out, ReadSlot* slot) noexcept;
void release_slot(ReadSlot* slot) noexcept;
// Which reader `obj`'s type uses (kNone: not a tensor). Cheap after the first object of a type.
ReaderKind reader_kind(PyObject* obj) noexcept;
// Loads the torch reader compiled against the installed torch (torch_reader/torch_reader.cpp), checks it
// against the exchange API on `probes` (a sequence of tensors of `tensor_type`), and on success makes it the
// reader of `tensor_type` and its subclasses. Returns "" or why it was not installed (cold path).
std::string install_torch_reader(const char* path, PyObject* tensor_type, PyObject* probes);
// Makes `tensor_type` (torch.Tensor) known before the fast reader is built, so that writes into torch tensors read
// through the exchange API meanwhile still respect autograd (through Python, on that slow path only).
void set_torch_tensor_type(PyObject* tensor_type);
// Autograd's rules for a torch tensor the kernel is about to write, with or without the fast reader: as
// g_torch_begin_write, or -1 with an exception set (through torch's Python API before the reader is installed).
int torch_begin_write_slow(PyObject* obj) noexcept;
inline int torch_begin_write(PyObject* obj) noexcept {
  return g_torch_begin_write != nullptr ? g_torch_begin_write(obj) : torch_begin_write_slow(obj);
}
// Short description of an argument's type for messages: "torch.Tensor", "numpy.ndarray", "float", ...
const char* type_name(PyObject* obj) noexcept;

}  // namespace pypto::py
