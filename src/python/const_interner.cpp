// const_interner: canonical encodings of constant values (see const_interner.h).
#include "python/const_interner.h"

#include <cstring>

namespace pypto::py {

namespace {

PyObject* enum_type() {
  static PyObject* t = [] {
    PyObject* mod = PyImport_ImportModule("enum");
    PyObject* e = mod ? PyObject_GetAttrString(mod, "Enum") : nullptr;
    Py_XDECREF(mod);
    PyErr_Clear();
    return e;
  }();
  return t;
}

// pypto.vocab.constkey.key: the value key of any other object (dataclass fields, pickle's arguments and state).
PyObject* key_function() {
  static PyObject* f = [] {
    PyObject* mod = PyImport_ImportModule("pypto.vocab.constkey");
    PyObject* k = mod ? PyObject_GetAttrString(mod, "key") : nullptr;
    Py_XDECREF(mod);
    PyErr_Clear();
    return k;
  }();
  return f;
}

std::string exception_text() {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  std::string text = "its key function failed";
  if (v != nullptr) {
    PyObject* s = PyObject_Str(v);
    const char* u = s ? PyUnicode_AsUTF8(s) : nullptr;
    if (u != nullptr) text = u;
    Py_XDECREF(s);
  }
  Py_XDECREF(t);
  Py_XDECREF(v);
  Py_XDECREF(tb);
  PyErr_Clear();
  return text;
}

void put_ptr(std::string* out, const void* p) { out->append(reinterpret_cast<const char*>(&p), sizeof p); }
void put_u64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }

}  // namespace

ConstInterner& interner() {
  static ConstInterner* inst = new ConstInterner();  // never destroyed: it may outlive the interpreter's objects
  return *inst;
}

ConstInterner::~ConstInterner() {
  for (PyObject* o : values_) Py_XDECREF(o);
  for (PyObject* o : kept_) Py_XDECREF(o);
}

void ConstInterner::keep(PyObject* obj) {
  if (!kept_set_.insert(obj).second) return;  // kept already
  Py_INCREF(obj);
  kept_.push_back(obj);
}

// The dispatcher: one case per kind of value, in the order that decides (bool before int, enum members before
// the int/float/str they derive from, exact containers, numpy scalars, then anything else by its key).
bool ConstInterner::encode(PyObject* obj, bool plain, int depth, std::string* out, std::string* error) {
  if (depth > 32) {
    *error = "constant nests too deeply";
    return false;
  }
  if (obj == nullptr || obj == Py_None || PyBool_Check(obj)) {
    out->push_back(obj == nullptr ? '0' : obj == Py_None ? 'N' : obj == Py_True ? 'T' : 'F');
    return true;
  }
  PyTypeObject* type = Py_TYPE(obj);
  const bool exact = type == &PyLong_Type || type == &PyFloat_Type || type == &PyUnicode_Type;
  PyObject* et = enum_type();
  if (!exact && et != nullptr && PyObject_IsInstance(obj, et) == 1) {  // enum members (incl. IntEnum, pypto dtypes)
    out->push_back('E');
    put_ptr(out, obj);
    keep(obj);
    return true;
  }
  PyErr_Clear();
  if (PyLong_Check(obj) || PyFloat_Check(obj) || PyUnicode_Check(obj)) return encode_scalar(obj, exact, out, error);
  if (PyTuple_CheckExact(obj) || PyList_CheckExact(obj)) return encode_sequence(obj, plain, depth, out, error);
  if (type->tp_as_buffer != nullptr && type->tp_as_number != nullptr && encode_buffer_scalar(obj, out)) return true;
  if (plain) return false;  // a guard value: keyed by identity (guard_ids.cpp)
  return encode_by_key(obj, depth, out, error);
}

// int, float, str and their subclasses (a subclass is keyed by type and value).
bool ConstInterner::encode_scalar(PyObject* obj, bool exact, std::string* out, std::string* error) {
  if (!exact) {
    out->push_back('C');
    put_ptr(out, Py_TYPE(obj));
    keep(reinterpret_cast<PyObject*>(Py_TYPE(obj)));
  }
  if (PyLong_Check(obj)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (!overflow) {
      out->push_back('i');
      put_u64(out, static_cast<uint64_t>(v));
      return true;
    }
    // hexadecimal: exact, and not subject to Python's limit on decimal conversions (4300 digits)
    PyObject* s = PyNumber_ToBase(obj, 16);
    if (s == nullptr) return false;
    Py_ssize_t n;
    const char* u = PyUnicode_AsUTF8AndSize(s, &n);
    out->push_back('I');
    put_u64(out, static_cast<uint64_t>(n));
    out->append(u, n);
    Py_DECREF(s);
    return true;
  }
  if (PyFloat_Check(obj)) {
    double d = PyFloat_AS_DOUBLE(obj);
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    out->push_back('f');
    put_u64(out, bits);
    return true;
  }
  Py_ssize_t n;
  const char* u = PyUnicode_AsUTF8AndSize(obj, &n);
  if (u == nullptr) {
    PyErr_Clear();
    *error = "a str constant must be encodable as UTF-8";
    return false;
  }
  out->push_back('s');
  put_u64(out, static_cast<uint64_t>(n));
  out->append(u, n);
  return true;
}

