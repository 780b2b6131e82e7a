// jit_function: the call path of a decorated kernel.
//
// Hit path (no Python bytecode, no allocation, no lock): bind positional/keyword arguments against the parameter
// table (interned-pointer keyword match), fill defaults, read tensors through the per-type reader, check them
// (core/binder), map constants to ids (identity first), check guards (identity), pack + hash the key, probe the
// table, launch. Everything else — messages, the miss, introspection — is on cold paths below.
#include "python/jit_function.h"

#include <structmember.h>

#include <cstring>

#include "core/binder.h"
#include "python/const_interner.h"
#include "python/jit_state.h"
#include "python/profile.h"
#include "python/tensor_reader.h"

namespace pypto::py {

namespace {

struct JitFunctionObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  JitState* state;
  PyObject* dict;         // __name__, __doc__, __wrapped__ ... set by the front end
  PyObject* frontend;     // the Python-side kernel object: attribute fallback (explain, export, ...)
  PyObject* weakrefs;
};

enum class Mode { kCall, kProbe, kCompile };

// ---------------------------------------------------------------------------------------------------------
// cold helpers

PyObject* pypto_error_type(const char* name) {
  PyObject* mod = PyImport_ImportModule("pypto.errors");
  if (mod == nullptr) return nullptr;
  PyObject* t = PyObject_GetAttrString(mod, name);
  Py_DECREF(mod);
  return t;
}

[[gnu::cold]] PyObject* raise_pypto(const char* type_name, const std::string& msg) {
  PyObject* t = pypto_error_type(type_name);
  if (t == nullptr) return nullptr;
  PyErr_SetString(t, msg.c_str());
  Py_DECREF(t);
  return nullptr;
}

[[gnu::cold]] PyObject* raise(PyObject* type, const std::string& msg) {
  PyErr_SetString(type, msg.c_str());
  return nullptr;
}

std::string head(const JitState& st) { return "kernel '" + st.table.kernel + "': "; }
std::string head(const JitState& st, int pos) {
  return "kernel '" + st.table.kernel + "': parameter '" + st.table.params[pos].name + "': ";
}

std::string py_str(PyObject* o) {
  PyObject* s = PyObject_Repr(o);
  if (s == nullptr) {
    PyErr_Clear();
    return "<?>";
  }
  std::string r = PyUnicode_AsUTF8(s);
  Py_DECREF(s);
  return r.size() > 80 ? r.substr(0, 77) + "..." : r;
}

// Recomputes the default value of each parameter from fn.__defaults__ / fn.__kwdefaults__ (they may be
// reassigned at any time; the call path compares their identity).
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

bool has_mutable_part(PyObject* o) {
  if (PyList_Check(o)) return true;
  if (PyTuple_Check(o))
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i)
      if (has_mutable_part(PyTuple_GET_ITEM(o, i))) return true;
  return false;
}

// Constant parameter `c` (position `pos`): id of `obj`, updating the identity cache. 0 with an exception set.
// numpy scalars (np.float32(2.0)) and 0-d arrays export a buffer but are numbers, not tensors.
bool is_tensor_like(PyObject* obj) {
  if (PyLong_Check(obj) || PyFloat_Check(obj) || PyUnicode_Check(obj)) return false;
  const ReaderKind k = reader_kind(obj);
  if (k == ReaderKind::kNone) return false;
  if (k != ReaderKind::kBuffer || Py_TYPE(obj)->tp_as_number == nullptr) return true;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return true;
  }
  const bool scalar = view.ndim == 0;
  PyBuffer_Release(&view);
  return !scalar;
}

[[gnu::noinline]] uint32_t const_id_slow(JitState& st, int c, int pos, PyObject* obj) {
  if (is_tensor_like(obj)) {
    raise(PyExc_TypeError, head(st, pos) + "is a compile-time constant (no pypto.Tensor annotation), got a tensor (" +
                               type_name(obj) + "); annotate it as pypto.Tensor(...) to pass a tensor");
    return 0;
  }
  std::string err;
  const uint32_t id = interner().intern(obj, /*allow_identity=*/false, &err);
  if (id == 0) {
    if (!PyErr_Occurred())
      raise(PyExc_TypeError, head(st, pos) + "cannot be used as a compile-time constant: " + err + "; got " +
                                 py_str(obj));
    return 0;
  }
  ConstCache& cc = st.consts[c];
  Py_INCREF(obj);
  Py_XSETREF(cc.last, obj);
  cc.id = id;
  cc.identity_ok = !has_mutable_part(obj);
  return id;
}

