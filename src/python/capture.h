// capture: `pypto.capture()` — the graph a capture records into (capture.cpp) and replays (capture_replay.cpp).
//
// Recording happens on the launch of a call (capture_hook.h), after the call bound, checked, keyed and found its
// specialization as usual: the graph keeps the kernel entry and the packed arguments (core/replay.h), a strong
// reference to every tensor object and kernel, and what each launch's validity rests on: each tensor's data
// pointer, dtype, shape and strides, each kernel's guarded values. A replay checks those (once per distinct tensor
// and kernel, not per launch), rebinds the named scalar slots, then runs the whole sequence without the GIL.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/replay.h"
#include "pypto/dlpack.h"
#include "python/capture_hook.h"
#include "python/jit_state.h"
#include "python/tensor_reader.h"

namespace pypto::py {

// A tensor object some launch reads or writes, as it was at capture.
struct CapturedTensor {
  PyObject* obj = nullptr;  // strong
  ReadSlot held{};          // the capture's read, kept (a buffer export keeps its exporter from resizing)
  void* data = nullptr;     // first element (byte offset included)
  DLDataType dtype{};
  int32_t ndim = 0;
  int64_t shape[PYPTO_MAX_RANK] = {};
  int64_t strides[PYPTO_MAX_RANK] = {};  // in elements, row-major ones filled in when the reader gave none
  bool torch = false;
  int first_launch = 0, first_t = 0;     // where it was first passed (messages)
  int write_launch = -1, write_t = 0;    // the first launch that writes it (autograd's rules at replay), -1: none
};

// A kernel some launch runs, with the values its guards read at capture.
struct CapturedKernel {
  JitFunctionObject* fn = nullptr;    // strong
  std::vector<PyObject*> guard_seen;  // strong (NULL: the global was absent), in JitState::guards order
  uint32_t guard_state = 0;           // the guard state id the launches were keyed with (values, not identities)
  int first_launch = 0;
};

// A runtime scalar of one launch bound to a named slot (`g.slot(name, value)` passed as the argument).
struct SlotBinding {
  int launch, s;  // launch index, scalar index in that launch
  int pos;        // the parameter's position (messages)
  bool is_float;
};

struct ScalarSlot {
  std::string name;
  std::vector<SlotBinding> bindings;
};

// One launch as recorded, for export and inspection (the packed form is in `seq`).
struct LaunchRecord {
  int kernel;                 // index into kernels
  std::vector<int> tensors;   // per tensor argument: index into tensors
  std::vector<uint64_t> key;  // the specialization's key
};

inline namespace PYPTO_CAPTURE_NS {
class CaptureGraph {
 public:
  enum class State { kNew, kRecording, kDone, kFailed };
  CaptureGraph() = default;
  ~CaptureGraph() { clear(); }
  CaptureGraph(const CaptureGraph&) = delete;
  CaptureGraph& operator=(const CaptureGraph&) = delete;

  // capture.cpp
  // Drops every reference and launch (the cycle collector breaks a cycle through a kernel's globals this way);
  // a cleared graph refuses to replay.
  void clear();
  bool begin();                // false with an exception set (nested capture, reused graph)
  void end(bool failed);
  PyObject* record_launch(JitFunctionObject* self, const Specialization* spec, PyObject** slots,
                          const PyptoTensorArg* targs, const PyptoScalarArg* scalars, int64_t elements);
  // capture_replay.cpp
  PyObject* replay(PyObject* kwargs);  // None or NULL with an exception set
  bool check();                        // the checks a replay makes before it runs; false with an exception set
  // Each launch run `rounds` times in a row, after check(): the kernels' own time, summed (ns per sequence).
  double time_kernels(int rounds);

  State state = State::kNew;
  unsigned long thread = 0;  // the capturing thread (PyThread_get_thread_ident)
  std::string failure;       // why the capture failed (kFailed)
  LaunchSequence seq;
  std::vector<CapturedTensor> tensors;
  std::vector<CapturedKernel> kernels;
  std::vector<LaunchRecord> launches;
  std::vector<ScalarSlot> slots;
  bool running = false;      // a replay is running without the GIL (GIL-protected)

 private:
  int tensor_index(PyObject* obj, int launch, int t, bool* ok);
  int kernel_index(JitFunctionObject* fn, int launch);
  int slot_index(PyObject* slot_obj);
  std::unordered_map<PyObject*, int> tensor_ids_;
};
}  // namespace PYPTO_CAPTURE_NS

// The Python class of scalar slots (pypto.capture.Slot), registered by the capture layer; NULL until then.
extern PyObject* g_slot_type;
// Runs a launch the way the hit path does (the GIL released above the kernel's threshold). None or NULL.
PyObject* launch_like_hit(JitState& st, const Specialization* spec, const PyptoTensorArg* targs,
                          const PyptoScalarArg* scalars, int64_t elements);
// The current layout of `obj` against its capture: "" when unchanged, else what changed. "\x01" with an exception
// set when reading it raised something that is not an Exception (KeyboardInterrupt): that propagates untouched.
std::string tensor_change(const CapturedTensor& c);

}  // namespace pypto::py
