// capture: recording kernel launches into a CaptureGraph while `with pypto.capture()` is open (capture.h).
#include "python/capture.h"

#include <pythread.h>

#include <cstring>

#include "core/dtype.h"
#include "core/launch.h"
#include "core/messages.h"
#include "python/capture_hook.h"
#include "python/jit_cold.h"

namespace pypto::py {

CaptureGraph* g_capture = nullptr;
PyObject* g_slot_type = nullptr;

namespace {

constexpr size_t kMaxLaunches = size_t(1) << 20;  // a capture that never ends (a loop around it) is an error

// Reads `obj` the way the hit path does (the fast torch reader first). 1 read, 0 not a tensor, -1 error set.
int read_any(PyObject* obj, DLTensor* dl, ReadSlot* rs, bool* torch) noexcept {
  rs->cleanup = 0;
  if (Py_TYPE(obj) == g_torch_exact_type && g_torch_read != nullptr && g_torch_read(obj, dl)) {
    *torch = true;
    return 1;
  }
  const int rc = read_tensor(obj, dl, rs);
  *torch = rc == 1 && rs->torch;
  return rc;
}

// Fills c's layout from `dl`: element strides, row-major ones when the reader gave none.
void snapshot(const DLTensor& dl, CapturedTensor* c) {
  c->data = static_cast<char*>(dl.data) + dl.byte_offset;
  c->dtype = dl.dtype;
  c->ndim = dl.ndim;
  int64_t stride = 1;
  for (int d = dl.ndim - 1; d >= 0; --d) {
    c->shape[d] = dl.shape[d];
    c->strides[d] = dl.strides ? dl.strides[d] : stride;
    stride *= dl.shape[d];
  }
}

std::string layout_text(const DLTensor& dl) {
  char dt[64];
  dlpack_dtype_describe(dl.dtype, dt, sizeof dt);
  std::string s = std::string(dt) + "[";
  for (int d = 0; d < dl.ndim; ++d) s += (d ? ", " : "") + std::to_string(dl.shape[d]);
  return s + "]";
}

}  // namespace

PyObject* launch_like_hit(JitState& st, const Specialization* spec, const PyptoTensorArg* targs,
                          const PyptoScalarArg* scalars, int64_t elements) {
  KernelLaunch launch(st.num_threads, st.debug_mode);
  int rc;
  if (elements >= st.release_gil_elements) {
    ++st.launching;
    Py_BEGIN_ALLOW_THREADS
    rc = launch.run(spec->entry, targs, scalars);
    Py_END_ALLOW_THREADS
    --st.launching;
  } else {
    rc = launch.run(spec->entry, targs, scalars);
  }
  if (rc != 0) return kernel_error(st, launch.error);
  Py_RETURN_NONE;
}

PyObject* capture_launch(JitFunctionObject* self, const Specialization* spec, PyObject** slots,
                         const PyptoTensorArg* targs, const PyptoScalarArg* scalars, int64_t elements) {
  CaptureGraph* g = g_capture;
  if (g->thread != PyThread_get_thread_ident())  // another thread's call: not part of the capture
    return launch_like_hit(*self->state, spec, targs, scalars, elements);
  return g->record_launch(self, spec, slots, targs, scalars, elements);
}

void CaptureGraph::clear() {
  if (g_capture == this) g_capture = nullptr;
  if (state != State::kNew) {
    state = State::kFailed;
    if (failure.empty()) failure = "its references were cleared (garbage collection)";
  }
  seq = LaunchSequence();
  launches.clear();
  slots.clear();
  tensor_ids_.clear();
  std::vector<CapturedTensor> ts;
  std::vector<CapturedKernel> ks;
  ts.swap(tensors);  // members first emptied: a decref below may run code that reaches this graph
  ks.swap(kernels);
  for (CapturedTensor& c : ts) {
    if (c.held.cleanup) release_slot(&c.held);
    Py_XDECREF(c.obj);
  }
  for (CapturedKernel& k : ks) {
    for (PyObject* v : k.guard_seen) Py_XDECREF(v);
    Py_XDECREF(reinterpret_cast<PyObject*>(k.fn));
  }
}

bool CaptureGraph::begin() {
  if (state != State::kNew) {
    raise_pypto("CaptureError", "pypto.capture: this graph was already captured; a graph records once (make a new "
                                "one with pypto.capture())");
    return false;
  }
  if (g_capture != nullptr) {
    raise_pypto("CaptureError", "pypto.capture: another capture is recording (nested, or on another thread); "
                                "captures do not nest: end it first");
    return false;
  }
  state = State::kRecording;
  thread = PyThread_get_thread_ident();
  g_capture = this;
  return true;
}

void CaptureGraph::end(bool failed) {
  if (g_capture == this) g_capture = nullptr;
  if (state == State::kRecording) state = failed ? State::kFailed : State::kDone;
  if (failed && failure.empty()) failure = "an exception was raised inside the captured region";
}

int CaptureGraph::tensor_index(PyObject* obj, int launch, int t, bool* ok) {
  if (auto it = tensor_ids_.find(obj); it != tensor_ids_.end()) return it->second;
  CapturedTensor c;
  DLTensor dl{};
  const int rc = read_any(obj, &dl, &c.held, &c.torch);
  if (rc != 1) {  // the call read it a moment ago: only a reader with side effects fails here
    if (rc == 0) raise_pypto("CaptureError", "pypto.capture: a tensor argument could not be read again to record it");
    *ok = false;
    return -1;
  }
  snapshot(dl, &c);
  Py_INCREF(obj);
  c.obj = obj;
  c.first_launch = launch;
  c.first_t = t;
  tensors.push_back(c);
  const int id = static_cast<int>(tensors.size()) - 1;
  tensor_ids_.emplace(obj, id);
  return id;
}

int CaptureGraph::kernel_index(JitFunctionObject* fn, int launch) {
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].fn == fn) return static_cast<int>(i);
  CapturedKernel k;
  Py_INCREF(reinterpret_cast<PyObject*>(fn));
  k.fn = fn;
  k.first_launch = launch;
  k.guard_state = fn->state->guard_state;
  for (const Guard& gd : fn->state->guards) {
    PyObject* v = guard_value(gd);
    Py_XINCREF(v);
    k.guard_seen.push_back(v);
  }
  kernels.push_back(std::move(k));
  return static_cast<int>(kernels.size()) - 1;
}