PyObject* guard_value(const Guard& g) {
  return g.name ? PyDict_GetItem(g.container, g.name) : PyCell_GET(g.container);
}

#if PY_VERSION_HEX < 0x030C0000
constexpr bool kDictVersions = true;
inline uint64_t dict_version(PyObject* d) { return reinterpret_cast<PyDictObject*>(d)->ma_version_tag; }
#else
constexpr bool kDictVersions = false;
inline uint64_t dict_version(PyObject*) { return 0; }
#endif

void record_dict_versions(JitState& st) {
  for (DictWatch& w : st.dict_watch) w.version = dict_version(w.dict);
}

// Some globals dict changed since its guards were last seen: are the guarded values themselves unchanged?
[[gnu::noinline]] bool guards_unchanged(JitState& st) {
  for (const Guard& g : st.guards)
    if (guard_value(g) != g.last) return false;
  record_dict_versions(st);  // an unrelated global was rebound: trust the new versions
  return true;
}

// A guarded global changed: key every guard by value and intern the combination.
[[gnu::noinline]] uint32_t guards_slow(JitState& st) {
  std::vector<uint32_t> ids;
  ids.reserve(st.guards.size());
  std::string err;
  for (Guard& g : st.guards) {
    PyObject* v = guard_value(g);
    ids.push_back(interner().intern(v, /*allow_identity=*/true, &err));
    Py_XINCREF(v);
    Py_XSETREF(g.last, v);
  }
  st.guard_state = interner().intern_ids(ids.data(), ids.size());
  record_dict_versions(st);
  return st.guard_state;
}

[[gnu::cold]] PyObject* bind_error_missing(JitState& st) {
  std::string missing;
  for (size_t i = 0; i < st.table.params.size(); ++i)
    if (st.call_shape.src[i] == CallShape::kDefault && st.defaults[i] == nullptr)
      missing += (missing.empty() ? "'" : ", '") + st.table.params[i].name + "'";
  return raise(PyExc_TypeError, head(st) + "missing required argument(s) " + missing);
}

