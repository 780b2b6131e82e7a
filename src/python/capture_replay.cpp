// capture_replay: replaying a CaptureGraph (checks, scalar slots, the GIL-free run) and its Python binding.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/dtype.h"
#include "core/launch.h"
#include "core/messages.h"
#include "python/capture.h"
#include "python/jit_cold.h"

namespace nb = nanobind;

namespace pypto::py {

namespace {

constexpr const char* kRefused = "pypto.capture: replay refused: ";

std::string launch_head(const CaptureGraph& g, int launch) {
  return "launch " + std::to_string(launch) + " of " + std::to_string(g.seq.size()) + " (kernel '" +
         g.seq.kernel(launch) + "'): ";
}

// The values of the slots named in `kwargs`, converted for each of their bindings; nothing is stored unless every
// one converts. false with an exception set.
bool rebind_slots(CaptureGraph& g, PyObject* kwargs) {
  if (kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0) return true;
  std::vector<std::pair<PyptoScalarArg*, PyptoScalarArg>> writes;
  Py_ssize_t i = 0;
  PyObject *key, *value;
  while (PyDict_Next(kwargs, &i, &key, &value)) {
    const char* name = PyUnicode_AsUTF8(key);
    if (name == nullptr) return false;
    auto it = std::find_if(g.slots.begin(), g.slots.end(), [&](const ScalarSlot& s) { return s.name == name; });
    if (it == g.slots.end()) {
      std::string have;
      for (const ScalarSlot& s : g.slots) have += (have.empty() ? "'" : ", '") + s.name + "'";
      raise(PyExc_TypeError, std::string("pypto.capture: replay() got the scalar slot '") + name +
                                 "', which the capture has not: its slots are " + (have.empty() ? "none" : have) +
                                 " (pass g.slot(name, value) as a pypto.Scalar argument inside the capture)");
      return false;
    }
    for (const SlotBinding& b : it->bindings) {
      const ParamTable& table = g.kernels[g.launches[b.launch].kernel].fn->state->table;
      const std::string head = launch_head(g, b.launch) + "scalar slot '" + it->name + "' (parameter '" +
                               table.params[b.pos].name + "'): ";
      PyptoScalarArg v;
      if (b.is_float) {
        v.f = PyFloat_AsDouble(value);
        if (v.f == -1.0 && PyErr_Occurred()) {
          PyErr_Clear();
          raise(PyExc_TypeError, head + "expected a real number, got " + type_name(value));
          return false;
        }
      } else {
        if (PyFloat_Check(value)) {
          raise(PyExc_TypeError, head + "expected an integer, got the float " + py_repr(value));
          return false;
        }
        PyObject* idx = PyNumber_Index(value);
        if (idx == nullptr) {
          PyErr_Clear();
          raise(PyExc_TypeError, head + "expected an integer, got " + type_name(value));
          return false;
        }
        int overflow = 0;
        v.i = PyLong_AsLongLongAndOverflow(idx, &overflow);
        Py_DECREF(idx);
        if (overflow) {
          raise(PyExc_OverflowError, head + "the value " + py_repr(value) + " does not fit in int64");
          return false;
        }
      }
      writes.push_back({&g.seq.scalars(b.launch)[b.s], v});
    }
  }
  for (auto& [dst, v] : writes) *dst = v;
  return true;
}

// The cycle collector's view of a graph: the tensors and kernels it holds (a kernel's globals may hold the graph).
int graph_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const CaptureGraph* g = nb::inst_ptr<CaptureGraph>(self);
  for (const CapturedTensor& c : g->tensors) Py_VISIT(c.obj);
  for (const CapturedKernel& k : g->kernels) {
    Py_VISIT(reinterpret_cast<PyObject*>(k.fn));
    for (PyObject* v : k.guard_seen) Py_VISIT(v);
  }
  return 0;
}

int graph_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<CaptureGraph>(self)->clear();
  return 0;
}

PyType_Slot graph_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(graph_traverse)},
                             {Py_tp_clear, reinterpret_cast<void*>(graph_clear)},
                             {0, nullptr}};

}  // namespace

