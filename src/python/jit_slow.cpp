// jit_slow: the slow paths of a JitFunction call — call-site layouts, defaults, constant ids, guards by value, the
// miss — reached from the hit path (jit_call.cpp) only through [[unlikely]] branches.
#include <cstring>
#include <vector>

#include "core/binder.h"
#include "core/messages.h"
#include "python/const_interner.h"
#include "python/jit_cold.h"
#include "python/tensor_reader.h"

namespace pypto::py {

void refresh_defaults(JitState& st) {
  PyObject* d = PyFunction_GetDefaults(st.fn);
  PyObject* kd = PyFunction_GetKwDefaults(st.fn);
  Py_XINCREF(d);
  Py_XINCREF(kd);
  Py_XSETREF(st.defaults_seen, d);
  Py_XSETREF(st.kwdefaults_seen, kd);
  const int np = static_cast<int>(st.table.params.size());
  st.defaults.assign(np, nullptr);
  if (d != nullptr) {
    const Py_ssize_t nd = PyTuple_GET_SIZE(d);
    for (Py_ssize_t i = 0; i < nd; ++i) {
      const Py_ssize_t pos = st.n_positional - nd + i;
      if (pos >= 0 && pos < np) st.defaults[pos] = PyTuple_GET_ITEM(d, i);
    }
  }
  if (kd != nullptr && PyDict_Check(kd))
    for (int i = 0; i < np; ++i)
      if (PyObject* v = PyDict_GetItem(kd, st.names[i])) st.defaults[i] = v;
}

bool learn_call_shape(JitState& st, Py_ssize_t nargs, PyObject* kwnames) {
  const int np = static_cast<int>(st.table.params.size());
  if (nargs > st.n_positional) {
    raise(PyExc_TypeError, msg::too_many_positional(st.table, st.n_positional, nargs));
    return false;
  }
  int8_t src[kMaxParams];
  for (int i = 0; i < np; ++i) src[i] = i < nargs ? CallShape::kPositional : CallShape::kDefault;
  const Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nk; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    int j = 0;
    while (j < np && st.names[j] != name) ++j;
    if (j == np)
      for (j = 0; j < np; ++j)
        if (PyUnicode_Compare(st.names[j], name) == 0) break;
    if (j == np) {
      raise(PyExc_TypeError, msg::unexpected_keyword(st.table, PyUnicode_AsUTF8(name)));
      return false;
    }
    if (src[j] != CallShape::kDefault) {
      raise(PyExc_TypeError, msg::multiple_values(st.table, j));
      return false;
    }
    src[j] = static_cast<int8_t>(k);
  }
  CallShape& cs = st.call_shape;
  Py_XINCREF(kwnames);
  Py_XSETREF(cs.kwnames, kwnames);
  cs.nargs = nargs;
  std::memcpy(cs.src, src, sizeof(int8_t) * np);
  return true;
}

uint32_t const_id_slow(JitState& st, int c, int pos, PyObject* obj) {
  if (is_tensor_like(obj)) {
    raise(PyExc_TypeError, msg::constant_got_tensor(st.table, pos, type_name(obj)));
    return 0;
  }
  std::string err;
  const uint32_t id = interner().intern(obj, &err);
  if (id == 0) {
    if (!PyErr_Occurred())
      raise(PyExc_TypeError, msg::head(st.table, pos) + "cannot be used as a compile-time constant: " + err +
                                 "; got " + py_repr(obj));
    return 0;
  }
  ConstCache& cc = st.consts[c];
  Py_INCREF(obj);
  Py_XSETREF(cc.last, obj);
  cc.id = id;
  cc.identity_ok = !interner().last_mutable();  // a list or a mutable object: re-keyed on every call
  return id;
}

bool scalar_slow(JitState& st, int pos, PyObject* obj, PyptoScalarArg* out) {
  const int dt = st.table.params[pos].scalar_dtype;
  const bool is_float = dt == PYPTO_DT_FP16 || dt == PYPTO_DT_BF16 || dt == PYPTO_DT_FP32 || dt == PYPTO_DT_FP64;
  const std::string head = msg::head(st.table, pos);
  if (is_tensor_like(obj) || PyUnicode_Check(obj) || obj == Py_None) {
    raise(PyExc_TypeError, msg::scalar_wrong_type(st.table, pos, type_name(obj)));
    return false;
  }
  if (is_float) {
    const double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) {
      // only "not a number" is ours to explain: anything else __float__ raised (KeyboardInterrupt, the user's own
      // error) propagates untouched
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) return false;
      PyErr_Clear();
      raise(PyExc_TypeError, head + "expected a real number for pypto.Scalar[" + dtype_name(dt) + "], got " +
                                 type_name(obj));
      return false;
    }
    out->f = v;
    return true;
  }
  if (PyFloat_Check(obj)) {
    raise(PyExc_TypeError, msg::scalar_float_for_integer(st.table, pos, py_repr(obj)));
    return false;
  }
  PyObject* idx = PyNumber_Index(obj);
  if (idx == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return false;  // as for __float__ above
    PyErr_Clear();
    raise(PyExc_TypeError, head + "expected an integer for pypto.Scalar[" + dtype_name(dt) + "], got " +
                               type_name(obj));
    return false;
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
  Py_DECREF(idx);
  if (overflow) {
    raise(PyExc_OverflowError, head + "integer " + py_repr(obj) + " does not fit in 64 bits");
    return false;
  }
  out->i = v;
  return true;
}