// A call site whose layout is not cached: match keywords (interned pointer first), raise the binding errors, and
// remember the layout for the next call. False with an exception set.
[[gnu::noinline]] bool learn_call_shape(JitState& st, Py_ssize_t nargs, PyObject* kwnames) {
  const int np = static_cast<int>(st.table.params.size());
  if (nargs > st.n_positional) {
    raise(PyExc_TypeError, head(st) + "takes " + std::to_string(st.n_positional) + " positional argument(s) but " +
                               std::to_string(nargs) + " were given");
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
      raise(PyExc_TypeError, head(st) + "got an unexpected keyword argument '" + PyUnicode_AsUTF8(name) + "'");
      return false;
    }
    if (src[j] != CallShape::kDefault) {
      raise(PyExc_TypeError, head(st) + "got multiple values for argument '" + st.table.params[j].name + "'");
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

// A reader's exception text, first line only: torch appends its C++ backtrace ("Exception raised from ...").
// A meta tensor is named as such instead of in DLPack's words.
std::string reader_message(PyObject* value) {
  PyObject* s = PyObject_Str(value);
  if (s == nullptr) {
    PyErr_Clear();
    return "<?>";
  }
  const char* utf8 = PyUnicode_AsUTF8(s);
  std::string m = utf8 ? utf8 : "<?>";
  if (utf8 == nullptr) PyErr_Clear();
  Py_DECREF(s);
  m = m.substr(0, m.find('\n'));
  if (m.find("on meta") != std::string::npos)
    return "it is a meta tensor (a shape without data); pypto kernels read and write CPU memory";
  return m.size() > 300 ? m.substr(0, 297) + "..." : m;
}

[[gnu::cold]] PyObject* tensor_read_error(JitState& st, int t, PyObject* obj, int rc) {
  const int pos = st.table.tensor_pos[t];
  if (rc < 0) {  // the reader raised: keep its message, add ours in front
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    std::string inner = value ? reader_message(value) : "";
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return raise(PyExc_TypeError, head(st, pos) + "cannot read the tensor argument (" + type_name(obj) + "): " + inner);
  }
  return raise(PyExc_TypeError, head(st, pos) + "expected a tensor (torch.Tensor, numpy.ndarray or an object with "
                                    "__dlpack__) for " + st.table.describe_tensor(t) + ", got " + type_name(obj) +
                                    " " + py_str(obj));
}

[[gnu::cold]] PyObject* tensor_check_error(JitState& st, const DLTensor* dl, PyObject** slots) {
  BindError e = tensor_error(st.table, dl);
  // dtypes pypto has no code for are best named by the framework itself (e.g. numpy's 'complex64')
  for (int t = 0; t < st.table.n_tensors(); ++t) {
    if (dtype_from_dlpack(dl[t].dtype) < 0 && e.message.find("'" + st.table.tensor(t).name + "'") != std::string::npos &&
        e.kind == ErrorKind::kType) {
      if (PyObject* d = PyObject_GetAttrString(slots[st.table.tensor_pos[t]], "dtype")) {
        PyObject* s = PyObject_Str(d);
        if (s) {
          std::string expected = st.table.tensor(t).tensor.dtype == kAnyDType
                                     ? "a dtype pypto supports" : dtype_name(st.table.tensor(t).tensor.dtype);
          e.message = head(st, st.table.tensor_pos[t]) + "expected dtype " + expected + ", got " + PyUnicode_AsUTF8(s);
          Py_DECREF(s);
        }
        Py_DECREF(d);
      }
      PyErr_Clear();
    }
  }
  return raise(e.kind == ErrorKind::kType ? PyExc_TypeError : PyExc_ValueError, e.message);
}

[[gnu::cold]] bool scalar_slow(JitState& st, int pos, PyObject* obj, PyptoScalarArg* out) {
  const int dt = st.table.params[pos].scalar_dtype;
  const bool is_float = dt == PYPTO_DT_FP16 || dt == PYPTO_DT_BF16 || dt == PYPTO_DT_FP32 || dt == PYPTO_DT_FP64;
  if (is_tensor_like(obj) || PyUnicode_Check(obj) || obj == Py_None) {
    raise(PyExc_TypeError, head(st, pos) + "expected a " + dtype_name(dt) + " scalar (pypto.Scalar), got " +
                               type_name(obj));
    return false;
  }
  if (is_float) {
    const double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      raise(PyExc_TypeError, head(st, pos) + "expected a real number for pypto.Scalar[" + dtype_name(dt) + "], got " +
                                 type_name(obj));
      return false;
    }
    out->f = v;
    return true;
  }
  if (PyFloat_Check(obj)) {
    raise(PyExc_TypeError, head(st, pos) + "expected an integer for pypto.Scalar[" + dtype_name(dt) + "], got float " +
                               py_str(obj));
    return false;
  }
  PyObject* idx = PyNumber_Index(obj);
  if (idx == nullptr) {
    PyErr_Clear();
    raise(PyExc_TypeError, head(st, pos) + "expected an integer for pypto.Scalar[" + dtype_name(dt) + "], got " +
                               type_name(obj));
    return false;
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
  Py_DECREF(idx);
  if (overflow) {
    raise(PyExc_OverflowError, head(st, pos) + "integer " + py_str(obj) + " does not fit in 64 bits");
    return false;
  }
  out->i = v;
  return true;
}

// (dtype code, shape tuple) per tensor argument: what the front end needs to describe a specialization, read
// from the DLTensors so that any tensor type the readers accept works (cold path).
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

int64_t count_elements(const DLTensor* dl, int nt) noexcept {
  int64_t elements = 0;
  for (int t = 0; t < nt; ++t) {
    int64_t e = 1;
    for (int d = 0; d < dl[t].ndim; ++d) e *= dl[t].shape[d];
    elements += e;
  }
  return elements;
}

// Miss: ask Python to build (trace + codegen + compile, cached on disk), load it, insert it.
// Returns the specialization, or NULL with an exception set, or NULL without one when the build stopped early
// (host_options.compile_stage) and there is nothing to launch.
[[gnu::noinline]] const Specialization* miss(JitState& st, PyObject** slots, const DLTensor* dl,
                                             const uint64_t* key, int n, uint64_t hash) {
  st.counters.misses++;
  if (!st.backend_reason.empty()) {
    raise_pypto("BackendUnavailableError", head(st) + st.backend_reason);
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
  const char* path = nullptr;
  unsigned long long written = 0;
  double seconds = 0;
  PyObject* info = nullptr;
  if (!PyArg_ParseTuple(res, "sKdO", &path, &written, &seconds, &info)) {
    Py_DECREF(res);
    return nullptr;
  }
  std::string err;
  auto module = Module::open(path, &err);
  if (!module) {
    Py_DECREF(res);
    raise_pypto("CompileError", head(st) + err);
    return nullptr;
  }
  auto spec = std::make_unique<Specialization>();
  spec->key.assign(key, key + n);
  spec->hash = hash;
  spec->entry = module->entry();
  spec->module = std::move(module);
  spec->written_mask = written;
  if (st.table.all_dims_keyed) spec->elements = count_elements(dl, st.table.n_tensors());
  spec->library_path = path;
  spec->compile_seconds = seconds;
  Py_INCREF(info);
  spec->user = std::shared_ptr<void>(info, [](void* o) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(static_cast<PyObject*>(o));
    PyGILState_Release(g);
  });
  Py_DECREF(res);
  st.counters.compile_seconds += seconds;
  return st.specs.insert(std::move(spec));
}

// Releases what the tensor readers acquired, on every exit path.
struct ReadScope {
  ReadSlot* slots;
  int n = 0;
  [[gnu::always_inline]] ~ReadScope() {
    for (int i = 0; i < n; ++i)
      if (slots[i].cleanup) release_slot(&slots[i]);
  }
};

// ---------------------------------------------------------------------------------------------------------
// the call

template <Mode mode>
PyObject* call_impl(JitFunctionObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  JitState& st = *self->state;
  const ParamTable& table = st.table;
  const int np = static_cast<int>(table.params.size());
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PYPTO_PROF_START;

  // 1. bind: the call site's layout is cached (learn_call_shape raises every binding error on a new layout)
  if (PyFunction_GET_DEFAULTS(st.fn) != st.defaults_seen || PyFunction_GET_KW_DEFAULTS(st.fn) != st.kwdefaults_seen)
    [[unlikely]] refresh_defaults(st);
  const CallShape& cs = st.call_shape;
  if (kwnames != cs.kwnames || nargs != cs.nargs) [[unlikely]] {
    if (!learn_call_shape(st, nargs, kwnames)) return nullptr;
  }
  PyObject* slots[kMaxParams];
  PyObject* const* kwargs = args + nargs;
  PyObject* const* defaults = st.defaults.data();
  for (int i = 0; i < np; ++i) {
    const int src = cs.src[i];
    PyObject* v = src == CallShape::kPositional ? args[i] : src >= 0 ? kwargs[src] : defaults[i];
    if (v == nullptr) [[unlikely]] return bind_error_missing(st);
    slots[i] = v;
  }
  PYPTO_PROF_MARK(kBind);

  // 2. tensors: read and check
  const int nt = table.n_tensors();
  DLTensor dl[kMaxParams];
  ReadSlot rs[kMaxParams];
  ReadScope scope{rs};
  uint64_t readonly = 0;
  // locals: the compiler cannot keep globals or the table's vectors in registers across the reader calls
  const PyTypeObject* const torch_type = g_torch_exact_type;
  const TorchReadFn torch_read = g_torch_read;
  const int* const tensor_pos = table.tensor_pos.data();
  for (int t = 0; t < nt; ++t) {
    PyObject* obj = slots[tensor_pos[t]];
    if (Py_TYPE(obj) == torch_type && torch_read(obj, &dl[t])) [[likely]]
      continue;  // a plain torch.Tensor: nothing to release, never read-only
    const int rc = read_tensor(obj, &dl[t], &rs[t]);
    if (rc != 1) [[unlikely]] return tensor_read_error(st, t, obj, rc);
    if (rs[t].cleanup) {
      for (int u = scope.n; u < t; ++u) rs[u].cleanup = 0;  // slots skipped by the fast path
      scope.n = t + 1;
    }
    readonly |= static_cast<uint64_t>(rs[t].readonly) << t;
  }
  uint64_t key[kMaxKeyWords];
  int n = bind_tensors(table, dl, key);  // checks + the tensor part of the key
  if (n < 0) [[unlikely]] return tensor_check_error(st, dl, slots);

  // 3. runtime scalars
  PyptoScalarArg scalars[kMaxParams];
  const int ns = table.n_scalars();
  for (int s = 0; s < ns; ++s) {
    const int pos = table.scalar_pos[s];
    PyObject* obj = slots[pos];
    const int dt = table.params[pos].scalar_dtype;
    const bool is_float = dt == PYPTO_DT_FP16 || dt == PYPTO_DT_BF16 || dt == PYPTO_DT_FP32 || dt == PYPTO_DT_FP64;
    if (is_float && PyFloat_CheckExact(obj)) {
      scalars[s].f = PyFloat_AS_DOUBLE(obj);
    } else if (!is_float && PyLong_CheckExact(obj)) {
      int overflow = 0;
      scalars[s].i = PyLong_AsLongLongAndOverflow(obj, &overflow);
      if (overflow) [[unlikely]] return raise(PyExc_OverflowError, head(st, pos) + "integer does not fit in 64 bits");
    } else if (!scalar_slow(st, pos, obj, &scalars[s])) [[unlikely]] {
      return nullptr;
    }
  }

  PYPTO_PROF_MARK(kRead);

  // 4. key: constants, guards (the tensor words are in already)
  const int nc = table.n_constexprs();
  for (int c = 0; c < nc; ++c) {
    const int pos = table.constexpr_pos[c];
    PyObject* obj = slots[pos];
    const ConstCache& cc = st.consts[c];
    uint32_t id = cc.id;
    if (obj != cc.last || !cc.identity_ok) [[unlikely]] {
      id = const_id_slow(st, c, pos, obj);
      if (id == 0) return nullptr;
    }
    key[n++] = id;
  }
  PYPTO_PROF_MARK(kKey);
  if (!st.guards.empty()) {
    uint32_t gs = st.guard_state;
    if (!st.dict_watch.empty()) {  // versions of the globals dicts, then the closure cells by identity
      bool same = true;
      for (const DictWatch& w : st.dict_watch) same &= dict_version(w.dict) == w.version;
      for (int i : st.cell_guards) same &= PyCell_GET(st.guards[i].container) == st.guards[i].last;
      if (!same && !guards_unchanged(st)) [[unlikely]] gs = guards_slow(st);
    } else {
      for (const Guard& g : st.guards) {
        if (guard_value(g) != g.last) [[unlikely]] {
          gs = guards_slow(st);
          break;
        }
      }
    }
    key[n++] = gs;
  }

  PYPTO_PROF_MARK(kGuards);

  // 5. lookup
  const uint64_t hash = hash_key(key, n);
  PYPTO_PROF_MARK(kKey);
  const Specialization* spec = st.specs.find(key, n, hash);
  if constexpr (mode == Mode::kProbe) {
    PyObject* kb = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(key), sizeof(uint64_t) * n);
    if (kb == nullptr) return nullptr;
    PyObject* meta = tensor_meta(st, dl);
    if (meta == nullptr) {
      Py_DECREF(kb);
      return nullptr;
    }
    return Py_BuildValue("(ONN)", spec ? Py_True : Py_False, kb, meta);
  }
  const bool spec_was_hit = spec != nullptr;
  if (spec == nullptr) [[unlikely]] {
    spec = miss(st, slots, dl, key, n, hash);
    if (spec == nullptr) {
      if (PyErr_Occurred()) return nullptr;
      Py_RETURN_NONE;  // stopped at host_options.compile_stage: nothing to launch
    }
  } else {
    st.counters.hits++;
  }
  if constexpr (mode == Mode::kCompile) {
    Py_RETURN_NONE;
  }

  PYPTO_PROF_MARK(kLookup);

  // 6. launch
  PyptoTensorArg targs[kMaxParams];
  for (int t = 0; t < nt; ++t) {
    targs[t].data = dl[t].data;
    targs[t].shape = dl[t].shape;
    targs[t].ndim = dl[t].ndim;
  }
  // decides whether the kernel runs without the GIL; fixed by the key unless some dim is DYNAMIC
  const int64_t elements = spec->elements >= 0 ? spec->elements : count_elements(dl, nt);
  if (readonly & spec->written_mask) [[unlikely]] {
    for (int t = 0; t < nt; ++t)
      if ((readonly & spec->written_mask) >> t & 1)
        return raise(PyExc_ValueError, head(st, table.tensor_pos[t]) +
                                           "is written by the kernel, but the argument is read-only");
  }
  char error[512];
  error[0] = '\0';
  PyptoLaunchContext ctx{st.num_threads, st.debug_mode, error, sizeof error};
  int rc;
  if (elements >= st.release_gil_elements) {
    Py_BEGIN_ALLOW_THREADS
    rc = sim_launch(spec->entry, targs, scalars, &ctx);
    Py_END_ALLOW_THREADS
  } else {
    rc = sim_launch(spec->entry, targs, scalars, &ctx);
  }
  if (rc != 0) [[unlikely]]
    return raise_pypto("KernelRuntimeError", std::strncmp(error, "kernel '", 8) == 0 ? std::string(error)
                                           : head(st) + (error[0] ? error : "the kernel reported an error"));
  PYPTO_PROF_MARK(kLaunch);
  if (spec_was_hit) PYPTO_PROF_COMMIT();
  Py_RETURN_NONE;
}

PyObject* jit_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return call_impl<Mode::kCall>(reinterpret_cast<JitFunctionObject*>(self), args, nargsf, kwnames);
}

