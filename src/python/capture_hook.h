// capture_hook: the hit path's one contact with `pypto.capture()` — a pointer tested before each launch.
#pragma once

#include <Python.h>

#include <cstdint>

#include "core/spec_table.h"
#include "pypto/kernel_abi.h"
#include "python/jit_state.h"

// pypto._core and pypto._core_prof are the same sources built twice, and nanobind registers types by their C++
// name across extensions: the graph type gets a distinct name in each build.
#if defined(PYPTO_PROFILE) && PYPTO_PROFILE
#define PYPTO_CAPTURE_NS capture_profiled
#else
#define PYPTO_CAPTURE_NS capture_plain
#endif

namespace pypto::py {

inline namespace PYPTO_CAPTURE_NS {
class CaptureGraph;
}
// The graph recording now; NULL unless some thread is inside `with pypto.capture()` (GIL-protected).
extern CaptureGraph* g_capture;

// The launch of a call made while a capture records (capture.cpp, cold): on the capturing thread it launches and
// records the call; on any other thread it only launches. None, or NULL with an exception set.
[[gnu::noinline]] PyObject* capture_launch(JitFunctionObject* self, const Specialization* spec, PyObject** slots,
                                           const PyptoTensorArg* targs, const PyptoScalarArg* scalars,
                                           int64_t elements);

}  // namespace pypto::py
