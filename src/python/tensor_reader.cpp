// tensor_reader: reader selection by type and the three readers (see tensor_reader.h).
#include "python/tensor_reader.h"

#include <dlfcn.h>

#include <cstring>
#include <string>

#include "core/binder.h"

namespace pypto::py {

TorchReadFn g_torch_read = nullptr;  // installed by install_torch_reader()
TorchBeginWriteFn g_torch_begin_write = nullptr;
PyTypeObject* g_torch_exact_type = nullptr;

namespace {

// DLPack 1.x exchange API table (torch.Tensor.__dlpack_c_exchange_api__). Declared here, not included from a
// framework, so that pypto builds without torch; the version is checked before the table is used.
struct ExchangeApiHeader {
  DLPackVersion version;
  ExchangeApiHeader* prev_api;
};
struct ExchangeApi {
  ExchangeApiHeader header;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  void* current_work_stream;
};

// numpy's PyArrayObject and the head of PyArray_Descr (numpy/ndarraytypes.h; unchanged from numpy 1.x to 2.x
// for these fields). Mirrored rather than included so that pypto builds without numpy; a type is read through
// the mirror only after the mirror agreed with the buffer protocol on a probe array of that type.
struct NumpyDescrMirror {
  PyObject_HEAD
  PyTypeObject* typeobj;
  char kind, type, byteorder, flags;
  int type_num;
};
struct NumpyArrayMirror {
  PyObject_HEAD
  char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  NumpyDescrMirror* descr;
  int flags;
};
constexpr int kNpyCContiguous = 0x0001, kNpyWriteable = 0x0400;

// numpy type number -> DLPack dtype (NPY_BOOL = 0 ... NPY_DOUBLE = 12, NPY_HALF = 23; long is 64-bit on LP64).
struct NpyType {
  DLDataType dl;
  uint8_t itemsize;
};
constexpr NpyType kNpyTypes[24] = {
    {{kDLBool, 8, 1}, 1},  {{kDLInt, 8, 1}, 1},    {{kDLUInt, 8, 1}, 1},  {{kDLInt, 16, 1}, 2},
    {{kDLUInt, 16, 1}, 2}, {{kDLInt, 32, 1}, 4},   {{kDLUInt, 32, 1}, 4}, {{kDLInt, 8 * sizeof(long), 1}, sizeof(long)},
    {{kDLUInt, 8 * sizeof(long), 1}, sizeof(long)}, {{kDLInt, 64, 1}, 8}, {{kDLUInt, 64, 1}, 8},
    {{kDLFloat, 32, 1}, 4}, {{kDLFloat, 64, 1}, 8}, {{0, 0, 0}, 0},       {{0, 0, 0}, 0},
    {{0, 0, 0}, 0},        {{0, 0, 0}, 0},         {{0, 0, 0}, 0},        {{0, 0, 0}, 0},
    {{0, 0, 0}, 0},        {{0, 0, 0}, 0},         {{0, 0, 0}, 0},        {{0, 0, 0}, 0},
    {{kDLFloat, 16, 1}, 2}};

// Checks the mirror against the buffer protocol on a fresh 2x3 float64 array of `type` (cold, once per type).
bool numpy_layout_agrees(PyTypeObject* type) {
  if (std::strcmp(type->tp_name, "numpy.ndarray") != 0) return false;
  PyObject* probe = PyObject_CallFunction(reinterpret_cast<PyObject*>(type), "((ii))", 2, 3);
  if (probe == nullptr) {
    PyErr_Clear();
    return false;
  }
  bool ok = false;
  Py_buffer v;
  if (Py_TYPE(probe) == type && PyObject_GetBuffer(probe, &v, PyBUF_RECORDS_RO) == 0) {
    const auto* a = reinterpret_cast<NumpyArrayMirror*>(probe);
    ok = a->data == v.buf && a->nd == 2 && v.ndim == 2 && a->dimensions[0] == 2 && a->dimensions[1] == 3 &&
         a->strides[0] == v.strides[0] && a->strides[1] == v.strides[1] && v.itemsize == 8 &&
         a->descr != nullptr && a->descr->type_num == 12 && (a->flags & kNpyCContiguous) != 0 &&
         (a->flags & kNpyWriteable) != 0;
    PyBuffer_Release(&v);
  }
  PyErr_Clear();
  Py_DECREF(probe);
  return ok;
}

struct ReaderEntry {
  PyTypeObject* type;
  ReaderKind kind;
  const ExchangeApi* api;
  bool torch;  // the type is torch.Tensor or a subclass
};

// A handful of tensor types are ever seen; a linear scan over pointers is faster than any map.
constexpr int kCacheSize = 16;
PyTypeObject* g_torch_type = nullptr;   // torch.Tensor (strong)
ReaderEntry g_cache[kCacheSize];
int g_cached = 0;

ReaderEntry classify(PyTypeObject* type) {
  ReaderEntry e{type, ReaderKind::kNone, nullptr, g_torch_type != nullptr && PyType_IsSubtype(type, g_torch_type)};
  PyObject* cap = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack_c_exchange_api__");
  if (cap != nullptr) {
    if (PyCapsule_CheckExact(cap)) {
      auto* api = static_cast<const ExchangeApi*>(PyCapsule_GetPointer(cap, "dlpack_exchange_api"));
      if (api != nullptr && api->header.version.major == 1 && api->dltensor_from_py_object_no_sync != nullptr) {
        e.kind = ReaderKind::kExchangeApi;
        e.api = api;  // the producer keeps the table alive for the life of the process
      }
    }
    Py_DECREF(cap);
  }
  PyErr_Clear();
  if (e.kind == ReaderKind::kExchangeApi && g_torch_read != nullptr && PyType_IsSubtype(type, g_torch_type))
    e.kind = ReaderKind::kTorchFast;
  if (e.kind != ReaderKind::kNone) return e;
  if (type->tp_as_buffer != nullptr && type->tp_as_buffer->bf_getbuffer != nullptr) {
    e.kind = numpy_layout_agrees(type) ? ReaderKind::kNumpy : ReaderKind::kBuffer;
    return e;
  }
  PyObject* dl = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack__");
  if (dl != nullptr) {
    e.kind = ReaderKind::kDLPackCapsule;
    Py_DECREF(dl);
  }
  PyErr_Clear();
  return e;
}

inline const ReaderEntry& entry_for(PyTypeObject* type) noexcept {
  static const ReaderEntry* last = nullptr;  // most programs pass one tensor type: one compare
  if (last != nullptr && last->type == type) [[likely]] return *last;
  for (int i = 0; i < g_cached; ++i)
    if (g_cache[i].type == type) return *(last = &g_cache[i]);
  ReaderEntry e = classify(type);
  if (g_cached < kCacheSize) {
    Py_INCREF(type);  // keep the pointer from being reused by another type
    g_cache[g_cached] = e;
    return *(last = &g_cache[g_cached++]);
  }
  static thread_local ReaderEntry overflow;
  overflow = e;
  return overflow;
}

// Byte strides -> element strides. A stride that is not a whole number of items (a field of a structured
// array, a packed record) cannot be expressed to a kernel: an error, never a rounded stride.
bool element_strides(const Py_ssize_t* bytes, int ndim, Py_ssize_t itemsize, int64_t* out) noexcept {
  for (int d = 0; d < ndim; ++d) {
    if (itemsize <= 0 || bytes[d] % itemsize != 0) {
      PyErr_Format(PyExc_TypeError, "stride %zd bytes of dim %d is not a multiple of the item size (%zd bytes)",
                   bytes[d], d, itemsize);
      return false;
    }
    out[d] = bytes[d] / itemsize;
  }
  return true;
}

// Buffer format -> DLPack dtype. Native or little-endian only.
bool dtype_from_format(const char* fmt, Py_ssize_t itemsize, DLDataType* out) {
  if (fmt == nullptr) fmt = "B";
  if (*fmt == '@' || *fmt == '=' || *fmt == '<') ++fmt;
  if (fmt[0] == '\0' || fmt[1] != '\0') return false;
  const uint8_t bits = static_cast<uint8_t>(itemsize * 8);
  switch (fmt[0]) {
    case 'e': case 'f': case 'd': *out = {kDLFloat, bits, 1}; return true;
    case '?': *out = {kDLBool, 8, 1}; return true;
    case 'b': case 'h': case 'i': case 'l': case 'q': *out = {kDLInt, bits, 1}; return true;
    case 'B': case 'H': case 'I': case 'L': case 'Q': *out = {kDLUInt, bits, 1}; return true;
    default: return false;
  }
}

int read_buffer(PyObject* obj, DLTensor* out, ReadSlot* slot) noexcept {
  Py_buffer* v = &slot->view;
  if (PyObject_GetBuffer(obj, v, PyBUF_RECORDS_RO) != 0) return -1;
  slot->cleanup = 1;
  slot->readonly = v->readonly != 0;
  out->data = v->buf;
  out->device = DLDevice{kDLCPU, 0};
  out->ndim = v->ndim;
  out->byte_offset = 0;
  if (!dtype_from_format(v->format, v->itemsize, &out->dtype)) out->dtype = DLDataType{3 /*opaque*/, uint8_t(v->itemsize * 8), 1};
  static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "buffer shapes are read as int64");
  static int64_t scalar_shape[1] = {1};
  out->shape = v->ndim ? reinterpret_cast<int64_t*>(v->shape) : scalar_shape;
  out->strides = nullptr;
  if (v->ndim > 0 && !PyBuffer_IsContiguous(v, 'C') && v->ndim <= PYPTO_MAX_RANK) {
    if (!element_strides(v->strides, v->ndim, v->itemsize, slot->strides)) {
      PyBuffer_Release(v);
      slot->cleanup = 0;
      return -1;
    }
    out->strides = slot->strides;
  }
  return 1;
}

// numpy.ndarray through the mirrored struct: no call into numpy, nothing to release. 0: not handled here (the
// buffer protocol reads or reports it).
inline int read_numpy(PyObject* obj, DLTensor* out, ReadSlot* slot) noexcept {
  const auto* a = reinterpret_cast<const NumpyArrayMirror*>(obj);
  const int tn = a->descr->type_num;
  if (tn < 0 || tn >= 24 || kNpyTypes[tn].itemsize == 0 || a->descr->byteorder == '>' || a->nd > PYPTO_MAX_RANK)
    return 0;
  out->data = a->data;
  out->device = DLDevice{kDLCPU, 0};
  out->ndim = a->nd;
  out->dtype = kNpyTypes[tn].dl;
  out->byte_offset = 0;
  static int64_t scalar_shape[1] = {1};
  out->shape = a->nd ? reinterpret_cast<int64_t*>(a->dimensions) : scalar_shape;
  out->strides = nullptr;
  slot->readonly = (a->flags & kNpyWriteable) == 0;
  if (a->nd > 0 && (a->flags & kNpyCContiguous) == 0) {
    if (!element_strides(a->strides, a->nd, kNpyTypes[tn].itemsize, slot->strides)) return -1;
    out->strides = slot->strides;
  }
  return 1;
}

int read_capsule(PyObject* obj, DLTensor* out, ReadSlot* slot) noexcept {
  PyObject* cap = nullptr;
  {
    PyObject* meth = PyObject_GetAttrString(obj, "__dlpack__");
    if (meth == nullptr) return -1;
    PyObject* kw = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
    PyObject* empty = PyTuple_New(0);
    cap = (kw && empty) ? PyObject_Call(meth, empty, kw) : nullptr;
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    if (cap == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {  // a producer predating max_version
      PyErr_Clear();
      cap = PyObject_CallNoArgs(meth);
    }
    Py_DECREF(meth);
    if (cap == nullptr) return -1;
  }
  int rc = 1;
  if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, "dltensor_versioned"));
    if (m->version.major != 1) {
      PyErr_Format(PyExc_TypeError, "unsupported DLPack major version %u", m->version.major);
      rc = -1;
    } else {
      *out = m->dl_tensor;
      slot->cleanup = 3;
      slot->managed = m;
      slot->readonly = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
      PyCapsule_SetName(cap, "used_dltensor_versioned");
    }
  } else if (PyCapsule_IsValid(cap, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
    *out = m->dl_tensor;
    slot->cleanup = 2;
    slot->managed = m;
    PyCapsule_SetName(cap, "used_dltensor");
  } else {
    PyErr_SetString(PyExc_TypeError, "__dlpack__() did not return a DLPack capsule");
    rc = -1;
  }
  Py_DECREF(cap);
  if (rc == 1 && out->byte_offset) {
    out->data = static_cast<char*>(out->data) + out->byte_offset;
    out->byte_offset = 0;
  }
  return rc;
}