PyObject* jit_probe(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return call_impl<Mode::kProbe>(reinterpret_cast<JitFunctionObject*>(self), args, nargs, kwnames);
}

PyObject* jit_compile(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return call_impl<Mode::kCompile>(reinterpret_cast<JitFunctionObject*>(self), args, nargs, kwnames);
}

// ---------------------------------------------------------------------------------------------------------
// construction: JitFunction(frontend, fn, params, dim_names, guards, on_miss, run_mode, num_threads, debug_mode)
//   params: [(name, kind, keyword_only, dtype, any_shape, ellipsis, format, [(dim_kind, value), ...], scalar_dtype)]
//   guards: [(globals_dict, name) | (cell, None)]

bool parse_params(JitState& st, PyObject* params) {
  PyObject* seq = PySequence_Fast(params, "params must be a sequence");
  if (seq == nullptr) return false;
  const Py_ssize_t np = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < np; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    PyObject* name;
    int kind, kw_only, dtype, any_shape, ellipsis, format, scalar_dtype;
    PyObject* dims;
    if (!PyArg_ParseTuple(item, "UipippiOi", &name, &kind, &kw_only, &dtype, &any_shape, &ellipsis, &format, &dims,
                          &scalar_dtype)) {
      Py_DECREF(seq);
      return false;
    }
    ParamSpec p;
    p.name = PyUnicode_AsUTF8(name);
    p.kind = static_cast<ParamKind>(kind);
    p.keyword_only = kw_only;
    p.tensor.dtype = dtype;
    p.tensor.any_shape = any_shape;
    p.tensor.ellipsis = ellipsis;
    p.tensor.format = format;
    p.scalar_dtype = scalar_dtype;
    PyObject* dseq = PySequence_Fast(dims, "dims must be a sequence");
    if (dseq == nullptr) {
      Py_DECREF(seq);
      return false;
    }
    for (Py_ssize_t d = 0; d < PySequence_Fast_GET_SIZE(dseq); ++d) {
      int dk;
      long long v;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(dseq, d), "iL", &dk, &v)) {
        Py_DECREF(dseq);
        Py_DECREF(seq);
        return false;
      }
      p.tensor.dims.push_back(DimSpec{static_cast<DimKind>(dk), v});
    }
    Py_DECREF(dseq);
    if (!p.keyword_only) st.n_positional++;
    st.table.params.push_back(std::move(p));
    Py_INCREF(name);
    PyUnicode_InternInPlace(&name);
    st.names.push_back(name);
  }
  Py_DECREF(seq);
  return true;
}