int CaptureGraph::slot_index(PyObject* slot_obj) {
  PyObject* name = PyObject_GetAttrString(slot_obj, "name");
  if (name == nullptr) return -1;
  const char* s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
  std::string n = s ? s : "";
  Py_DECREF(name);
  if (s == nullptr) {
    PyErr_Clear();
    raise_pypto("CaptureError", "pypto.capture: a scalar slot's name must be a str");
    return -1;
  }
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == n) return static_cast<int>(i);
  slots.push_back(ScalarSlot{n, {}});
  return static_cast<int>(slots.size()) - 1;
}

// 1. tensors and kernel (references taken), 2. scalar slots, 3. launch, 4. commit the packed launch.
PyObject* CaptureGraph::record_launch(JitFunctionObject* self, const Specialization* spec, PyObject** slots_in,
                                      const PyptoTensorArg* targs, const PyptoScalarArg* scalars,
                                      int64_t elements) {
  JitState& st = *self->state;
  const ParamTable& table = st.table;
  const int launch = static_cast<int>(seq.size());
  if (seq.size() >= kMaxLaunches) {
    failure = "more than " + std::to_string(kMaxLaunches) + " launches";
    return raise_pypto("CaptureError", "pypto.capture: " + failure + " recorded; a capture holds one step");
  }
  LaunchRecord rec{kernel_index(self, launch), {}, spec->key};
  bool ok = true;
  for (int t = 0; t < table.n_tensors() && ok; ++t) {
    const int id = tensor_index(slots_in[table.tensor_pos[t]], launch, t, &ok);
    if (!ok) break;
    CapturedTensor& c = tensors[id];
    if (c.data != targs[t].data) {  // the object's layout changed within the call (a reader ran Python)
      ok = false;
      raise_pypto("CaptureError", msg::head(table, table.tensor_pos[t]) + "changed while it was being recorded");
      break;
    }
    if ((spec->written_mask >> t & 1) && c.write_launch < 0) {
      c.write_launch = launch;
      c.write_t = t;
    }
    rec.tensors.push_back(id);
  }
  std::vector<std::pair<int, SlotBinding>> bound;
  for (int s = 0; s < table.n_scalars() && ok; ++s) {
    const int pos = table.scalar_pos[s];
    PyObject* obj = slots_in[pos];
    if (g_slot_type == nullptr || !PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(g_slot_type))) continue;
    const int slot = slot_index(obj);
    if (slot < 0) {
      ok = false;
      break;
    }
    const int dt = table.params[pos].scalar_dtype;
    const bool is_float = dt == PYPTO_DT_FP16 || dt == PYPTO_DT_BF16 || dt == PYPTO_DT_FP32 || dt == PYPTO_DT_FP64;
    bound.push_back({slot, SlotBinding{launch, s, pos, is_float}});
  }
  if (!ok) {
    state = State::kFailed;
    if (failure.empty()) failure = "recording a launch of kernel '" + table.kernel + "' failed";
    return nullptr;
  }
  PyObject* r = launch_like_hit(st, spec, targs, scalars, elements);
  if (r == nullptr) return nullptr;  // a failed launch is not recorded (the exception ends the capture as failed)
  for (auto& [slot, b] : bound) slots[slot].bindings.push_back(b);
  seq.add(spec->entry, spec->module, targs, table.n_tensors(), scalars, table.n_scalars(), st.num_threads,
          st.debug_mode, table.kernel);
  launches.push_back(std::move(rec));
  return r;
}

std::string tensor_change(const CapturedTensor& c) {
  DLTensor dl{};
  ReadSlot rs;
  bool torch = false;
  const int rc = read_any(c.obj, &dl, &rs, &torch);
  if (rc != 1) {
    if (rc == 0) return "it can no longer be read as a tensor";
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return "\x01";
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    std::string why = "it can no longer be read (" + py_repr(value ? value : type) + ")";
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return why;
  }
  std::string why;
  const void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  bool same = data == c.data && dl.ndim == c.ndim && std::memcmp(&dl.dtype, &c.dtype, sizeof c.dtype) == 0;
  int64_t stride = 1;
  for (int d = dl.ndim - 1; d >= 0 && same; --d) {
    same = dl.shape[d] == c.shape[d] && (dl.strides ? dl.strides[d] : stride) == c.strides[d];
    stride *= dl.shape[d];
  }
  if (!same) {
    DLTensor was{};
    was.ndim = c.ndim;
    was.dtype = c.dtype;
    was.shape = const_cast<int64_t*>(c.shape);
    if (data != c.data && dl.ndim == c.ndim && layout_text(dl) == layout_text(was))
      why = "its storage moved (freed or reallocated) since capture";
    else if (data != c.data)
      why = "it was resized or its storage replaced since capture: captured " + layout_text(was) + ", now " +
            layout_text(dl);
    else
      why = "its shape, strides or dtype changed since capture: captured " + layout_text(was) + ", now " +
            layout_text(dl);
  }
  if (rs.cleanup) release_slot(&rs);
  return why;
}

}  // namespace pypto::py