// Exact tuples and lists, item by item (a list is mutable: its constant is re-keyed on every call).
bool ConstInterner::encode_sequence(PyObject* obj, bool plain, int depth, std::string* out, std::string* error) {
  const bool tuple = PyTuple_CheckExact(obj);
  if (!tuple) mutable_seen_ = true;
  const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(obj) : PyList_GET_SIZE(obj);
  out->push_back(tuple ? '(' : '[');
  put_u64(out, static_cast<uint64_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = tuple ? PyTuple_GET_ITEM(obj, i) : PyList_GET_ITEM(obj, i);
    if (!encode(item, plain, depth + 1, out, error)) return false;
  }
  return true;
}

// numpy scalars: (type, raw bytes). False (nothing written) for a buffer that is not 0-d.
bool ConstInterner::encode_buffer_scalar(PyObject* obj, std::string* out) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  const bool scalar = view.ndim == 0;
  if (scalar) {
    out->push_back('D');
    put_ptr(out, Py_TYPE(obj));
    keep(reinterpret_cast<PyObject*>(Py_TYPE(obj)));
    put_u64(out, static_cast<uint64_t>(view.len));
    out->append(static_cast<const char*>(view.buf), view.len);
  }
  PyBuffer_Release(&view);
  return scalar;
}

bool ConstInterner::encode_by_key(PyObject* obj, int depth, std::string* out, std::string* error) {
  PyTypeObject* type = Py_TYPE(obj);
  PyObject* fn = key_function();
  PyObject* res = fn ? PyObject_CallOneArg(fn, obj) : nullptr;
  const char* tag = nullptr;
  if (res != nullptr && PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 3)
    tag = PyUnicode_Check(PyTuple_GET_ITEM(res, 0)) ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(res, 0)) : nullptr;
  if (tag == nullptr || tag[0] == 0 || tag[1] != 0) {
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) {  // KeyboardInterrupt, SystemExit: untouched
      Py_XDECREF(res);
      return false;
    }
    *error = std::string("unsupported constant type '") + type->tp_name + "': " +
             (PyErr_Occurred() ? exception_text() : std::string("no value key"));
    Py_XDECREF(res);
    return false;
  }
  // the type is part of the key (kept alive, so its address is never reused), then the value key, recursively
  out->push_back(tag[0]);
  put_ptr(out, type);
  keep(reinterpret_cast<PyObject*>(type));
  if (PyObject_IsTrue(PyTuple_GET_ITEM(res, 2)) == 1) mutable_seen_ = true;
  PyErr_Clear();
  const bool ok = encode(PyTuple_GET_ITEM(res, 1), /*allow_identity=*/false, depth + 1, out, error);
  Py_DECREF(res);
  return ok;
}

bool ConstInterner::encode_plain(PyObject* obj, std::string* out) {
  std::string error;
  out->clear();
  const bool saved = mutable_seen_;
  const bool ok = encode(obj, /*plain=*/true, 0, out, &error);
  mutable_seen_ = saved;
  PyErr_Clear();
  return ok;
}

uint32_t ConstInterner::intern(PyObject* obj, std::string* error) {
  std::string enc;
  mutable_seen_ = false;
  if (!encode(obj, /*plain=*/false, 0, &enc, error)) return 0;
  auto it = ids_.find(enc);
  if (it != ids_.end()) return it->second;
  Py_XINCREF(obj);
  values_.push_back(obj);
  const uint32_t id = static_cast<uint32_t>(values_.size());
  ids_.emplace(std::move(enc), id);
  return id;
}

uint32_t ConstInterner::intern_ids(const uint32_t* ids, size_t n) {
  std::string enc(reinterpret_cast<const char*>(ids), n * sizeof(uint32_t));
  auto it = state_ids_.find(enc);
  if (it != state_ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(state_ids_.size() + 1);
  state_ids_.emplace(std::move(enc), id);
  return id;
}

}  // namespace pypto::py