bool parse_guards(JitState& st, PyObject* guards) {
  PyObject* seq = PySequence_Fast(guards, "guards must be a sequence");
  if (seq == nullptr) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    PyObject *container, *name;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OO", &container, &name)) {
      Py_DECREF(seq);
      return false;
    }
    Guard g;
    if (name == Py_None) {
      if (!PyCell_Check(container)) {
        Py_DECREF(seq);
        raise(PyExc_TypeError, "a guard without a name must be a cell");
        return false;
      }
      g.name = nullptr;
    } else {
      if (!PyDict_Check(container) || !PyUnicode_Check(name)) {
        Py_DECREF(seq);
        raise(PyExc_TypeError, "a named guard must be (dict, str)");
        return false;
      }
      Py_INCREF(name);
      PyUnicode_InternInPlace(&name);
      g.name = name;
    }
    Py_INCREF(container);
    g.container = container;
    if (g.name == nullptr) {
      st.cell_guards.push_back(static_cast<int>(st.guards.size()));
    } else if (kDictVersions) {
      bool known = false;
      for (const DictWatch& w : st.dict_watch) known |= w.dict == container;
      if (!known) st.dict_watch.push_back(DictWatch{container, 0});
    }
    st.guards.push_back(g);
  }
  Py_DECREF(seq);
  return true;
}

