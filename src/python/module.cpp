// module: the pypto._core extension — registers the JitFunction type and a few core queries.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "core/backend.h"
#include "pypto/kernel_abi.h"
#include "python/jit_function.h"
#include "python/tensor_reader.h"

namespace nb = nanobind;

namespace {
// The floor for benchmarks: a C function taking the same vectorcall arguments and doing nothing.
PyObject* noop(PyObject*, PyObject* const*, Py_ssize_t, PyObject*) { Py_RETURN_NONE; }
PyMethodDef noop_def = {"noop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(noop)),
                        METH_FASTCALL | METH_KEYWORDS, "noop(*args, **kwargs) -> None: the vectorcall floor"};
}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "pypto native core: argument binding, specialization table and launch";
  PyObject* type = pypto::py::make_jit_function_type();
  if (type == nullptr) throw nb::python_error();
  m.attr("JitFunction") = nb::steal(type);
  m.attr("noop") = nb::steal(PyCFunction_NewEx(&noop_def, nullptr, nullptr));
  m.attr("KERNEL_ABI_VERSION") = PYPTO_KERNEL_ABI_VERSION;
  m.attr("MAX_RANK") = PYPTO_MAX_RANK;
  m.def("install_torch_reader",
        [](const std::string& path, nb::handle tensor_type, nb::handle probes) {
          return pypto::py::install_torch_reader(path.c_str(), tensor_type.ptr(), probes.ptr());
        },
        nb::arg("path"), nb::arg("tensor_type"), nb::arg("probes"),
        "Validate and install the torch reader library at `path`; returns '' or why it was not installed");
  m.def("backend_unavailable_reason",
        [](int run_mode) { return pypto::backend_unavailable_reason(static_cast<pypto::RunMode>(run_mode)); },
        nb::arg("run_mode"), "'' when the run mode can run here, else why not");
}
