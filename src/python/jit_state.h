// jit_state: everything a JitFunction needs per call, prepared at decoration, and the JitFunction object itself.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/param_table.h"
#include "core/spec_table.h"
#include "python/guard_ids.h"

namespace pypto::py {

// A global or closure variable the kernel reads. Checked by identity on every call.
struct Guard {
  PyObject* container = nullptr;  // globals dict, or a cell when name == NULL
  PyObject* name = nullptr;       // interned str
  PyObject* last = nullptr;       // value bound now (strong: only this one), NULL when absent; older values are
                                  // keyed without being kept (guard_ids.h)
};

// A globals dict some guards read, with the version it had when they were last seen unchanged. CPython < 3.12
// bumps a dict's ma_version_tag on every modification, so an unchanged version proves that none of its guarded
// names was rebound: one compare per module instead of one dict lookup per guarded global. (3.12 deprecates the
// field and 3.14 drops it; there every guard is looked up, as before.)
struct DictWatch {
  PyObject* dict = nullptr;  // borrowed: the guards that read it hold it
  uint64_t version = 0;
};

// Per constant parameter: the object seen last and its id (identity fast path).
struct ConstCache {
  PyObject* last = nullptr;  // strong
  uint32_t id = 0;
  bool identity_ok = false;  // false for values with mutable parts (lists): re-keyed by value every call
};

// How one call site lays out its arguments, cached by the identity of its keyword-names tuple (CPython passes the
// same constant tuple from a call site every time) and its positional count: per parameter, where its value comes
// from. Learned (and every binding error raised) on the slow path; the hit path only fills slots from it.
struct CallShape {
  static constexpr int8_t kPositional = -2;
  static constexpr int8_t kDefault = -1;
  PyObject* kwnames = nullptr;  // strong (so that its address cannot be reused by another tuple)
  Py_ssize_t nargs = -1;        // -1: nothing learned yet
  int8_t src[64];               // kPositional, kDefault, or the index of the keyword argument
};

struct Counters {
  uint64_t hits = 0;
  uint64_t misses = 0;
  double compile_seconds = 0;
};

struct JitState {
  ParamTable table;
  std::vector<PyObject*> names;         // interned parameter names by position (strong)
  int n_positional = 0;                 // parameters that may be passed positionally
  PyObject* fn = nullptr;               // the Python function: source of __defaults__/__kwdefaults__
  PyObject* defaults_seen = nullptr;    // identity of fn.__defaults__ when `defaults` was computed (strong)
  PyObject* kwdefaults_seen = nullptr;  // same for __kwdefaults__ (strong)
  std::vector<PyObject*> defaults;      // default by position, borrowed from the two containers above
  PyObject* on_miss = nullptr;          // Python callable(args_tuple, key_bytes, tensor_meta) -> build result
  PyObject* on_options = nullptr;       // optional Python callable() run first on every miss: re-reads the option
                                        // dicts given to @jit and may call _set_runtime (reference semantics)
  std::vector<Guard> guards;
  uint32_t guard_state = 0;
  std::vector<DictWatch> dict_watch;    // distinct globals dicts of the guards (empty: versions not usable)
  std::vector<int> cell_guards;         // indices of the closure-cell guards (checked every call)
  std::vector<ConstCache> consts;
  CallShape call_shape;
  SpecializationTable specs;
  GuardIds guard_ids;                   // ids of guard values and guard states (slow path only)
  int launching = 0;                    // calls between their lookup and the end of their launch that may let
                                        // Python code run (re-reading tensors, a launch without the GIL): while
                                        // non-zero, retired specializations are not freed (GIL-protected)
  Counters counters;
  RunMode run_mode = RunMode::kSim;
  std::string backend_reason;           // non-empty: the run mode cannot run here
  int32_t num_threads = 1;
  int32_t debug_mode = 0;
  int64_t release_gil_elements = int64_t(1) << 16;  // kernels touching more elements run without the GIL

  ~JitState();
};

// The JitFunction object: a fixed layout with the vectorcall slot (jit_type.cpp creates it, jit_call.cpp runs it).
struct JitFunctionObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  JitState* state;
  PyObject* dict;         // __name__, __doc__, __wrapped__ ... set by the front end
  PyObject* frontend;     // the Python-side kernel object: attribute fallback (explain, export, ...)
  PyObject* weakrefs;
};

// The value a guard reads now (borrowed; NULL when a global is absent).
inline PyObject* guard_value(const Guard& g) {
  return g.name ? PyDict_GetItem(g.container, g.name) : PyCell_GET(g.container);
}

#if PY_VERSION_HEX < 0x030C0000
constexpr bool kDictVersions = true;
inline uint64_t dict_version(PyObject* d) { return reinterpret_cast<PyDictObject*>(d)->ma_version_tag; }
#else
constexpr bool kDictVersions = false;
inline uint64_t dict_version(PyObject*) { return 0; }
#endif

}  // namespace pypto::py