PyObject* jit_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *frontend, *fn, *params, *dim_names, *guards, *on_miss;
  int run_mode, num_threads, debug_mode;
  static const char* kwlist[] = {"frontend", "fn", "params", "dim_names", "guards", "on_miss",
                                 "run_mode", "num_threads", "debug_mode", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOiii", const_cast<char**>(kwlist), &frontend, &fn, &params,
                                   &dim_names, &guards, &on_miss, &run_mode, &num_threads, &debug_mode))
    return nullptr;
  if (!PyFunction_Check(fn)) return raise(PyExc_TypeError, "JitFunction: fn must be a Python function");
  auto* self = reinterpret_cast<JitFunctionObject*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = jit_vectorcall;
  self->state = new JitState();
  JitState& st = *self->state;
  PyObject* name_obj = PyObject_GetAttrString(fn, "__name__");
  st.table.kernel = name_obj ? PyUnicode_AsUTF8(name_obj) : "?";
  Py_XDECREF(name_obj);
  if (!parse_params(st, params) || !parse_guards(st, guards)) {
    Py_DECREF(self);
    return nullptr;
  }
  PyObject* dn = PySequence_Fast(dim_names, "dim_names must be a sequence");
  if (dn == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(dn); ++i)
    st.table.dim_names.push_back(PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(dn, i)));
  Py_DECREF(dn);
  const std::string err = st.table.finalize();
  if (!err.empty()) {
    Py_DECREF(self);
    return raise(PyExc_TypeError, err);
  }
  st.consts.resize(st.table.n_constexprs());
  Py_INCREF(fn);
  st.fn = fn;
  Py_INCREF(on_miss);
  st.on_miss = on_miss;
  Py_INCREF(frontend);
  self->frontend = frontend;
  st.run_mode = static_cast<RunMode>(run_mode);
  st.backend_reason = backend_unavailable_reason(st.run_mode);
  st.num_threads = num_threads < 1 ? 1 : num_threads;
  st.debug_mode = debug_mode;
  refresh_defaults(st);
  if (!st.guards.empty()) guards_slow(st);
  return reinterpret_cast<PyObject*>(self);
}

