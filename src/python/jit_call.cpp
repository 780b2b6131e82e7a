// jit_call: the cache-hit path of a JitFunction call (vectorcall), and its probe/compile variants.
//
// No Python bytecode, no allocation, no lock: bind positional/keyword arguments by the cached call-site layout,
// fill defaults, read tensors through the per-type reader, check them and key them (core/binder), convert runtime
// scalars, map constants to ids (identity first), check guards (identity / dict versions), look the key up (the
// table's memo, else hash and probe), launch. Every other branch jumps to jit_cold.h: slow paths and error
// builders live in their own files.
#include <cstring>

#include "core/binder.h"
#include "core/launch.h"
#include "core/overlap.h"
#include "python/capture_hook.h"
#include "python/jit_cold.h"
#include "python/jit_function.h"
#include "python/jit_state.h"
#include "python/profile.h"
#include "python/tensor_reader.h"

namespace pypto::py {

namespace {

enum class Mode { kCall, kProbe, kCompile };

// Releases what the tensor readers acquired, on every exit path.
struct ReadScope {
  ReadSlot* slots;
  int n = 0;
  [[gnu::always_inline]] ~ReadScope() {
    for (int i = 0; i < n; ++i)
      if (slots[i].cleanup) release_slot(&slots[i]);
  }
};

// The stages of call_impl, in call order. Each is always inlined into the one function: no call is added, and the
// locals they share (slots, dl, key, ...) stay the caller's. A stage returns false after raising (its error builder
// in jit_cold.h has set the Python error); the caller then returns nullptr.

// 1. bind: the call site's layout is cached (learn_call_shape raises every binding error on a new layout)
[[gnu::always_inline]] inline bool bind_arguments(JitState& st, PyObject* const* args, Py_ssize_t nargs,
                                                  PyObject* kwnames, PyObject** slots) {
  if (PyFunction_GET_DEFAULTS(st.fn) != st.defaults_seen || PyFunction_GET_KW_DEFAULTS(st.fn) != st.kwdefaults_seen)
    [[unlikely]] refresh_defaults(st);
  const CallShape& cs = st.call_shape;
  if (kwnames != cs.kwnames || nargs != cs.nargs) [[unlikely]] {
    if (!learn_call_shape(st, nargs, kwnames)) return false;
  }
  const int np = static_cast<int>(st.table.params.size());
  PyObject* const* kwargs = args + nargs;
  PyObject* const* defaults = st.defaults.data();
  for (int i = 0; i < np; ++i) {
    const int src = cs.src[i];
    PyObject* v = src == CallShape::kPositional ? args[i] : src >= 0 ? kwargs[src] : defaults[i];
    if (v == nullptr) [[unlikely]] return bind_error_missing(st), false;
    slots[i] = v;
  }
  return true;
}

// Read once per call and shared by the stages (locals: the compiler cannot keep globals or the table's vectors in
// registers across the reader calls).
struct TensorView {
  const PyTypeObject* torch_type;  // g_torch_exact_type
  const int* pos;                  // table.tensor_pos
  int nt;                          // table.n_tensors()
};

// What reading the tensors leaves for the later stages.
struct ReadState {
  uint64_t readonly = 0, held = 0;
  bool python_ran = false;  // Python code ran after a tensor was read: re-read before launching
};

// 2. tensors: read each one (a plain torch.Tensor by the fast reader, anything else by read_tensor)
[[gnu::always_inline]] inline bool read_tensors(JitState& st, const TensorView& tv, PyObject* const* slots,
                                                DLTensor* dl, ReadSlot* rs, ReadScope& scope, ReadState& r) {
  const PyTypeObject* const torch_type = tv.torch_type;
  const TorchReadFn torch_read = g_torch_read;
  const int* const tensor_pos = tv.pos;
  const int nt = tv.nt;
  for (int t = 0; t < nt; ++t) {
    PyObject* obj = slots[tensor_pos[t]];
    if (Py_TYPE(obj) == torch_type && torch_read(obj, &dl[t])) [[likely]]
      continue;  // a plain torch.Tensor: nothing to release, never read-only (rs[t] left unset)
    const int rc = read_tensor(obj, &dl[t], &rs[t]);
    if (rc != 1) [[unlikely]] return tensor_read_error(st, t, obj, rc), false;
    if (rs[t].cleanup) {
      for (int u = scope.n; u < t; ++u) rs[u].cleanup = 0;  // slots skipped by the fast path
      scope.n = t + 1;
      r.held |= uint64_t{1} << t;
    }
    r.readonly |= static_cast<uint64_t>(rs[t].readonly) << t;
    r.python_ran |= rs[t].ran_python && t + 1 < nt;  // the last one read runs no code after itself
  }
  return true;
}

// 3. runtime scalars
[[gnu::always_inline]] inline bool read_scalars(JitState& st, PyObject* const* slots, PyptoScalarArg* scalars,
                                                bool& python_ran) {
  const ParamTable& table = st.table;
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
      if (overflow) [[unlikely]] return scalar_overflow_error(st, pos), false;
    } else {
      python_ran = true;  // __index__ / __float__ may run user code
      if (!scalar_slow(st, pos, obj, &scalars[s])) [[unlikely]] return false;
    }
  }
  return true;
}

