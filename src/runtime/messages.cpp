// messages: the C++ runtime's error messages (cold) — status names, argument descriptions, the call's errors
// (worded as the Python extension's: core/messages).
#include <cstring>

#include "core/binder.h"
#include "core/dtype.h"
#include "core/launch.h"
#include "core/messages.h"
#include "core/overlap.h"
#include "runtime/kernel_impl.h"

namespace pypto::runtime {

const char* status_code_name(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kTypeError: return "TypeError";
    case StatusCode::kValueError: return "ValueError";
    case StatusCode::kOverflowError: return "OverflowError";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kLoadError: return "LoadError";
    case StatusCode::kBackendUnavailable: return "BackendUnavailableError";
    case StatusCode::kKernelError: return "KernelRuntimeError";
  }
  return "Unknown";
}

namespace detail {

namespace {
std::string head(const KernelImpl& k) { return msg::head(k.table); }
std::string head(const KernelImpl& k, int pos) { return msg::head(k.table, pos); }

// "float32[64, 96]"
std::string describe_dl(const DLTensor& t) {
  char buf[64];
  dlpack_dtype_describe(t.dtype, buf, sizeof buf);
  std::string s = std::string(buf) + "[";
  for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}
}  // namespace

bool is_float_dtype(int dt) {
  return dt == PYPTO_DT_FP16 || dt == PYPTO_DT_BF16 || dt == PYPTO_DT_FP32 || dt == PYPTO_DT_FP64;
}

const char* arg_type_name(const Arg& a) {
  switch (a.kind()) {
    case Arg::Kind::kNone: return "NoneType";
    case Arg::Kind::kBool: return "bool";
    case Arg::Kind::kInt: return "int";
    case Arg::Kind::kFloat: return "float";
    case Arg::Kind::kStr: return "str";
    case Arg::Kind::kTuple: return "tuple";
    case Arg::Kind::kDLTensor: return "DLTensor";
    case Arg::Kind::kTensorRef: return "TensorRef";
  }
  return "?";
}

std::string arg_repr(const Arg& a) {
  switch (a.kind()) {
    case Arg::Kind::kNone: return "None";
    case Arg::Kind::kBool: return a.as_int() ? "True" : "False";
    case Arg::Kind::kInt: return std::to_string(a.as_int());
    case Arg::Kind::kFloat: return float_repr(a.as_float());
    case Arg::Kind::kStr: {
      ConstValue c;
      c.kind = ConstValue::Kind::kStr;
      c.s = std::string(a.as_str());
      return c.repr();
    }
    case Arg::Kind::kTuple: {
      std::string r = "(";
      for (size_t i = 0; i < a.size(); ++i) r += (i ? ", " : "") + arg_repr(a.items()[i]);
      if (a.size() == 1) r += ",";
      return r + ")";
    }
    case Arg::Kind::kDLTensor:
    case Arg::Kind::kTensorRef: return "<tensor>";
  }
  return "?";
}

Status positional_error(const KernelImpl& k, size_t n) {
  return fail(StatusCode::kTypeError, msg::too_many_positional(k.table, k.n_positional, static_cast<long long>(n)));
}

Status unexpected_keyword_error(const KernelImpl& k, const char* name) {
  return fail(StatusCode::kTypeError, msg::unexpected_keyword(k.table, name ? name : "(null)"));
}

Status multiple_values_error(const KernelImpl& k, int pos) {
  return fail(StatusCode::kTypeError, msg::multiple_values(k.table, pos));
}

Status foreign_keywords_error(const KernelImpl& k, const KernelImpl& other) {
  return fail(StatusCode::kValueError, head(k) + "these Keywords were resolved for kernel '" + other.table.kernel +
                                           "' (use Kernel::keywords of the kernel called)");
}

Status missing_error(const KernelImpl& k, const Arg* const* slots) {
  std::vector<bool> missing(k.table.params.size());
  for (size_t i = 0; i < missing.size(); ++i) missing[i] = slots[i] == nullptr && !k.has_default[i];
  return fail(StatusCode::kTypeError, msg::missing_arguments(k.table, missing));
}

Status not_a_tensor_error(const KernelImpl& k, int t, const Arg& a) {
  const int pos = k.table.tensor_pos[t];
  if (a.kind() == Arg::Kind::kDLTensor)
    return fail(StatusCode::kTypeError, head(k, pos) + "got a null DLTensor pointer");
  return fail(StatusCode::kTypeError, head(k, pos) + "expected a tensor (DLTensor or TensorRef) for " +
                                          k.table.describe_tensor(t) + ", got " + arg_type_name(a) + " " +
                                          arg_repr(a));
}

Status check_error(const KernelImpl& k, const DLTensor* dl) {
  BindError e = tensor_error(k.table, dl);
  if (!e) return fail(StatusCode::kValueError, head(k) + "invalid tensor arguments");
  return fail(e.kind == ErrorKind::kType ? StatusCode::kTypeError : StatusCode::kValueError, e.message);
}

Status scalar_error(const KernelImpl& k, int pos, const Arg& a) {
  const int dt = k.table.params[pos].scalar_dtype;
  if (a.kind() == Arg::Kind::kFloat && !is_float_dtype(dt))
    return fail(StatusCode::kTypeError, msg::scalar_float_for_integer(k.table, pos, arg_repr(a)));
  return fail(StatusCode::kTypeError, msg::scalar_wrong_type(k.table, pos, arg_type_name(a)));
}

Status constant_error(const KernelImpl& k, int c, const Arg* a) {
  const int pos = k.table.constexpr_pos[c];
  if (a != nullptr && a->is_tensor())
    return fail(StatusCode::kTypeError, msg::constant_got_tensor(k.table, pos, arg_type_name(*a)));
  std::string have;
  for (const ConstValue& v : k.const_values[c]) have += (have.empty() ? "" : ", ") + v.repr();
  const std::string value = a ? arg_repr(*a) : k.defaults[pos].repr() + " (the default)";
  return fail(StatusCode::kNotFound, head(k, pos) + "the bundle has no specialization for the compile-time "
                                         "constant value " + value + (a ? " (" + std::string(arg_type_name(*a)) + ")" : "") +
                                         "; exported values: " + (have.empty() ? "none" : have) +
                                         "; export the kernel with an example that uses this value");
}

Status no_spec_error(const KernelImpl& k, const DLTensor* dl, const Arg* const* slots) {
  std::string call;
  for (size_t i = 0; i < k.table.params.size(); ++i) {
    const Param& p = k.table.params[i];
    if (p.kind == pypto::ParamKind::kScalar) continue;
    call += call.empty() ? "" : ", ";
    if (p.kind == pypto::ParamKind::kTensor)
      call += p.name + ": " + describe_dl(dl[p.kind_index]);
    else
      call += p.name + "=" + (slots[i] ? arg_repr(*slots[i]) : k.defaults[i].repr());
  }
  std::string have;
  for (const std::string& s : k.spec_descriptions) have += "\n  " + s;
  return fail(StatusCode::kNotFound, head(k) + "no exported specialization matches this call (" + call +
                                         "); the bundle has " + std::to_string(k.spec_descriptions.size()) +
                                         ":" + have);
}

Status overlap_error(const KernelImpl& k, int pair) {
  return fail(StatusCode::kValueError, overlap_message(k.table, pair));
}

Status backend_error(const KernelImpl& k) { return fail(StatusCode::kBackendUnavailable, head(k) + k.backend_reason); }

Status kernel_launch_error(const KernelImpl& k, const char* error) {
  return fail(StatusCode::kKernelError, kernel_error_message(k.table.kernel, error));
}

Status unprepared_error(const KernelImpl& k) {
  return fail(StatusCode::kValueError, head(k) + "launch() of a call that was not prepared");
}

Status exception_error(StatusCode c, const std::exception& e) {
  return fail(c, std::string("pypto runtime: ") + e.what());
}

}  // namespace detail

}  // namespace pypto::runtime
