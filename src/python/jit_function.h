// jit_function: the JitFunction type — a decorated kernel, callable with vectorcall.
//
// A plain CPython type rather than a nanobind class: the call path needs tp_vectorcall_offset and a fixed object
// layout, and every nanobind dispatch layer it avoids is instructions on the cache-hit path. nanobind registers it
// in the module (module.cpp).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace pypto::py {

// Creates the type object (once); returns a new reference or NULL with an exception set.
PyObject* make_jit_function_type();

}  // namespace pypto::py