// 4a. key: one id per constant (identity first); returns the key's length, or -1 after raising
[[gnu::always_inline]] inline int key_constants(JitState& st, PyObject* const* slots, uint64_t* key, int n,
                                                bool& python_ran) {
  const int nc = st.table.n_constexprs();
  for (int c = 0; c < nc; ++c) {
    const int pos = st.table.constexpr_pos[c];
    PyObject* obj = slots[pos];
    const ConstCache& cc = st.consts[c];
    uint32_t id = cc.id;
    if (obj != cc.last || !cc.identity_ok) [[unlikely]] {
      python_ran = true;  // __eq__ / __hash__ of a constant may run user code
      id = const_id_slow(st, c, pos, obj);
      if (id == 0) return -1;
    }
    key[n++] = id;
  }
  return n;
}

// 4b. key: the guards' state id (versions of the globals dicts and closure cells, or each guard's value)
[[gnu::always_inline]] inline uint32_t guard_state(JitState& st, bool& python_ran) {
  uint32_t gs = st.guard_state;
  if (!st.dict_watch.empty()) {  // versions of the globals dicts, then the closure cells by identity
    bool same = true;
    for (const DictWatch& w : st.dict_watch) same &= dict_version(w.dict) == w.version;
    for (int i : st.cell_guards) same &= PyCell_GET(st.guards[i].container) == st.guards[i].last;
    if (!same) [[unlikely]] {
      python_ran = true;
      if (!guards_unchanged(st)) gs = guards_slow(st);
    }
  } else {
    for (const Guard& g : st.guards) {
      if (guard_value(g) != g.last) [[unlikely]] {
        python_ran = true;
        gs = guards_slow(st);
        break;
      }
    }
  }
  return gs;
}

// 6a. the launch's arguments: after Python ran, pointers read before it are read again (and their key words
// checked); the written tensors must be writable and may not partially overlap another argument (core/overlap.h).
// `elements` becomes the count that decides the GIL release.
[[gnu::always_inline]] inline bool prepare_launch(JitState& st, const TensorView& tv, const Specialization* spec,
                                                  PyObject** slots, DLTensor* dl, ReadSlot* rs, const ReadState& r_in,
                                                  uint64_t* key, int n_tensor_words, int64_t& elements,
                                                  PyptoTensorArg* targs) {
  uint64_t readonly = r_in.readonly;
  const int nt = tv.nt;
  if (r_in.python_ran) [[unlikely]] {
    ++st.launching;  // Python code may retire `spec` meanwhile (guard_ids.h): it stays allocated until we are done
    const bool ok = reread_tensors(st, slots, dl, rs, r_in.held, key, n_tensor_words, &readonly);
    --st.launching;
    if (!ok) return false;
  }
  if (readonly & spec->written_mask) [[unlikely]] return readonly_error(st, readonly & spec->written_mask), false;
  // fixed by the key unless some dim is DYNAMIC or named (then counted by the binder, again after a re-read)
  if (elements < 0) elements = spec->elements;
  else if (r_in.python_ran) [[unlikely]] elements = count_elements(dl, nt);
  const OverlapPlan plan{spec->overlap_window, spec->overlap_tensor};
  if (const int pair = pack_tensor_args(dl, nt, targs, plan, spec->written_mask, elements); pair >= 0) [[unlikely]]
    return overlap_error(st, pair), false;
  return true;
}

