// module: the pypto._core extension — registers the JitFunction type and a few core queries.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <stdexcept>

#include "core/backend.h"
#include "core/dtype.h"
#include "core/param_table_json.h"
#include "pypto/kernel_abi.h"
#include "python/capture.h"
#include "python/jit_function.h"
#include "python/profile.h"
#include "python/tensor_reader.h"

namespace nb = nanobind;

namespace pypto::py {
void register_capture(nb::module_& m);  // capture_replay.cpp
}  // namespace pypto::py

namespace {
// The floor for benchmarks: a C function taking the same vectorcall arguments and doing nothing.
PyObject* noop(PyObject*, PyObject* const*, Py_ssize_t, PyObject*) { Py_RETURN_NONE; }
PyMethodDef noop_def = {"noop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(noop)),
                        METH_FASTCALL | METH_KEYWORDS, "noop(*args, **kwargs) -> None: the vectorcall floor"};
}  // namespace

#ifndef PYPTO_EXT_NAME
#define PYPTO_EXT_NAME _core
#endif

NB_MODULE(PYPTO_EXT_NAME, m) {
  namespace prof = pypto::py::profile;
  m.doc() = "pypto native core: argument binding, specialization table and launch";
  PyObject* type = pypto::py::make_jit_function_type();
  if (type == nullptr) throw nb::python_error();
  m.attr("JitFunction") = nb::steal(type);
  pypto::py::register_capture(m);
  m.attr("noop") = nb::steal(PyCFunction_NewEx(&noop_def, nullptr, nullptr));
  m.attr("KERNEL_ABI_VERSION") = PYPTO_KERNEL_ABI_VERSION;
  m.attr("MAX_RANK") = PYPTO_MAX_RANK;
  // The names of the parameter table's encoding (core/param_table_json.h): Python encodes with these, never spells them.
  m.attr("PARAM_TENSOR") = pypto::kParamKindNames[int(pypto::ParamKind::kTensor)];
  m.attr("PARAM_CONSTANT") = pypto::kParamKindNames[int(pypto::ParamKind::kConstexpr)];
  m.attr("PARAM_SCALAR") = pypto::kParamKindNames[int(pypto::ParamKind::kScalar)];
  m.attr("DIM_FIXED") = pypto::kDimKindNames[int(pypto::DimKind::kFixed)];
  m.attr("DIM_STATIC") = pypto::kDimKindNames[int(pypto::DimKind::kStatic)];
  m.attr("DIM_DYNAMIC") = pypto::kDimKindNames[int(pypto::DimKind::kDynamic)];
  m.attr("DIM_NAMED") = pypto::kDimKindNames[int(pypto::DimKind::kNamed)];
  {
    nb::list names;  // by dtype code (PyptoDType, kernel_abi.h)
    for (int d = 0; d < PYPTO_DT_COUNT; ++d) names.append(pypto::dtype_name(d));
    m.attr("DTYPE_NAMES") = nb::tuple(names);
  }
  m.def("set_torch_tensor_type", [](nb::handle tensor_type) { pypto::py::set_torch_tensor_type(tensor_type.ptr()); },
        "make torch.Tensor known to the core (writes into torch tensors respect autograd)");
  m.def("install_torch_reader",
        [](const std::string& path, nb::handle tensor_type, nb::handle probes) {
          return pypto::py::install_torch_reader(path.c_str(), tensor_type.ptr(), probes.ptr());
        },
        nb::arg("path"), nb::arg("tensor_type"), nb::arg("probes"),
        "Validate and install the torch reader library at `path`; returns '' or why it was not installed");
  m.attr("PROFILED") = bool(PYPTO_PROFILE);
  m.def("profile_counters", []() {
    if (!PYPTO_PROFILE)
      throw std::runtime_error("pypto: the hit-path counters are compiled out of this build; set PYPTO_PROFILE=1 "
                               "before importing pypto to load the profiled extension (pypto._core_prof)");
    const prof::Totals& t = prof::totals();
    const double k = prof::ns_per_tick();
    nb::dict d;
    d["calls"] = t.calls;
    for (int i = 0; i < prof::kStages; ++i) d[prof::kStageNames[i]] = static_cast<double>(t.cycles[i]) * k;
    return d;
  }, "Per-stage totals over cache hits since the last reset, in ns: {calls, bind, read, guards, key, lookup, launch}");
  m.def("profile_reset", []() { prof::totals() = prof::Totals{}; }, "Zero the hit-path counters");
  m.def("backend_unavailable_reason",
        [](int run_mode) { return pypto::backend_unavailable_reason(static_cast<pypto::RunMode>(run_mode)); },
        nb::arg("run_mode"), "'' when the run mode can run here, else why not");
}