bool CaptureGraph::check() {
  if (state != State::kDone) {
    const char* why = state == State::kNew       ? "nothing was captured yet (use `with pypto.capture() as g:`)"
                      : state == State::kRecording ? "the capture is still recording (replay after the with block)"
                                                   : nullptr;
    raise_pypto("CaptureError", std::string(kRefused) + (why ? why : "the capture failed (" + failure +
                                                                          "); nothing to replay: capture again"));
    return false;
  }
  if (running) {
    raise_pypto("CaptureError", std::string(kRefused) + "this graph is replaying on another thread");
    return false;
  }
  // guards: a kernel whose guarded globals/cells were rebound to other values would specialize again if called now
  for (CapturedKernel& k : kernels) {
    JitState& st = *k.fn->state;
    size_t moved = st.guards.size();
    for (size_t i = 0; i < st.guards.size() && moved == st.guards.size(); ++i)
      if (guard_value(st.guards[i]) != k.guard_seen[i]) moved = i;
    if (moved == st.guards.size()) continue;
    // an object that is not the one seen: keyed by value as a call would (an equal value keeps the key)
    const uint32_t gs = guards_slow(st);
    if (PyErr_Occurred()) return false;
    if (gs == k.guard_state) {
      for (size_t i = 0; i < st.guards.size(); ++i) {
        PyObject* v = guard_value(st.guards[i]);
        Py_XINCREF(v);
        Py_XSETREF(k.guard_seen[i], v);
      }
      continue;
    }
    const Guard& gd = st.guards[moved];
    const std::string what = gd.name ? "the global '" + std::string(PyUnicode_AsUTF8(gd.name)) + "'"
                                     : std::string("a closure variable");
    raise_pypto("CaptureError", kRefused + launch_head(*this, k.first_launch) + "the kernel reads " + what +
                                    ", rebound since capture: a call would now miss (specialize again), so the "
                                    "captured launch is stale; capture again");
    return false;
  }
  // tensors: the captured storage, unmoved, with the captured dtype, shape and strides
  for (const CapturedTensor& c : tensors) {
    const std::string why = tensor_change(c);
    if (why.empty()) continue;
    if (why == "\x01") return false;
    const ParamTable& table = kernels[launches[c.first_launch].kernel].fn->state->table;
    raise_pypto("CaptureError", kRefused + launch_head(*this, c.first_launch) + "tensor argument '" +
                                    table.tensor(c.first_t).name + "': " + why +
                                    "; captured tensors are the replay's storage: update them in place, or capture "
                                    "again");
    return false;
  }
  return true;
}

PyObject* CaptureGraph::replay(PyObject* kwargs) {
  // 1. checks, 2. scalar slots, 3. autograd's rules for written torch tensors, 4. the run, without the GIL
  if (!check() || !rebind_slots(*this, kwargs)) return nullptr;
  for (const CapturedTensor& c : tensors) {
    if (c.write_launch < 0 || !c.torch) continue;
    if (const int why = torch_begin_write(c.obj)) [[unlikely]]
      return autograd_write_error(*kernels[launches[c.write_launch].kernel].fn->state, c.write_t, c.obj, why);
  }
  char error[512];
  int failed;
  running = true;
  Py_BEGIN_ALLOW_THREADS
  failed = seq.run(error, sizeof error);
  Py_END_ALLOW_THREADS
  running = false;
  if (failed >= 0) [[unlikely]]
    return raise_pypto("KernelRuntimeError", kernel_error_message(seq.kernel(failed), error) + " (" +
                                                 launch_head(*this, failed) + "of a pypto.capture replay; the "
                                                 "launches after it did not run)");
  Py_RETURN_NONE;
}

double CaptureGraph::time_kernels(int rounds) {
  double total = 0;
  char error[512];
  PyptoLaunchContext ctx{1, 0, error, sizeof error};
  for (int i = 0; i < static_cast<int>(seq.size()); ++i) {
    // the launch's entry alone, `rounds` times: what issuing it from C++ costs, its own work included
    const PyptoTensorArg* t = seq.tensors(i);
    const PyptoScalarArg* s = seq.scalars(i);
    const PyptoKernelEntry entry = seq.entry(i);
    ctx.num_threads = seq.num_threads(i);
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r)
      if (entry(t, s, &ctx) != 0) return -1;
    total += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / rounds;
  }
  return total;
}