// 6b. torch tensors the kernel writes follow autograd's rules for in-place writes (refused, or version bumped);
// last before the launch: fewer values live across the begin_write calls
[[gnu::always_inline]] inline bool begin_writes(JitState& st, const TensorView& tv, const Specialization* spec,
                                                PyObject* const* slots, const ReadSlot* rs) {
  const PyTypeObject* const torch_type = tv.torch_type;
  const int* const tensor_pos = tv.pos;
  for (uint64_t m = spec->written_mask; m != 0; m &= m - 1) {
    const int t = __builtin_ctzll(m);
    PyObject* obj = slots[tensor_pos[t]];
    if (Py_TYPE(obj) == torch_type || rs[t].torch) {  // rs[t] is set for every tensor not read by the fast path
      if (const int why = torch_begin_write(obj)) [[unlikely]] return autograd_write_error(st, t, obj, why), false;
    }
  }
  return true;
}

template <Mode mode>
PyObject* call_impl(JitFunctionObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  JitState& st = *self->state;
  const ParamTable& table = st.table;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PYPTO_PROF_START;

  PyObject* slots[kMaxParams];
  if (!bind_arguments(st, args, nargs, kwnames, slots)) [[unlikely]] return nullptr;
  PYPTO_PROF_MARK(kBind);

  DLTensor dl[kMaxParams];
  ReadSlot rs[kMaxParams];
  ReadScope scope{rs};
  ReadState r;
  const TensorView tv{g_torch_exact_type, table.tensor_pos.data(), table.n_tensors()};
  if (!read_tensors(st, tv, slots, dl, rs, scope, r)) [[unlikely]] return nullptr;
  // checks + the tensor part of the key; with DYNAMIC/named dims also the element count (the key does not fix it)
  uint64_t key[kMaxKeyWords];
  int64_t elements = -1;
  int n = table.all_dims_keyed ? bind_tensors(table, dl, key) : bind_tensors_counting(table, dl, key, &elements);
  if (n < 0) [[unlikely]] return tensor_check_error(st, dl, slots);
  const int n_tensor_words = n;

  PyptoScalarArg scalars[kMaxParams];
  if (!read_scalars(st, slots, scalars, r.python_ran)) [[unlikely]] return nullptr;
  PYPTO_PROF_MARK(kRead);

  n = key_constants(st, slots, key, n, r.python_ran);
  if (n < 0) [[unlikely]] return nullptr;
  PYPTO_PROF_MARK(kKey);
  if (!st.guards.empty()) key[n++] = guard_state(st, r.python_ran);
  PYPTO_PROF_MARK(kGuards);

  // 5. lookup: the table's memo first (one hot specialization skips the hash), then hash and probe
  const Specialization* spec = st.specs.find_memoized(key, n, hash_key);  // profiled as "lookup", hash included
  if constexpr (mode == Mode::kProbe) return probe_result(st, spec != nullptr, key, n, dl);
  const bool spec_was_hit = spec != nullptr;
  if (spec == nullptr) [[unlikely]] {
    r.python_ran = true;  // the build traced the kernel's Python body
    spec = miss(st, slots, dl, key, n, hash_key(key, n));
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
  if (!prepare_launch(st, tv, spec, slots, dl, rs, r, key, n_tensor_words, elements, targs)) [[unlikely]] return nullptr;
  if (!begin_writes(st, tv, spec, slots, rs)) [[unlikely]] return nullptr;
  // inside `with pypto.capture()` (any thread): the capture launches and records (capture.cpp)
  if (g_capture != nullptr) [[unlikely]] return capture_launch(self, spec, slots, targs, scalars, elements);
  KernelLaunch launch(st.num_threads, st.debug_mode);
  int rc;
  if (elements >= st.release_gil_elements) {
    ++st.launching;  // other threads may run Python code and retire `spec` meanwhile (guard_ids.h)
    Py_BEGIN_ALLOW_THREADS
    rc = launch.run(spec->entry, targs, scalars);
    Py_END_ALLOW_THREADS
    --st.launching;
  } else {
    rc = launch.run(spec->entry, targs, scalars);
  }
  if (rc != 0) [[unlikely]] return kernel_error(st, launch.error);
  PYPTO_PROF_MARK(kLaunch);
  if (spec_was_hit) PYPTO_PROF_COMMIT();
  Py_RETURN_NONE;
}

}  // namespace

PyObject* jit_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return call_impl<Mode::kCall>(reinterpret_cast<JitFunctionObject*>(self), args, nargsf, kwnames);
}

PyObject* jit_probe(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return call_impl<Mode::kProbe>(reinterpret_cast<JitFunctionObject*>(self), args, nargs, kwnames);
}

PyObject* jit_compile(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return call_impl<Mode::kCompile>(reinterpret_cast<JitFunctionObject*>(self), args, nargs, kwnames);
}

}  // namespace pypto::py