// ---------------------------------------------------------------------------------------------------------
// type plumbing: GC, attributes, introspection

int jit_traverse(PyObject* o, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  Py_VISIT(Py_TYPE(o));
  Py_VISIT(self->dict);
  Py_VISIT(self->frontend);
  if (JitState* st = self->state) {
    Py_VISIT(st->fn);
    Py_VISIT(st->on_miss);
    for (const Guard& g : st->guards) {
      Py_VISIT(g.container);
      Py_VISIT(g.last);
    }
    for (const ConstCache& c : st->consts) Py_VISIT(c.last);
  }
  return 0;
}

int jit_clear(PyObject* o) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->frontend);
  if (JitState* st = self->state) {
    self->state = nullptr;
    delete st;
  }
  return 0;
}

void jit_dealloc(PyObject* o) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  PyTypeObject* tp = Py_TYPE(o);
  PyObject_GC_UnTrack(o);
  if (self->weakrefs) PyObject_ClearWeakRefs(o);
  jit_clear(o);
  tp->tp_free(o);
  Py_DECREF(tp);
}

PyObject* jit_getattro(PyObject* o, PyObject* name) {
  PyObject* r = PyObject_GenericGetAttr(o, name);
  if (r != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  if (self->frontend == nullptr) return nullptr;
  PyErr_Clear();
  return PyObject_GetAttr(self->frontend, name);
}

PyObject* jit_cache_info(PyObject* o, PyObject*) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  if (!self->state) return raise(PyExc_RuntimeError, "kernel was cleared");
  const JitState& st = *self->state;
  return Py_BuildValue("{s:K,s:K,s:n,s:d}", "hits", static_cast<unsigned long long>(st.counters.hits), "misses",
                       static_cast<unsigned long long>(st.counters.misses), "specializations",
                       static_cast<Py_ssize_t>(st.specs.size()), "compile_seconds", st.counters.compile_seconds);
}

