// jit_function: the JitFunction type — a decorated kernel, callable with vectorcall.
//
// A plain CPython type rather than a nanobind class: the call path needs tp_vectorcall_offset and a fixed object
// layout, and every nanobind dispatch layer it avoids is instructions on the cache-hit path. nanobind registers it
// in the module (module.cpp). Its hit path is jit_call.cpp; construction and type plumbing jit_type.cpp;
// cold paths jit_slow.cpp and jit_errors.cpp.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace pypto::py {

// Creates the type object (once); returns a new reference or NULL with an exception set.
PyObject* make_jit_function_type();

// The call entry points (jit_call.cpp): a call (the type's vectorcall), kernel._probe(...) and kernel.compile(...).
PyObject* jit_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames);
PyObject* jit_probe(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
PyObject* jit_compile(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);

}  // namespace pypto::py