// The exchange API exports what a framework hands it, including what it should not: a NULL data pointer for a
// non-empty tensor (storage resized to 0, fake tensors), and torch's lazy negation/conjugation views, whose
// memory does not hold their values. The slow path only (the fast torch reader declines all of these).
int check_exchanged(PyObject* obj, const DLTensor* out) noexcept {
  if (out->data == nullptr) {
    int64_t n = 1;
    for (int d = 0; d < out->ndim; ++d) n *= out->shape[d];
    if (n != 0) {
      PyErr_SetString(PyExc_ValueError, "its data pointer is NULL (no storage: a fake or meta tensor, or storage "
                                        "resized to 0)");
      return -1;
    }
  }
  for (const char* lazy : {"is_neg", "is_conj"}) {
    PyObject* r = PyObject_CallMethod(obj, lazy, nullptr);
    if (r == nullptr) {
      PyErr_Clear();  // not a torch tensor: nothing lazy to resolve
      break;
    }
    const bool set = r == Py_True;
    Py_DECREF(r);
    if (set) {
      PyErr_Format(PyExc_ValueError, "it is a lazy %s view whose memory does not hold its values; call %s() first",
                   lazy[3] == 'n' ? "negation" : "conjugation", lazy[3] == 'n' ? ".resolve_neg" : ".resolve_conj");
      return -1;
    }
  }
  return 1;
}

}  // namespace