void record_dict_versions(JitState& st) {
  for (DictWatch& w : st.dict_watch) w.version = dict_version(w.dict);
}

bool guards_unchanged(JitState& st) {
  for (const Guard& g : st.guards)
    if (guard_value(g) != g.last) return false;
  record_dict_versions(st);  // an unrelated global was rebound: trust the new versions
  return true;
}

uint32_t guards_slow(JitState& st) {
  const size_t n = st.guards.size();
  std::vector<PyObject*> now(n);
  for (size_t i = 0; i < n; ++i) {  // owned while their ids are taken (that may run Python code)
    now[i] = guard_value(st.guards[i]);
    Py_XINCREF(now[i]);
  }
  st.guard_state = st.guard_ids.state_of(st, now.data(), n);
  for (size_t i = 0; i < n; ++i) std::swap(st.guards[i].last, now[i]);  // `now` holds the values seen before
  record_dict_versions(st);
  for (PyObject* old : now) Py_XDECREF(old);  // may run weak-reference callbacks: they retire ids (guard_ids.h)
  st.guard_ids.reclaim(st);
  return st.guard_state;
}

namespace {
// (dtype code, shape tuple) per tensor argument: what the front end needs to describe a specialization, read
// from the DLTensors so that any tensor type the readers accept works.
PyObject* tensor_meta(const JitState& st, const DLTensor* dl) {
  const int nt = st.table.n_tensors();
  PyObject* meta = PyTuple_New(nt);
  if (meta == nullptr) return nullptr;
  for (int t = 0; t < nt; ++t) {
    PyObject* shape = PyTuple_New(dl[t].ndim);
    if (shape == nullptr) {
      Py_DECREF(meta);
      return nullptr;
    }
    for (int d = 0; d < dl[t].ndim; ++d) PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(dl[t].shape[d]));
    PyTuple_SET_ITEM(meta, t, Py_BuildValue("(iN)", dtype_from_dlpack(dl[t].dtype), shape));
  }
  return meta;
}

// The fields of a compiler.pipeline.MissResult, read by attribute name (the GIL is held while this lives). The
// strings point into the attribute values this holds.
struct MissFields {
  const char* path = nullptr;  // nullptr: the build stopped before a library (host_options.compile_stage)
  unsigned long long written = 0;
  double seconds = 0;
  PyObject* info = nullptr;
  const char* key_text = nullptr;
  PyObject* held[5] = {};
  MissFields() = default;
  MissFields(const MissFields&) = delete;
  MissFields& operator=(const MissFields&) = delete;
  ~MissFields() {
    for (PyObject* o : held) Py_XDECREF(o);
  }
};

bool read_miss_result(PyObject* res, MissFields* f) {
  static const char* const kNames[5] = {"library", "written_mask", "compile_seconds", "spec_key", "info"};
  for (int i = 0; i < 5; ++i) {
    f->held[i] = PyObject_GetAttrString(res, kNames[i]);
    if (f->held[i] == nullptr) return false;
    if (i == 0 && f->held[0] == Py_None) return true;
  }
  f->path = PyUnicode_AsUTF8(f->held[0]);
  f->key_text = f->path ? PyUnicode_AsUTF8(f->held[3]) : nullptr;
  if (f->key_text == nullptr) return false;
  f->written = PyLong_AsUnsignedLongLongMask(f->held[1]);
  f->seconds = PyFloat_AsDouble(f->held[2]);
  f->info = f->held[4];
  return !PyErr_Occurred();
}
}  // namespace

