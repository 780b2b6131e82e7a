// jit_call: the cache-hit path of a JitFunction call (vectorcall), and its probe/compile variants.
//
// No Python bytecode, no allocation, no lock: bind positional/keyword arguments by the cached call-site layout,
// fill defaults, read tensors through the per-type reader, check them and key them (core/binder), convert runtime
// scalars, map constants to ids (identity first), check guards (identity / dict versions), hash and probe the
// table, launch. Every other branch jumps to jit_cold.h: slow paths and error builders live in their own files.
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
  uint64_t readonly = 0, held = 0;
  bool python_ran = false;  // Python code ran after a tensor was read: re-read before launching
  // locals: the compiler cannot keep globals or the table's vectors in registers across the reader calls
  const PyTypeObject* const torch_type = g_torch_exact_type;
  const TorchReadFn torch_read = g_torch_read;
  const int* const tensor_pos = table.tensor_pos.data();
  for (int t = 0; t < nt; ++t) {
    PyObject* obj = slots[tensor_pos[t]];
    if (Py_TYPE(obj) == torch_type && torch_read(obj, &dl[t])) [[likely]]
      continue;  // a plain torch.Tensor: nothing to release, never read-only (rs[t] left unset)
    const int rc = read_tensor(obj, &dl[t], &rs[t]);
    if (rc != 1) [[unlikely]] return tensor_read_error(st, t, obj, rc);
    if (rs[t].cleanup) {
      for (int u = scope.n; u < t; ++u) rs[u].cleanup = 0;  // slots skipped by the fast path
      scope.n = t + 1;
      held |= uint64_t{1} << t;
    }
    readonly |= static_cast<uint64_t>(rs[t].readonly) << t;
    python_ran |= rs[t].ran_python && t + 1 < nt;  // the last one read runs no code after itself
  }
  uint64_t key[kMaxKeyWords];
  // checks + the tensor part of the key; with DYNAMIC/named dims also the element count (the key does not fix it)
  int64_t elements = -1;
  int n = table.all_dims_keyed ? bind_tensors(table, dl, key) : bind_tensors_counting(table, dl, key, &elements);
  if (n < 0) [[unlikely]] return tensor_check_error(st, dl, slots);
  const int n_tensor_words = n;

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
      if (overflow) [[unlikely]] return scalar_overflow_error(st, pos);
    } else {
      python_ran = true;  // __index__ / __float__ may run user code
      if (!scalar_slow(st, pos, obj, &scalars[s])) [[unlikely]] return nullptr;
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
      python_ran = true;  // __eq__ / __hash__ of a constant may run user code
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
    key[n++] = gs;
  }

  PYPTO_PROF_MARK(kGuards);

  // 5. lookup
  const uint64_t hash = hash_key(key, n);
  PYPTO_PROF_MARK(kKey);
  const Specialization* spec = st.specs.find(key, n, hash);
  if constexpr (mode == Mode::kProbe) return probe_result(st, spec != nullptr, key, n, dl);
  const bool spec_was_hit = spec != nullptr;
  if (spec == nullptr) [[unlikely]] {
    python_ran = true;  // the build traced the kernel's Python body
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

  // 6. launch: after Python ran, pointers read before it are read again (and their key words checked); torch
  // tensors the kernel writes follow autograd's rules for in-place writes (refused, or version bumped)
  if (python_ran) [[unlikely]] {
    ++st.launching;  // Python code may retire `spec` meanwhile (guard_ids.h): it stays allocated until we are done
    const bool ok = reread_tensors(st, slots, dl, rs, held, key, n_tensor_words, &readonly);
    --st.launching;
    if (!ok) return nullptr;
  }
  if (readonly & spec->written_mask) [[unlikely]] return readonly_error(st, readonly & spec->written_mask);
  // decides whether the kernel runs without the GIL; fixed by the key unless some dim is DYNAMIC or named (then
  // counted by the binder, again after a re-read)
  if (elements < 0) elements = spec->elements;
  else if (python_ran) [[unlikely]] elements = count_elements(dl, nt);
  // the launch's tensor arguments; a written one that partially overlaps another is refused (core/overlap.h)
  PyptoTensorArg targs[kMaxParams];
  const OverlapPlan plan{spec->overlap_window, spec->overlap_tensor};
  if (const int pair = pack_tensor_args(dl, nt, targs, plan, spec->written_mask, elements); pair >= 0) [[unlikely]]
    return overlap_error(st, pair);
  // last before the launch: fewer values live across the begin_write calls
  for (uint64_t m = spec->written_mask; m != 0; m &= m - 1) {
    const int t = __builtin_ctzll(m);
    PyObject* obj = slots[tensor_pos[t]];
    if (Py_TYPE(obj) == torch_type || rs[t].torch) {  // rs[t] is set for every tensor not read by the fast path
      if (const int why = torch_begin_write(obj)) [[unlikely]] return autograd_write_error(st, t, obj, why);
    }
  }
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
