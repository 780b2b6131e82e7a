// module: the pypto._core extension — registers the JitFunction type and a few core queries.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "core/backend.h"
#include "pypto/kernel_abi.h"
#include "python/jit_function.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "pypto native core: argument binding, specialization table and launch";
  PyObject* type = pypto::py::make_jit_function_type();
  if (type == nullptr) throw nb::python_error();
  m.attr("JitFunction") = nb::steal(type);
  m.attr("KERNEL_ABI_VERSION") = PYPTO_KERNEL_ABI_VERSION;
  m.attr("MAX_RANK") = PYPTO_MAX_RANK;
  m.def("backend_unavailable_reason",
        [](int run_mode) { return pypto::backend_unavailable_reason(static_cast<pypto::RunMode>(run_mode)); },
        nb::arg("run_mode"), "'' when the run mode can run here, else why not");
}