namespace {

// per launch: (kernel, key bytes, tensor indices, scalar values: a float or an int by the parameter's dtype)
nb::list launches_of(CaptureGraph& g) {
  nb::list out;
  for (size_t i = 0; i < g.launches.size(); ++i) {
    const LaunchRecord& r = g.launches[i];
    const JitState& st = *g.kernels[r.kernel].fn->state;
    nb::list ts, ss;
    for (int id : r.tensors) ts.append(id);
    for (int s = 0; s < g.seq.n_scalars(int(i)); ++s) {
      const int dt = st.table.params[st.table.scalar_pos[s]].scalar_dtype;
      const bool f = dt == PYPTO_DT_FP16 || dt == PYPTO_DT_BF16 || dt == PYPTO_DT_FP32 || dt == PYPTO_DT_FP64;
      const PyptoScalarArg v = g.seq.scalars(int(i))[s];
      ss.append(f ? nb::object(nb::float_(v.f)) : nb::object(nb::int_(v.i)));
    }
    nb::bytes key(reinterpret_cast<const char*>(r.key.data()), r.key.size() * sizeof(uint64_t));
    out.append(nb::make_tuple(nb::borrow(reinterpret_cast<PyObject*>(g.kernels[r.kernel].fn)), key, ts, ss));
  }
  return out;
}

// per tensor: (dtype code, shape, written, address of the first element, bytes spanned)
nb::list tensor_layouts_of(const CaptureGraph& g) {
  nb::list out;
  for (const CapturedTensor& c : g.tensors) {
    nb::list shape;
    int64_t span = 1;
    for (int d = 0; d < c.ndim; ++d) {
      shape.append(c.shape[d]);
      if (c.shape[d] == 0) span = 0;
      else if (span) span += (c.shape[d] - 1) * c.strides[d];
    }
    const int64_t bytes = span * ((c.dtype.bits * c.dtype.lanes + 7) / 8);
    out.append(nb::make_tuple(dtype_from_dlpack(c.dtype), nb::tuple(shape), c.write_launch >= 0,
                              reinterpret_cast<uintptr_t>(c.data), bytes));
  }
  return out;
}

// name -> [(launch, parameter name)]
nb::dict slots_of(const CaptureGraph& g) {
  nb::dict out;
  for (const ScalarSlot& s : g.slots) {
    nb::list b;
    for (const SlotBinding& x : s.bindings)
      b.append(nb::make_tuple(x.launch, g.kernels[g.launches[x.launch].kernel].fn->state->table.params[x.pos].name));
    out[s.name.c_str()] = b;
  }
  return out;
}

// The recording and running methods: what pypto.capture() and a user's replay() call.
void def_run_methods(nb::class_<CaptureGraph>& cls) {
  cls.def(nb::init<>())
      .def("_begin", [](CaptureGraph& g) { if (!g.begin()) throw nb::python_error(); })
      .def("_end", [](CaptureGraph& g, bool failed, const std::string& why) {
        if (failed && g.failure.empty()) g.failure = why;
        g.end(failed);
      })
      .def("replay", [](CaptureGraph& g, nb::kwargs kw) {
        PyObject* r = g.replay(kw.ptr());
        if (r == nullptr) throw nb::python_error();
        return nb::steal(r);
      }, "replay(**slots) -> None: run every captured launch in one native call, without the GIL")
      .def("_check", [](CaptureGraph& g) { if (!g.check()) throw nb::python_error(); })
      .def("_time_kernels", [](CaptureGraph& g, int rounds) {
        if (!g.check()) throw nb::python_error();
        return g.time_kernels(std::max(rounds, 1));
      });
}

// The read-only views: pypto.capture's properties and the bundle export (capture/bundle.py) read them.
void def_views(nb::class_<CaptureGraph>& cls) {
  cls.def("__len__", [](const CaptureGraph& g) { return g.seq.size(); })
      .def_prop_ro("state", [](const CaptureGraph& g) {
        static const char* names[] = {"new", "recording", "done", "failed"};
        return std::string(names[int(g.state)]);
      })
      .def_prop_ro("failure", [](const CaptureGraph& g) { return g.failure; })
      .def("_tensors", [](const CaptureGraph& g) {
        nb::list out;
        for (const CapturedTensor& c : g.tensors) out.append(nb::borrow(c.obj));
        return out;
      })
      .def("_launches", &launches_of)
      .def("_tensor_layouts", &tensor_layouts_of)
      .def("_slot_bindings", [](const CaptureGraph& g) {
        nb::list out;  // (slot name, launch, scalar index)
        for (const ScalarSlot& s : g.slots)
          for (const SlotBinding& x : s.bindings) out.append(nb::make_tuple(s.name, x.launch, x.s));
        return out;
      })
      .def("_slots", &slots_of);
}

}  // namespace

void register_capture(nb::module_& m) {
  nb::class_<CaptureGraph> cls(m, "CaptureGraph",
                               "The native half of pypto.capture(): a recorded sequence of kernel launches",
                               nb::type_slots(graph_slots));
  def_run_methods(cls);
  def_views(cls);
  m.def("set_capture_slot_type", [](nb::handle cls) {
    Py_XINCREF(cls.ptr());
    Py_XSETREF(g_slot_type, cls.ptr());
  }, "make pypto.capture's Slot class known to the core (a Slot argument binds a runtime scalar to a named slot)");
}

}  // namespace pypto::py