// [(key_bytes, info, library_path, compile_seconds), ...] in insertion order
PyObject* jit_specializations(PyObject* o, PyObject*) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  if (!self->state) return raise(PyExc_RuntimeError, "kernel was cleared");
  auto entries = self->state->specs.entries();
  PyObject* list = PyList_New(0);
  for (const Specialization* e : entries) {
    PyObject* item = Py_BuildValue("(y#Osd)", reinterpret_cast<const char*>(e->key.data()),
                                   static_cast<Py_ssize_t>(e->key.size() * sizeof(uint64_t)),
                                   static_cast<PyObject*>(e->user.get()), e->library_path.c_str(), e->compile_seconds);
    if (item == nullptr || PyList_Append(list, item) != 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(item);
  }
  return list;
}

PyObject* jit_key_layout(PyObject* o, PyObject*) {
  // (n_tensor_words_fixed?, constant names, has_guards): enough for explain() to name key components
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  const JitState& st = *self->state;
  return Py_BuildValue("(ni)", static_cast<Py_ssize_t>(st.guards.size()), st.guard_state);
}

PyObject* jit_reset_counters(PyObject* o, PyObject*) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  self->state->counters = Counters{};
  Py_RETURN_NONE;
}

PyObject* jit_repr(PyObject* o) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  return PyUnicode_FromFormat("<pypto kernel '%s'>", self->state ? self->state->table.kernel.c_str() : "?");
}

PyObject* jit_get_dict(PyObject* o, void*) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  if (self->dict == nullptr) self->dict = PyDict_New();
  Py_XINCREF(self->dict);
  return self->dict;
}

PyMethodDef jit_methods[] = {
    {"cache_info", jit_cache_info, METH_NOARGS,
     "cache_info() -> dict(hits, misses, specializations, compile_seconds)"},
    {"compile", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(jit_compile)), METH_FASTCALL | METH_KEYWORDS,
     "compile(*args, **kwargs): build (or load) the specialization these arguments select, without launching"},
    {"_probe", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(jit_probe)), METH_FASTCALL | METH_KEYWORDS,
     "_probe(*args, **kwargs) -> (hit, key_bytes): bind, check and key the arguments without launching"},
    {"_specializations", jit_specializations, METH_NOARGS, "[(key_bytes, info, library, compile_seconds)]"},
    {"_guard_layout", jit_key_layout, METH_NOARGS, "(n_guards, guard_state)"},
    {"_reset_counters", jit_reset_counters, METH_NOARGS, "reset hits/misses/compile seconds"},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef jit_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(JitFunctionObject, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(JitFunctionObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(JitFunctionObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef jit_getset[] = {{"__dict__", jit_get_dict, nullptr, nullptr, nullptr},
                            {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

JitState::~JitState() {
  for (PyObject* n : names) Py_XDECREF(n);
  Py_XDECREF(fn);
  Py_XDECREF(defaults_seen);
  Py_XDECREF(kwdefaults_seen);
  Py_XDECREF(on_miss);
  for (Guard& g : guards) {
    Py_XDECREF(g.container);
    Py_XDECREF(g.name);
    Py_XDECREF(g.last);
  }
  for (ConstCache& c : consts) Py_XDECREF(c.last);
  Py_XDECREF(call_shape.kwnames);
}

PyObject* make_jit_function_type() {
  PyType_Slot slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(jit_new)},
      {Py_tp_dealloc, reinterpret_cast<void*>(jit_dealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(jit_traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(jit_clear)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_getattro, reinterpret_cast<void*>(jit_getattro)},
      {Py_tp_repr, reinterpret_cast<void*>(jit_repr)},
      {Py_tp_methods, jit_methods},
      {Py_tp_members, jit_members},
      {Py_tp_getset, jit_getset},
      {Py_tp_doc, const_cast<char*>("A pypto kernel compiled on demand; call it with tensors.")},
      {0, nullptr}};
  PyType_Spec spec = {"pypto._core.JitFunction", sizeof(JitFunctionObject), 0,
                      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, slots};
  return PyType_FromSpec(&spec);
}

}  // namespace pypto::py
