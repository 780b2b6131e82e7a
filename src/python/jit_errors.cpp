// jit_errors: the messages of a JitFunction call's errors, raised as Python exceptions (cold).
#include <vector>

#include "core/binder.h"
#include "core/launch.h"
#include "core/messages.h"
#include "core/overlap.h"
#include "python/jit_cold.h"
#include "python/tensor_reader.h"

namespace pypto::py {

PyObject* raise(PyObject* type, const std::string& msg) {
  // A call's argument errors are the reference's FeError and the builtin a user expects (`except
  // pypto.error.FeError` and `except TypeError` both catch them): pypto.errors' Argument{Type,Value}Error.
  const char* ours = type == PyExc_TypeError ? "ArgumentTypeError" : type == PyExc_ValueError ? "ArgumentValueError"
                                                                                               : nullptr;
  if (ours != nullptr) {
    PyObject* mod = PyImport_ImportModule("pypto.errors");
    PyObject* t = mod != nullptr ? PyObject_GetAttrString(mod, ours) : nullptr;
    Py_XDECREF(mod);
    if (t != nullptr) {
      PyErr_SetString(t, msg.c_str());
      Py_DECREF(t);
      return nullptr;
    }
    PyErr_Clear();  // pypto.errors unavailable (interpreter shutting down): the builtin still says it all
  }
  PyErr_SetString(type, msg.c_str());
  return nullptr;
}

PyObject* raise_pypto(const char* type_name, const std::string& msg) {
  PyObject* mod = PyImport_ImportModule("pypto.errors");
  if (mod == nullptr) return nullptr;
  PyObject* t = PyObject_GetAttrString(mod, type_name);
  Py_DECREF(mod);
  if (t == nullptr) return nullptr;
  PyErr_SetString(t, msg.c_str());
  Py_DECREF(t);
  return nullptr;
}

std::string py_repr(PyObject* o) {
  PyObject* s = PyObject_Repr(o);
  if (s == nullptr) {
    PyErr_Clear();
    if (PyLong_Check(o)) {  // an int beyond Python's limit for decimal text (sys.get_int_max_str_digits())
      PyObject* bits = PyObject_CallMethod(o, "bit_length", nullptr);
      const long long n = bits ? PyLong_AsLongLong(bits) : -1;
      Py_XDECREF(bits);
      PyErr_Clear();
      return "<an int of " + std::to_string(n) + " bits>";
    }
    return "<?>";
  }
  std::string r = PyUnicode_AsUTF8(s);
  Py_DECREF(s);
  return r.size() > 80 ? r.substr(0, 77) + "..." : r;
}

// numpy scalars (np.float32(2.0)) and 0-d arrays export a buffer but are numbers, not tensors.
bool is_tensor_like(PyObject* obj) {
  if (PyLong_Check(obj) || PyFloat_Check(obj) || PyUnicode_Check(obj)) return false;
  const ReaderKind k = reader_kind(obj);
  if (k == ReaderKind::kNone) return false;
  if (k != ReaderKind::kBuffer || Py_TYPE(obj)->tp_as_number == nullptr) return true;
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return true;
  }
  const bool scalar = view.ndim == 0;
  PyBuffer_Release(&view);
  return !scalar;
}

PyObject* bind_error_missing(JitState& st) {
  std::vector<bool> missing(st.table.params.size());
  for (size_t i = 0; i < missing.size(); ++i)
    missing[i] = st.call_shape.src[i] == CallShape::kDefault && st.defaults[i] == nullptr;
  return raise(PyExc_TypeError, msg::missing_arguments(st.table, missing));
}

// A reader's exception text, first line only: torch appends its C++ backtrace ("Exception raised from ...").
// A meta tensor is named as such instead of in DLPack's words.
static std::string reader_message(PyObject* value) {
  PyObject* s = PyObject_Str(value);
  if (s == nullptr) {
    PyErr_Clear();
    return "<?>";
  }
  const char* utf8 = PyUnicode_AsUTF8(s);
  std::string m = utf8 ? utf8 : "<?>";
  if (utf8 == nullptr) PyErr_Clear();
  Py_DECREF(s);
  m = m.substr(0, m.find('\n'));
  if (m.find("on meta") != std::string::npos)
    return "it is a meta tensor (a shape without data); pypto kernels read and write CPU memory";
  return m.size() > 300 ? m.substr(0, 297) + "..." : m;
}