ReaderKind reader_kind(PyObject* obj) noexcept { return entry_for(Py_TYPE(obj)).kind; }

int read_tensor(PyObject* obj, DLTensor* out, ReadSlot* slot) noexcept {
  const ReaderEntry& e = entry_for(Py_TYPE(obj));
  slot->cleanup = 0;
  slot->readonly = false;
  slot->torch = e.torch;
  slot->ran_python = false;
  switch (e.kind) {
    case ReaderKind::kTorchFast:
      if (g_torch_read(obj, out)) return 1;
      [[fallthrough]];  // not a plain dense CPU tensor: the exchange API handles (or reports) it
    case ReaderKind::kExchangeApi:
      slot->ran_python = true;  // check_exchanged calls methods a subclass may override
      if (e.api->dltensor_from_py_object_no_sync(obj, out) != 0) return -1;
      if (out->byte_offset) {
        out->data = static_cast<char*>(out->data) + out->byte_offset;
        out->byte_offset = 0;
      }
      return check_exchanged(obj, out);
    case ReaderKind::kNumpy: {
      const int rc = read_numpy(obj, out, slot);
      if (rc != 0) return rc;
      return read_buffer(obj, out, slot);
    }
    case ReaderKind::kBuffer:
      slot->ran_python = true;  // a Python class may implement the buffer protocol (__buffer__)
      return read_buffer(obj, out, slot);
    case ReaderKind::kDLPackCapsule:
      slot->ran_python = true;
      return read_capsule(obj, out, slot);
    default:
      return 0;
  }
}

