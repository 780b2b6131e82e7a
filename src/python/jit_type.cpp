// jit_type: the JitFunction type — construction from the front end's tables, GC, attributes, introspection.
#include "python/jit_function.h"

#include <structmember.h>

#include "core/param_table_json.h"
#include "python/jit_cold.h"
#include "python/jit_state.h"

namespace pypto::py {

namespace {

// ---------------------------------------------------------------------------------------------------------
// construction: JitFunction(frontend, fn, table, guards, on_miss, run_mode, num_threads, debug_mode)
//   table: the parameter table's JSON text — the encoding a bundle manifest holds per kernel, decoded by the one
//          decoder (core/param_table_json.h); python/pypto/frontend/jit.py (JITKernel.param_table) encodes it
//   guards: [(globals_dict, name) | (cell, None)]

bool decode_table(JitState& st, PyObject* table) {
  Py_ssize_t size = 0;
  const char* text = PyUnicode_Check(table) ? PyUnicode_AsUTF8AndSize(table, &size) : nullptr;
  if (text == nullptr) {
    if (!PyErr_Occurred()) raise(PyExc_TypeError, "JitFunction: table must be the parameter table's JSON text");
    return false;
  }
  try {
    st.table = decode_param_table(nlohmann::json::parse(text, text + size));
  } catch (const DecodeError& e) {
    raise(PyExc_TypeError, e.message);
    return false;
  } catch (const std::exception& e) {  // malformed JSON, a missing or mistyped field, std::bad_alloc
    raise(PyExc_TypeError, std::string("JitFunction: malformed parameter table: ") + e.what());
    return false;
  }
  for (const Param& p : st.table.params) {
    PyObject* name = PyUnicode_FromString(p.name.c_str());
    if (name == nullptr) return false;
    PyUnicode_InternInPlace(&name);
    st.names.push_back(name);
    if (!p.keyword_only) st.n_positional++;
  }
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
  PyObject *frontend, *fn, *table, *guards, *on_miss;
  int run_mode, num_threads, debug_mode;
  static const char* kwlist[] = {"frontend", "fn", "table", "guards", "on_miss", "run_mode", "num_threads",
                                 "debug_mode", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOiii", const_cast<char**>(kwlist), &frontend, &fn, &table,
                                   &guards, &on_miss, &run_mode, &num_threads, &debug_mode))
    return nullptr;
  if (!PyFunction_Check(fn)) return raise(PyExc_TypeError, "JitFunction: fn must be a Python function");
  auto* self = reinterpret_cast<JitFunctionObject*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = jit_vectorcall;
  self->state = new JitState();
  JitState& st = *self->state;
  if (!decode_table(st, table) || !parse_guards(st, guards)) {
    Py_DECREF(self);
    return nullptr;
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
    Py_VISIT(st->on_options);
    for (const Guard& g : st->guards) {
      Py_VISIT(g.container);
      Py_VISIT(g.last);
    }
    for (const ConstCache& c : st->consts) Py_VISIT(c.last);
    if (int r = st->guard_ids.traverse(visit, arg)) return r;
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

// _set_runtime(run_mode, num_threads, debug_mode): the runtime options, re-read by the front end on a miss
PyObject* jit_set_runtime(PyObject* o, PyObject* args) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  if (!self->state) return raise(PyExc_RuntimeError, "kernel was cleared");
  int run_mode, num_threads, debug_mode;
  if (!PyArg_ParseTuple(args, "iii", &run_mode, &num_threads, &debug_mode)) return nullptr;
  JitState& st = *self->state;
  st.run_mode = static_cast<RunMode>(run_mode);
  st.backend_reason = backend_unavailable_reason(st.run_mode);
  st.num_threads = num_threads < 1 ? 1 : num_threads;
  st.debug_mode = debug_mode;
  Py_RETURN_NONE;
}

// _watch_options(callable | None): called with no arguments at the start of every miss
PyObject* jit_watch_options(PyObject* o, PyObject* fn) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  if (!self->state) return raise(PyExc_RuntimeError, "kernel was cleared");
  if (fn != Py_None && !PyCallable_Check(fn)) return raise(PyExc_TypeError, "_watch_options expects a callable");
  Py_XSETREF(self->state->on_options, fn == Py_None ? nullptr : Py_NewRef(fn));
  Py_RETURN_NONE;
}

PyMethodDef jit_methods[] = {
    {"_set_runtime", jit_set_runtime, METH_VARARGS, "_set_runtime(run_mode, num_threads, debug_mode)"},
    {"_watch_options", jit_watch_options, METH_O, "_watch_options(callable | None): run at the start of a miss"},
    {"cache_info", jit_cache_info, METH_NOARGS,
     "cache_info() -> dict(hits, misses, specializations, compile_seconds)"},
    {"compile", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(jit_compile)), METH_FASTCALL | METH_KEYWORDS,
     "compile(*args, **kwargs): build (or load) the specialization these arguments select, without launching"},
    {"_probe", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(jit_probe)), METH_FASTCALL | METH_KEYWORDS,
     "_probe(*args, **kwargs) -> (hit, key_bytes, tensor_meta): bind, check and key the arguments without launching"},
    {"_specializations", jit_specializations, METH_NOARGS, "[(key_bytes, info, library, compile_seconds)]"},
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
  guard_ids.clear();  // first: the values released below run no callback into this state
  for (PyObject* n : names) Py_XDECREF(n);
  Py_XDECREF(fn);
  Py_XDECREF(defaults_seen);
  Py_XDECREF(kwdefaults_seen);
  Py_XDECREF(on_miss);
  Py_XDECREF(on_options);
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
  PyType_Spec type_spec = {"pypto._core.JitFunction", sizeof(JitFunctionObject), 0,
                      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, slots};
  return PyType_FromSpec(&type_spec);
}

}  // namespace pypto::py