PyObject* tensor_read_error(JitState& st, int t, PyObject* obj, int rc) {
  const int pos = st.table.tensor_pos[t];
  if (rc < 0) {  // the reader raised: keep its message, add ours in front
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    std::string inner = value ? reader_message(value) : "";
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return raise(PyExc_TypeError, msg::head(st.table, pos) + "cannot read the tensor argument (" + type_name(obj) +
                                      "): " + inner);
  }
  return raise(PyExc_TypeError, msg::head(st.table, pos) + "expected a tensor (torch.Tensor, numpy.ndarray or an "
                                    "object with __dlpack__) for " + st.table.describe_tensor(t) + ", got " +
                                    type_name(obj) + " " + py_repr(obj));
}

PyObject* tensor_check_error(JitState& st, const DLTensor* dl, PyObject** slots) {
  BindError e = tensor_error(st.table, dl);
  // dtypes pypto has no code for are best named by the framework itself (e.g. numpy's 'complex64')
  for (int t = 0; t < st.table.n_tensors(); ++t) {
    if (dtype_from_dlpack(dl[t].dtype) < 0 && e.message.find("'" + st.table.tensor(t).name + "'") != std::string::npos &&
        e.kind == ErrorKind::kType) {
      if (PyObject* d = PyObject_GetAttrString(slots[st.table.tensor_pos[t]], "dtype")) {
        PyObject* s = PyObject_Str(d);
        if (s) {
          std::string expected = st.table.tensor(t).tensor.dtype == kAnyDType
                                     ? "a dtype pypto supports" : dtype_name(st.table.tensor(t).tensor.dtype);
          e.message = msg::head(st.table, st.table.tensor_pos[t]) + "expected dtype " + expected + ", got " +
                      PyUnicode_AsUTF8(s);
          Py_DECREF(s);
        }
        Py_DECREF(d);
      }
      PyErr_Clear();
    }
  }
  return raise(e.kind == ErrorKind::kType ? PyExc_TypeError : PyExc_ValueError, e.message);
}

PyObject* scalar_overflow_error(JitState& st, int pos) {
  return raise(PyExc_OverflowError, msg::head(st.table, pos) + "integer does not fit in 64 bits");
}

PyObject* overlap_error(JitState& st, int pair) { return raise(PyExc_ValueError, overlap_message(st.table, pair)); }

PyObject* readonly_error(JitState& st, uint64_t written_readonly) {
  int t = 0;
  while (!(written_readonly >> t & 1)) ++t;
  return raise(PyExc_ValueError, msg::head(st.table, st.table.tensor_pos[t]) +
                                     "is written by the kernel, but the argument is read-only");
}

PyObject* autograd_write_error(JitState& st, int t, PyObject* obj, int why) {
  if (why < 0) return nullptr;  // the check itself raised
  const std::string head = msg::head(st.table, st.table.tensor_pos[t]);
  if (why == 2)
    return raise(PyExc_RuntimeError, head + "is written by the kernel, but it is an inference tensor: inplace update "
                                     "to inference tensor outside InferenceMode is not allowed");
  PyObject* leaf = PyObject_GetAttrString(obj, "is_leaf");
  const bool is_leaf = leaf == Py_True;
  Py_XDECREF(leaf);
  PyErr_Clear();
  if (is_leaf)  // torch's own words for the same mistake with its in-place ops
    return raise(PyExc_RuntimeError, head + "is written by the kernel in place: a leaf Variable that requires grad is "
                                     "being used in an in-place operation (use torch.no_grad() or .detach())");
  return raise(PyExc_RuntimeError, head + "is written by the kernel in place, but it requires grad and pypto kernels "
                                   "have no derivative: autograd could not see the write (use torch.no_grad(), "
                                   ".detach(), or kernel.as_torch_op() with a registered backward)");
}

PyObject* kernel_error(JitState& st, const char* error) {
  return raise_pypto("KernelRuntimeError", kernel_error_message(st.table.kernel, error));
}

}  // namespace pypto::py