void release_slot(ReadSlot* slot) noexcept {
  switch (slot->cleanup) {
    case 1: PyBuffer_Release(&slot->view); break;
    case 2: {
      auto* m = static_cast<DLManagedTensor*>(slot->managed);
      if (m->deleter) m->deleter(m);
      break;
    }
    case 3: {
      auto* m = static_cast<DLManagedTensorVersioned*>(slot->managed);
      if (m->deleter) m->deleter(m);
      break;
    }
    default: break;
  }
  slot->cleanup = 0;
}

std::string install_torch_reader(const char* path, PyObject* tensor_type, PyObject* probes) {
  if (!PyType_Check(tensor_type)) return "tensor_type is not a type";
  auto* type = reinterpret_cast<PyTypeObject*>(tensor_type);
  const ReaderEntry base = classify(type);
  if (base.kind != ReaderKind::kExchangeApi) return "the tensor type has no DLPack exchange API to validate against";
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    return std::string("cannot load ") + path + ": " + (e ? e : "?");
  }
  auto fn = reinterpret_cast<TorchReadFn>(dlsym(h, "pypto_torch_read"));
  auto begin_write = reinterpret_cast<TorchBeginWriteFn>(dlsym(h, "pypto_torch_begin_write"));
  if (fn == nullptr || begin_write == nullptr) {
    dlclose(h);
    return "the reader library does not export pypto_torch_read/pypto_torch_begin_write";
  }
  PyObject* seq = PySequence_Fast(probes, "probes must be a sequence");
  if (seq == nullptr) {
    PyErr_Clear();
    return "probes must be a sequence";
  }
  std::string why;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && why.empty(); ++i) {
    PyObject* t = PySequence_Fast_GET_ITEM(seq, i);
    DLTensor ref{}, got{};
    if (base.api->dltensor_from_py_object_no_sync(t, &ref) != 0) {
      PyErr_Clear();
      continue;  // the exchange API refuses it; nothing to compare
    }
    ref.data = static_cast<char*>(ref.data) + ref.byte_offset;
    const std::string which = "probe " + std::to_string(i) + ": ";
    if (!fn(t, &got)) {
      why = which + "the fast reader declined a plain CPU tensor";
      break;
    }
    if (got.data != ref.data) why = which + "data pointer differs";
    else if (got.ndim != ref.ndim) why = which + "rank differs";
    else if (std::memcmp(&got.dtype, &ref.dtype, sizeof(DLDataType)) != 0) why = which + "dtype differs";
    else if (ref.ndim > 0 && std::memcmp(got.shape, ref.shape, sizeof(int64_t) * ref.ndim) != 0) why = which + "shape differs";
    else if (pypto::is_row_major(got) != pypto::is_row_major(ref)) why = which + "contiguity differs";
  }
  Py_DECREF(seq);
  if (!why.empty()) {
    dlclose(h);
    return why;
  }
  set_torch_tensor_type(tensor_type);
  g_torch_read = fn;  // the library stays loaded for the life of the process
  g_torch_begin_write = begin_write;
  g_torch_exact_type = type;
  for (int i = 0; i < g_cached; ++i)
    if (g_cache[i].kind == ReaderKind::kExchangeApi && PyType_IsSubtype(g_cache[i].type, type))
      g_cache[i].kind = ReaderKind::kTorchFast;
  return "";
}