bool reread_tensors(JitState& st, PyObject** slots, DLTensor* dl, ReadSlot* rs, uint64_t held, const uint64_t* key,
                    int n_tensor_words, uint64_t* readonly) {
  const ParamTable& table = st.table;
  for (int t = 0; t < table.n_tensors(); ++t) {
    if (held >> t & 1) continue;  // its buffer/capsule export keeps the memory alive and unchanged
    PyObject* obj = slots[table.tensor_pos[t]];
    const uint64_t bit = uint64_t{1} << t;
    if (Py_TYPE(obj) == g_torch_exact_type && g_torch_read != nullptr && g_torch_read(obj, &dl[t])) {
      rs[t].torch = true;  // the launch's own test compares with the type seen before the compile
      continue;
    }
    ReadSlot slot;
    const int rc = read_tensor(obj, &dl[t], &slot);
    if (rc != 1) return tensor_read_error(st, t, obj, rc) != nullptr;
    if (slot.cleanup) {  // a reader that now holds an export: the first read held none; the object changed kind
      release_slot(&slot);
      raise(PyExc_RuntimeError, msg::head(table, table.tensor_pos[t]) + "the argument changed while Python code ran "
                                "during this call");
      return false;
    }
    *readonly = (*readonly & ~bit) | (slot.readonly ? bit : 0);
    rs[t].torch = slot.torch;
  }
  uint64_t again[kMaxKeyWords];
  const int n = bind_tensors(table, dl, again);
  if (n != n_tensor_words || std::memcmp(again, key, sizeof(uint64_t) * n) != 0) {
    // Python code (an __index__, a constant's __eq__, a guard, the compile) resized or replaced a tensor argument
    raise(PyExc_RuntimeError, msg::head(table) + "a tensor argument changed shape, dtype or layout while Python code "
                              "ran during this call; nothing was launched");
    return false;
  }
  return true;
}

PyObject* probe_result(const JitState& st, bool hit, const uint64_t* key, int n, const DLTensor* dl) {
  PyObject* kb = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(key), sizeof(uint64_t) * n);
  if (kb == nullptr) return nullptr;
  PyObject* meta = tensor_meta(st, dl);
  if (meta == nullptr) {
    Py_DECREF(kb);
    return nullptr;
  }
  return Py_BuildValue("(ONN)", hit ? Py_True : Py_False, kb, meta);
}

const Specialization* miss(JitState& st, PyObject** slots, const DLTensor* dl, const uint64_t* key, int n,
                           uint64_t hash) {
  st.counters.misses++;
  if (st.on_options != nullptr) {  // the reference reads its option dicts when it compiles: so do we, on a miss
    PyObject* r = PyObject_CallNoArgs(st.on_options);
    if (r == nullptr) return nullptr;
    Py_DECREF(r);
  }
  if (!st.backend_reason.empty()) {
    raise_pypto("BackendUnavailableError", msg::head(st.table) + st.backend_reason);
    return nullptr;
  }
  const int np = static_cast<int>(st.table.params.size());
  PyObject* args = PyTuple_New(np);
  if (args == nullptr) return nullptr;
  for (int i = 0; i < np; ++i) {
    Py_INCREF(slots[i]);
    PyTuple_SET_ITEM(args, i, slots[i]);
  }
  PyObject* kb = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(key), sizeof(uint64_t) * n);
  PyObject* meta = kb ? tensor_meta(st, dl) : nullptr;
  PyObject* res = meta ? PyObject_CallFunctionObjArgs(st.on_miss, args, kb, meta, nullptr) : nullptr;
  Py_DECREF(args);
  Py_XDECREF(kb);
  Py_XDECREF(meta);
  if (res == nullptr) return nullptr;
  if (res == Py_None) {
    Py_DECREF(res);
    return nullptr;
  }
  MissFields f;
  if (!read_miss_result(res, &f)) {
    Py_DECREF(res);
    return nullptr;
  }
  if (f.path == nullptr) {  // stopped at host_options.compile_stage: nothing to load or launch
    Py_DECREF(res);
    return nullptr;
  }
  const char* path = f.path;
  const unsigned long long written = f.written;
  const double seconds = f.seconds;
  PyObject* info = f.info;
  const char* key_text = f.key_text;
  std::string err;
  auto module = Module::open(path, &err);
  if (!module) {
    Py_DECREF(res);
    raise_pypto("CompileError", msg::head(st.table) + err);
    return nullptr;
  }
  // the library must say it was compiled for the key it is loaded for (vocab/speckey.py)
  const char* lib_key = module->spec_key();
  if (lib_key == nullptr || std::strcmp(lib_key, key_text) != 0) {
    std::string m = msg::head(st.table) + "the library '" + path + "' was compiled for " +
                    (lib_key ? "another specialization (" + std::string(lib_key) + ")" : std::string("no recorded key")) +
                    ", not for this call's (" + key_text + "); refusing to load it";
    Py_DECREF(res);
    raise_pypto("CompileError", m);
    return nullptr;
  }
  Py_INCREF(info);
  LoadedLibrary lib{std::move(module), path, written, seconds,
                    std::shared_ptr<void>(info, [](void* o) {
                      PyGILState_STATE g = PyGILState_Ensure();
                      Py_DECREF(static_cast<PyObject*>(o));
                      PyGILState_Release(g);
                    })};
  Py_DECREF(res);
  st.counters.compile_seconds += seconds;
  return install_specialization(st.specs, st.table, key, n, hash, dl, std::move(lib));
}

}  // namespace pypto::py