void set_torch_tensor_type(PyObject* tensor_type) {
  if (!PyType_Check(tensor_type) || g_torch_type != nullptr) return;
  auto* type = reinterpret_cast<PyTypeObject*>(tensor_type);
  Py_INCREF(type);
  g_torch_type = type;
  for (int i = 0; i < g_cached; ++i) g_cache[i].torch = PyType_IsSubtype(g_cache[i].type, type);
}

namespace {
// torch's Python-level answers, for tensors the fast reader's library is not there (yet) to ask.
PyObject* torch_attr(const char* module, const char* name) {
  PyObject* m = PyImport_ImportModule(module);
  if (m == nullptr) return nullptr;
  PyObject* f = PyObject_GetAttrString(m, name);
  Py_DECREF(m);
  return f;
}
}  // namespace

int torch_begin_write_slow(PyObject* obj) noexcept {
  PyObject* rg = PyObject_GetAttrString(obj, "requires_grad");
  if (rg == nullptr) return -1;
  const bool requires_grad = rg == Py_True;
  Py_DECREF(rg);
  if (requires_grad) {
    PyObject* f = torch_attr("torch", "is_grad_enabled");
    PyObject* on = f ? PyObject_CallNoArgs(f) : nullptr;
    Py_XDECREF(f);
    if (on == nullptr) return -1;
    const bool enabled = on == Py_True;
    Py_DECREF(on);
    if (enabled) return 1;
  }
  PyObject* inf = PyObject_CallMethod(obj, "is_inference", nullptr);
  if (inf == nullptr) return -1;
  const bool inference = inf == Py_True;
  Py_DECREF(inf);
  if (inference) {
    PyObject* f = torch_attr("torch", "is_inference_mode_enabled");
    PyObject* on = f ? PyObject_CallNoArgs(f) : nullptr;
    Py_XDECREF(f);
    if (on == nullptr) return -1;
    const bool mode = on == Py_True;
    Py_DECREF(on);
    return mode ? 0 : 2;
  }
  PyObject* f = torch_attr("torch.autograd.graph", "increment_version");
  PyObject* r = f ? PyObject_CallOneArg(f, obj) : nullptr;
  Py_XDECREF(f);
  if (r == nullptr) return -1;
  Py_DECREF(r);
  return 0;
}

const char* type_name(PyObject* obj) noexcept {
  PyTypeObject* t = Py_TYPE(obj);
  if (std::strcmp(t->tp_name, "Tensor") == 0 || std::strcmp(t->tp_name, "torch.Tensor") == 0) return "torch.Tensor";
  return t->tp_name;
}

}  // namespace pypto::py
