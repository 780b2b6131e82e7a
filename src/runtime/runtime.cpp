// runtime: bundle loading and the C++ call path (see include/pypto/runtime.h, docs/embedding.md).
//
// The call path reuses src/core: ParamTable (built from the manifest), check_tensors/tensor_error (argument
// checks and their messages), pack_tensor_key + hash_key (the tensor part of the key), SpecializationTable
// (lock-free lookup), Module (dlopen + ABI check). Constants are keyed by the index of their value among the
// values the bundle was exported with (the Python path uses process-local interned ids instead).
#include "pypto/runtime.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/backend.h"
#include "core/binder.h"
#include "core/const_value.h"
#include "core/dtype.h"
#include "core/module.h"
#include "core/param_table.h"
#include "core/spec_table.h"
#include "runtime/sha256.h"

#ifndef PYPTO_VERSION
#error "PYPTO_VERSION must be defined by the build"
#endif

namespace pypto::runtime {

namespace {
constexpr int kBundleFormatVersion = 1;
constexpr const char* kBundleFormat = "pypto-bundle";
}  // namespace

const char* version() noexcept { return PYPTO_VERSION; }
unsigned kernel_abi_version() noexcept { return PYPTO_KERNEL_ABI_VERSION; }

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

constexpr uint8_t kSlowMatch = 0xFF;
struct ConstFast {
  uint8_t kind;   // Arg::Kind of a matching argument, or kSlowMatch
  uint64_t word;  // Arg::bits() of a matching argument
};

struct KernelImpl {
  ParamTable table;
  std::vector<ParamInfo> info;
  int n_positional = 0;
  // per parameter
  std::vector<bool> has_default;
  std::vector<ConstValue> defaults;
  // per constant parameter (constexpr index): the values the bundle has, and the default's index (-1: none)
  std::vector<std::vector<ConstValue>> const_values;
  std::vector<int> default_const_index;
  // per scalar parameter (scalar index): the default, when there is one
  std::vector<PyptoScalarArg> default_scalars;
  SpecializationTable specs;
  mutable std::atomic<const Specialization*> memo{nullptr};
  std::vector<std::string> spec_descriptions;
  std::string backend_reason;
  // the call path's flat copies of the table's counts and positions, and of the constant values: per value its
  // Arg kind + 8 value bytes (int, bool, float bits), or kSlowMatch (str, tuple, enum: compared by matches())
  int n_params = 0, n_tensors = 0, n_scalars = 0, n_constexprs = 0;
  int scalar_pos[kMaxParams], constexpr_pos[kMaxParams];
  bool scalar_is_float[kMaxParams];
  bool backend_ok = true;
  std::vector<ConstFast> const_fast;
  std::vector<int> const_begin;  // const_fast[const_begin[c] .. const_begin[c + 1]) are constant c's values
  int32_t num_threads = 1;
  int32_t debug_mode = 0;
  Kernel handle{this};

  Status prepare(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named,
                 PreparedCall* out) const noexcept;
  [[gnu::noinline]] Status bind(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named,
                                PreparedCall* out) const noexcept;
  template <bool kPositional>
  Status finish(const Arg* args, const Arg* const* slots, PreparedCall* out) const noexcept;
  Status launch(const PreparedCall& p) const noexcept;
};

struct BundleImpl {
  std::string directory;
  std::string pypto_version;
  std::vector<std::unique_ptr<KernelImpl>> kernels;
};

}  // namespace detail

using detail::ConstFast;
using detail::KernelImpl;
using detail::kSlowMatch;

// ---------------------------------------------------------------------------------------------------------
// messages (cold)

namespace {

// PyptoDType -> DLDataType (as core/dtype.cpp's dtype_to_dlpack, inlined for the TensorRef path)
constexpr DLDataType kDLTypes[PYPTO_DT_COUNT] = {
    {kDLBool, 8, 1},  {kDLInt, 8, 1},   {kDLInt, 16, 1},    {kDLInt, 32, 1},   {kDLInt, 64, 1},
    {kDLUInt, 8, 1},  {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1}};

bool is_float_dtype(int dt) {
  return dt == PYPTO_DT_FP16 || dt == PYPTO_DT_BF16 || dt == PYPTO_DT_FP32 || dt == PYPTO_DT_FP64;
}

std::string head(const KernelImpl& k) { return "kernel '" + k.table.kernel + "': "; }
std::string head(const KernelImpl& k, int pos) {
  return "kernel '" + k.table.kernel + "': parameter '" + k.table.params[pos].name + "': ";
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

Status fail(StatusCode c, std::string m) { return Status(c, std::move(m)); }

// A word loop, not memcmp: keys are a few words, and glibc's AVX-512 memcmp with length 0 and a null pointer (an
// empty key) costs hundreds of cycles here (masked loads from an unmapped page).
inline bool same_key(const Specialization& s, const uint64_t* key, int n) noexcept {
  if (s.key.size() != static_cast<size_t>(n)) return false;
  const uint64_t* k = s.key.data();
  for (int i = 0; i < n; ++i)
    if (k[i] != key[i]) return false;
  return true;
}

// "float32[64, 96]"
std::string describe_dl(const DLTensor& t) {
  char buf[64];
  dlpack_dtype_describe(t.dtype, buf, sizeof buf);
  std::string s = std::string(buf) + "[";
  for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

// ---------------------------------------------------------------------------------------------------------
// constants: the call's value -> index among the exported values (allocation-free)

bool matches(const Arg& a, const ConstValue& c) noexcept {
  using K = ConstValue::Kind;
  switch (c.kind) {
    case K::kNone: return a.kind() == Arg::Kind::kNone;
    case K::kBool: return a.kind() == Arg::Kind::kBool && a.as_int() == c.i;
    case K::kInt: return a.kind() == Arg::Kind::kInt && a.as_int() == c.i;
    case K::kFloat: {
      if (a.kind() != Arg::Kind::kFloat) return false;
      const double v = a.as_float();
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      return bits == c.float_bits;
    }
    case K::kStr: return a.kind() == Arg::Kind::kStr && a.as_str() == std::string_view(c.s);
    case K::kEnum: {  // "Class.NAME" or "NAME"
      if (a.kind() != Arg::Kind::kStr) return false;
      const std::string_view s = a.as_str(), full(c.s);
      if (s == full) return true;
      const size_t dot = full.rfind('.');
      return dot != std::string_view::npos && s == full.substr(dot + 1);
    }
    case K::kTuple:
    case K::kList: {
      if (a.kind() != Arg::Kind::kTuple || a.size() != c.items.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!matches(a.items()[i], c.items[i])) return false;
      return true;
    }
  }
  return false;
}

[[gnu::cold]] Status positional_error(const KernelImpl& k, size_t n) {
  return fail(StatusCode::kTypeError, head(k) + "takes " + std::to_string(k.n_positional) +
                                          " positional argument(s) but " + std::to_string(n) + " were given");
}

[[gnu::cold]] Status missing_error(const KernelImpl& k, const Arg* const* slots) {
  std::string missing;
  for (size_t i = 0; i < k.table.params.size(); ++i)
    if (slots[i] == nullptr && !k.has_default[i])
      missing += (missing.empty() ? "'" : ", '") + k.table.params[i].name + "'";
  return fail(StatusCode::kTypeError, head(k) + "missing required argument(s) " + missing);
}

[[gnu::cold]] Status not_a_tensor_error(const KernelImpl& k, int t, const Arg& a) {
  const int pos = k.table.tensor_pos[t];
  if (a.kind() == Arg::Kind::kDLTensor)
    return fail(StatusCode::kTypeError, head(k, pos) + "got a null DLTensor pointer");
  return fail(StatusCode::kTypeError, head(k, pos) + "expected a tensor (DLTensor or TensorRef) for " +
                                          k.table.describe_tensor(t) + ", got " + arg_type_name(a) + " " +
                                          arg_repr(a));
}

[[gnu::cold]] Status check_error(const KernelImpl& k, const DLTensor* dl) {
  BindError e = tensor_error(k.table, dl);
  if (!e) return fail(StatusCode::kValueError, head(k) + "invalid tensor arguments");
  return fail(e.kind == ErrorKind::kType ? StatusCode::kTypeError : StatusCode::kValueError, e.message);
}

[[gnu::cold]] Status scalar_error(const KernelImpl& k, int pos, const Arg& a) {
  const int dt = k.table.params[pos].scalar_dtype;
  if (a.kind() == Arg::Kind::kFloat && !is_float_dtype(dt))
    return fail(StatusCode::kTypeError, head(k, pos) + "expected an integer for pypto.Scalar[" + dtype_name(dt) +
                                            "], got float " + arg_repr(a));
  return fail(StatusCode::kTypeError, head(k, pos) + "expected a " + dtype_name(dt) +
                                          " scalar (pypto.Scalar), got " + arg_type_name(a));
}

[[gnu::cold]] Status constant_error(const KernelImpl& k, int c, const Arg* a) {
  const int pos = k.table.constexpr_pos[c];
  if (a != nullptr && a->is_tensor())
    return fail(StatusCode::kTypeError, head(k, pos) + "is a compile-time constant (no pypto.Tensor annotation), "
                                            "got a tensor (" + arg_type_name(*a) +
                                            "); annotate it as pypto.Tensor(...) to pass a tensor");
  std::string have;
  for (const ConstValue& v : k.const_values[c]) have += (have.empty() ? "" : ", ") + v.repr();
  const std::string value = a ? arg_repr(*a) : k.defaults[pos].repr() + " (the default)";
  return fail(StatusCode::kNotFound, head(k, pos) + "the bundle has no specialization for the compile-time "
                                         "constant value " + value + (a ? " (" + std::string(arg_type_name(*a)) + ")" : "") +
                                         "; exported values: " + (have.empty() ? "none" : have) +
                                         "; export the kernel with an example that uses this value");
}

[[gnu::cold]] Status no_spec_error(const KernelImpl& k, const DLTensor* dl, const Arg* const* slots) {
  std::string call;
  for (size_t i = 0; i < k.table.params.size(); ++i) {
    const ParamSpec& p = k.table.params[i];
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

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// the call

Status KernelImpl::prepare(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named,
                           PreparedCall* out) const noexcept {
  if (n_args == static_cast<size_t>(n_params) && n_named == 0 && n_positional == n_params) [[likely]]
    return finish<true>(args, nullptr, out);  // every parameter by position: the arguments are the slots
  return bind(args, n_args, named, n_named, out);
}

Status KernelImpl::bind(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named,
                        PreparedCall* out) const noexcept try {
  // 1. bind: slots[i] is the argument of parameter i (nullptr: its default)
  const int np = n_params;
  const Arg* slots[kMaxParams];
  if (n_args > static_cast<size_t>(n_positional)) [[unlikely]] return positional_error(*this, n_args);
  for (size_t i = 0; i < n_args; ++i) slots[i] = &args[i];
  for (int i = static_cast<int>(n_args); i < np; ++i) slots[i] = nullptr;
  for (size_t k = 0; k < n_named; ++k) {
    const char* name = named[k].name;
    int j = 0;
    if (name != nullptr)  // first character, then the full name
      while (j < np && (name[0] != table.params[j].name[0] || std::strcmp(table.params[j].name.c_str(), name) != 0)) ++j;
    else
      j = np;
    if (j == np) [[unlikely]]
      return fail(StatusCode::kTypeError, head(*this) + "got an unexpected keyword argument '" +
                                              (name ? name : "(null)") + "'");
    if (slots[j] != nullptr) [[unlikely]]
      return fail(StatusCode::kTypeError, head(*this) + "got multiple values for argument '" +
                                              table.params[j].name + "'");
    slots[j] = &named[k].value;
  }
  for (int i = static_cast<int>(n_args); i < np; ++i)
    if (slots[i] == nullptr && !has_default[i]) [[unlikely]] return missing_error(*this, slots);
  return finish<false>(nullptr, slots, out);
} catch (const std::exception& e) {  // std::bad_alloc while building a message
  return fail(StatusCode::kValueError, std::string("pypto runtime: ") + e.what());
}

// After binding: the argument of parameter i is args[i] (kPositional) or slots[i] (nullptr: the default).
template <bool kPositional>
Status KernelImpl::finish(const Arg* args, const Arg* const* slots, PreparedCall* out) const noexcept try {
  auto arg = [&](int i) -> const Arg* { return kPositional ? &args[i] : slots[i]; };

  // 2. tensors: checks + the tensor part of the key in one pass (core/binder, shared with the Python path)
  const int nt = n_tensors;
  DLTensor dl[kMaxParams];
  for (int t = 0; t < nt; ++t) {
    const Arg& a = *arg(t);  // tensor parameters come first: tensor t is parameter t
    if (a.kind() == Arg::Kind::kDLTensor && a.dltensor() != nullptr) [[likely]] {
      dl[t] = *a.dltensor();
      if (dl[t].byte_offset != 0) [[unlikely]] {
        dl[t].data = static_cast<char*>(dl[t].data) + dl[t].byte_offset;
        dl[t].byte_offset = 0;
      }
    } else if (a.kind() == Arg::Kind::kTensorRef) {
      const TensorRef& r = a.tensor_ref();
      dl[t].data = r.data;
      dl[t].device = DLDevice{kDLCPU, 0};
      dl[t].ndim = r.ndim;
      dl[t].dtype = static_cast<unsigned>(r.dtype) < PYPTO_DT_COUNT ? kDLTypes[r.dtype] : DLDataType{3, 0, 0};
      dl[t].shape = const_cast<int64_t*>(r.shape);
      dl[t].strides = const_cast<int64_t*>(r.strides);
      dl[t].byte_offset = 0;
    } else [[unlikely]] {
      return not_a_tensor_error(*this, t, a);
    }
    out->tensors[t].data = dl[t].data;
    out->tensors[t].shape = dl[t].shape;
    out->tensors[t].ndim = dl[t].ndim;
  }
  uint64_t key[kMaxKeyWords];
  int n = bind_tensors(table, dl, key);
  if (n < 0) [[unlikely]] return check_error(*this, dl);

  // 3. runtime scalars
  for (int s = 0; s < n_scalars; ++s) {
    const Arg* a = arg(scalar_pos[s]);
    if (!kPositional && a == nullptr) {
      out->scalars[s] = default_scalars[s];
      continue;
    }
    const bool want_float = scalar_is_float[s];
    switch (a->kind()) {
      case Arg::Kind::kFloat:
        if (!want_float) [[unlikely]] return scalar_error(*this, scalar_pos[s], *a);
        out->scalars[s].f = a->as_float();
        break;
      case Arg::Kind::kInt:
      case Arg::Kind::kBool:
        if (want_float) out->scalars[s].f = static_cast<double>(a->as_int());
        else out->scalars[s].i = a->as_int();
        break;
      default:
        return scalar_error(*this, scalar_pos[s], *a);
    }
  }

  // 4. key: after the tensor words, one word per constant: 1 + the index of its value in the bundle
  for (int c = 0; c < n_constexprs; ++c) {
    const Arg* a = arg(constexpr_pos[c]);
    int idx = -1;
    if (!kPositional && a == nullptr) {
      idx = default_const_index[c];
    } else {
      const uint8_t kind = static_cast<uint8_t>(a->kind());
      const uint64_t w = a->bits();
      const ConstFast* const begin = const_fast.data() + const_begin[c];
      const ConstFast* const end = const_fast.data() + const_begin[c + 1];
      const ConstFast* f = begin;
      while (f != end && !(f->kind == kind && f->word == w)) ++f;
      if (f != end) [[likely]] {
        idx = static_cast<int>(f - begin);
      } else {  // str, tuple and enum values: the full comparison
        const std::vector<ConstValue>& vals = const_values[c];
        for (size_t v = 0; v < vals.size(); ++v)
          if (begin[v].kind == kSlowMatch && matches(*a, vals[v])) {
            idx = static_cast<int>(v);
            break;
          }
      }
    }
    if (idx < 0) [[unlikely]] return constant_error(*this, c, a);
    key[n++] = static_cast<uint64_t>(idx) + 1;
  }

  // 5. lookup
  if (!backend_ok) [[unlikely]] return fail(StatusCode::kBackendUnavailable, head(*this) + backend_reason);
  // The kernel's memo (the first specialization a call found; set once, so threads never write it again) is
  // checked by a plain key compare before hashing: the common serving case of one hot specialization per kernel
  // skips the hash's multiply chain and the probe.
  const Specialization* spec = memo.load(std::memory_order_acquire);
  if (spec == nullptr || !same_key(*spec, key, n)) {
    spec = specs.find(key, n, hash_key(key, n));
    if (spec != nullptr && memo.load(std::memory_order_relaxed) == nullptr) {
      const Specialization* expected = nullptr;
      memo.compare_exchange_strong(expected, spec, std::memory_order_release, std::memory_order_relaxed);
    }
  }
  if (spec == nullptr) [[unlikely]] {
    if (kPositional) {
      const Arg* s2[kMaxParams];
      for (int i = 0; i < n_params; ++i) s2[i] = &args[i];
      return no_spec_error(*this, dl, s2);
    }
    return no_spec_error(*this, dl, slots);
  }
  out->entry = spec->entry;
  out->n_tensors = nt;
  out->n_scalars = n_scalars;
  return Status();
} catch (const std::exception& e) {  // std::bad_alloc while building a message
  return fail(StatusCode::kValueError, std::string("pypto runtime: ") + e.what());
}

Status KernelImpl::launch(const PreparedCall& p) const noexcept try {
  if (p.entry == nullptr) [[unlikely]]
    return fail(StatusCode::kValueError, head(*this) + "launch() of a call that was not prepared");
  char error[512];
  error[0] = '\0';
  PyptoLaunchContext ctx{num_threads, debug_mode, error, sizeof error};
  const int rc = sim_launch(p.entry, p.tensors, p.scalars, &ctx);
  if (rc != 0) [[unlikely]]
    return fail(StatusCode::kKernelError, std::strncmp(error, "kernel '", 8) == 0
                                              ? std::string(error)
                                              : head(*this) + (error[0] ? error : "the kernel reported an error"));
  return Status();
} catch (const std::exception& e) {
  return fail(StatusCode::kKernelError, std::string("pypto runtime: ") + e.what());
}

Status Kernel::call(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named) const noexcept {
  PreparedCall p;
  Status s = impl_->prepare(args, n_args, named, n_named, &p);
  if (!s.ok()) [[unlikely]] return s;
  return impl_->launch(p);
}

Status Kernel::prepare(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named,
                       PreparedCall* out) const noexcept {
  return impl_->prepare(args, n_args, named, n_named, out);
}

Status Kernel::launch(const PreparedCall& p) const noexcept { return impl_->launch(p); }

const std::string& Kernel::name() const noexcept { return impl_->table.kernel; }
const std::vector<ParamInfo>& Kernel::params() const noexcept { return impl_->info; }
size_t Kernel::num_specializations() const noexcept { return impl_->specs.size(); }
std::vector<std::string> Kernel::specializations() const { return impl_->spec_descriptions; }

// ---------------------------------------------------------------------------------------------------------
// loading

namespace {

using json = nlohmann::json;

struct LoadFailure {
  std::string message;
};

[[noreturn]] void load_fail(const std::string& m) { throw LoadFailure{m}; }

// Strict integers: nlohmann's get<int64_t>() would truncate a float and wrap a large unsigned value.
int64_t get_int(const json& j, const std::string& what, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
  if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    load_fail(what + ": expected an integer, got " + j.dump());
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) load_fail(what + ": " + std::to_string(v) + " is out of range");
  return v;
}

uint64_t get_word(const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    load_fail(what + ": expected an unsigned integer, got " + j.dump());
  return j.get<uint64_t>();
}

int dtype_from_name(const json& j, const std::string& where) {
  if (j.is_null()) return kAnyDType;
  const std::string name = j.get<std::string>();
  for (int d = 0; d < PYPTO_DT_COUNT; ++d)
    if (name == dtype_name(d)) return d;
  load_fail(where + ": unknown dtype '" + name + "'");
}

ConstValue parse_value(const json& j, const std::string& where) {
  ConstValue v;
  const std::string type = j.at("type").get<std::string>();
  using K = ConstValue::Kind;
  if (type == "none") {
    v.kind = K::kNone;
  } else if (type == "bool") {
    v.kind = K::kBool;
    v.i = j.at("value").get<bool>() ? 1 : 0;
  } else if (type == "int") {
    v.kind = K::kInt;
    v.i = get_int(j.at("value"), where + ": int constant");
  } else if (type == "float") {
    v.kind = K::kFloat;
    const std::string bits = j.at("bits").get<std::string>();
    char* end = nullptr;
    v.float_bits = std::strtoull(bits.c_str(), &end, 16);
    if (bits.size() < 3 || end == nullptr || *end != '\0') load_fail(where + ": malformed float bits '" + bits + "'");
  } else if (type == "str") {
    v.kind = K::kStr;
    v.s = j.at("value").get<std::string>();
  } else if (type == "enum") {
    v.kind = K::kEnum;
    v.s = j.at("name").get<std::string>();
    v.i = get_int(j.at("value"), where + ": enum constant");
  } else if (type == "tuple" || type == "list") {
    v.kind = type == "tuple" ? K::kTuple : K::kList;
    for (const json& item : j.at("items")) v.items.push_back(parse_value(item, where));
  } else {
    load_fail(where + ": unknown constant type '" + type + "'");
  }
  return v;
}

std::string join(const std::string& dir, const std::string& rel) {
  return dir.empty() || dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

std::unique_ptr<KernelImpl> parse_kernel(const json& jk, const std::string& dir) {
  auto k = std::make_unique<KernelImpl>();
  ParamTable& t = k->table;
  t.kernel = jk.at("name").get<std::string>();
  const std::string where = "kernel '" + t.kernel + "'";
  for (const json& n : jk.at("dim_names")) t.dim_names.push_back(n.get<std::string>());
  for (const json& jp : jk.at("params")) {
    ParamSpec p;
    p.name = jp.at("name").get<std::string>();
    const std::string pw = where + ": parameter '" + p.name + "'";
    const std::string kind = jp.at("kind").get<std::string>();
    p.keyword_only = jp.at("keyword_only").get<bool>();
    if (kind == "tensor") {
      p.kind = pypto::ParamKind::kTensor;
      p.tensor.dtype = dtype_from_name(jp.at("dtype"), pw);
      p.tensor.any_shape = jp.at("any_shape").get<bool>();
      p.tensor.ellipsis = jp.at("ellipsis").get<bool>();
      p.tensor.format = static_cast<int>(get_int(jp.at("format"), pw + ": format", 0, 255));
      for (const json& jd : jp.at("dims")) {
        const std::string dk = jd.at("kind").get<std::string>();
        DimSpec d;
        if (dk == "FIXED") {
          d.kind = DimKind::kFixed;
          d.value = get_int(jd.at("value"), pw + ": fixed dimension", 0);
        } else if (dk == "STATIC") {
          d.kind = DimKind::kStatic;
        } else if (dk == "DYNAMIC") {
          d.kind = DimKind::kDynamic;
        } else if (dk == "NAMED") {
          d.kind = DimKind::kNamed;
          const std::string name = jd.at("name").get<std::string>();
          size_t idx = 0;
          while (idx < t.dim_names.size() && t.dim_names[idx] != name) ++idx;
          if (idx == t.dim_names.size()) load_fail(pw + ": named dimension '" + name + "' is not in dim_names");
          d.value = static_cast<int64_t>(idx);
        } else {
          load_fail(pw + ": unknown dimension kind '" + dk + "'");
        }
        p.tensor.dims.push_back(d);
      }
    } else if (kind == "scalar") {
      p.kind = pypto::ParamKind::kScalar;
      p.scalar_dtype = dtype_from_name(jp.at("dtype"), pw);
      if (p.scalar_dtype == kAnyDType) load_fail(pw + ": a scalar needs a dtype");
    } else if (kind == "constant") {
      p.kind = pypto::ParamKind::kConstexpr;
    } else {
      load_fail(pw + ": unknown parameter kind '" + kind + "'");
    }
    const bool has_default = jp.contains("default");
    k->has_default.push_back(has_default);
    k->defaults.push_back(has_default ? parse_value(jp.at("default"), pw + " (default)") : ConstValue{});
    if (!p.keyword_only) k->n_positional++;
    t.params.push_back(std::move(p));
  }
  const std::string err = t.finalize();
  if (!err.empty()) load_fail(err);
  for (size_t i = 0; i < t.params.size(); ++i) {
    const ParamSpec& p = t.params[i];
    ParamInfo info{p.name, static_cast<ParamKind>(p.kind), p.keyword_only, k->has_default[i], ""};
    if (p.kind == pypto::ParamKind::kTensor) {
      if (k->has_default[i]) load_fail(where + ": tensor parameter '" + p.name + "' has a default");
      info.annotation = t.describe_tensor(p.kind_index);
    } else if (p.kind == pypto::ParamKind::kScalar) {
      info.annotation = std::string("pypto.Scalar[") + dtype_name(p.scalar_dtype) + "]";
    } else {
      info.annotation = "constant";
    }
    k->info.push_back(std::move(info));
  }
  // scalar defaults
  k->default_scalars.resize(t.n_scalars());
  for (int s = 0; s < t.n_scalars(); ++s) {
    const int pos = t.scalar_pos[s];
    if (!k->has_default[pos]) continue;
    const ConstValue& d = k->defaults[pos];
    const bool f = is_float_dtype(t.params[pos].scalar_dtype);
    if (d.kind == ConstValue::Kind::kFloat && f) k->default_scalars[s].f = d.as_double();
    else if (d.kind == ConstValue::Kind::kInt || d.kind == ConstValue::Kind::kBool) {
      if (f) k->default_scalars[s].f = static_cast<double>(d.i);
      else k->default_scalars[s].i = d.i;
    } else {
      load_fail(where + ": parameter '" + t.params[pos].name + "': default " + d.repr() + " is not a " +
                dtype_name(t.params[pos].scalar_dtype) + " scalar");
    }
  }

  const std::string run_mode = jk.value("run_mode", std::string("SIM"));
  if (run_mode != "SIM" && run_mode != "NPU") load_fail(where + ": unknown run_mode '" + run_mode + "'");
  k->backend_reason = backend_unavailable_reason(run_mode == "SIM" ? RunMode::kSim : RunMode::kNpu);
  k->num_threads = static_cast<int32_t>(get_int(jk.at("num_threads"), where + ": num_threads", 1, 1 << 16));
  k->debug_mode = static_cast<int32_t>(get_int(jk.at("debug_mode"), where + ": debug_mode", 0, 64));

  // specializations
  k->const_values.resize(t.n_constexprs());
  const json& jspecs = jk.at("specializations");
  if (!jspecs.is_array() || jspecs.empty()) load_fail(where + ": the bundle has no specializations for it");
  struct Pending {
    std::vector<int> const_index;
    const json* j;
  };
  std::vector<Pending> pending;
  for (const json& js : jspecs) {
    Pending pd{{}, &js};
    const json& jc = js.at("constants");
    for (int c = 0; c < t.n_constexprs(); ++c) {
      const std::string& name = t.params[t.constexpr_pos[c]].name;
      if (!jc.contains(name)) load_fail(where + ": a specialization has no value for constant '" + name + "'");
      ConstValue v = parse_value(jc.at(name), where + ": constant '" + name + "'");
      std::vector<ConstValue>& vals = k->const_values[c];
      size_t idx = 0;
      while (idx < vals.size() && vals[idx] != v) ++idx;
      if (idx == vals.size()) vals.push_back(std::move(v));
      pd.const_index.push_back(static_cast<int>(idx));
    }
    pending.push_back(std::move(pd));
  }
  k->default_const_index.assign(t.n_constexprs(), -1);
  for (int c = 0; c < t.n_constexprs(); ++c) {
    const int pos = t.constexpr_pos[c];
    if (!k->has_default[pos]) continue;
    const std::vector<ConstValue>& vals = k->const_values[c];
    for (size_t v = 0; v < vals.size(); ++v)
      if (vals[v] == k->defaults[pos]) k->default_const_index[c] = static_cast<int>(v);
  }

  k->n_params = static_cast<int>(t.params.size());
  k->n_tensors = t.n_tensors();
  k->n_scalars = t.n_scalars();
  k->n_constexprs = t.n_constexprs();
  for (int i = 0; i < k->n_tensors; ++i)
    if (t.tensor_pos[i] != i) load_fail(where + ": tensor parameters must come first");
  for (int i = 0; i < k->n_scalars; ++i) {
    k->scalar_pos[i] = t.scalar_pos[i];
    k->scalar_is_float[i] = is_float_dtype(t.params[t.scalar_pos[i]].scalar_dtype);
  }
  k->backend_ok = k->backend_reason.empty();
  for (int i = 0; i < k->n_constexprs; ++i) k->constexpr_pos[i] = t.constexpr_pos[i];
  for (int c = 0; c < k->n_constexprs; ++c) {
    k->const_begin.push_back(static_cast<int>(k->const_fast.size()));
    for (const ConstValue& v : k->const_values[c]) {
      using CK = ConstValue::Kind;
      ConstFast f{kSlowMatch, 0};
      if (v.kind == CK::kInt) f = {static_cast<uint8_t>(Arg::Kind::kInt), static_cast<uint64_t>(v.i)};
      else if (v.kind == CK::kBool) f = {static_cast<uint8_t>(Arg::Kind::kBool), static_cast<uint64_t>(v.i)};
      else if (v.kind == CK::kFloat) f = {static_cast<uint8_t>(Arg::Kind::kFloat), v.float_bits};
      else if (v.kind == CK::kNone) f = {static_cast<uint8_t>(Arg::Kind::kNone), Arg(none).bits()};
      k->const_fast.push_back(f);
    }
  }
  k->const_begin.push_back(static_cast<int>(k->const_fast.size()));

  for (const Pending& pd : pending) {
    const json& js = *pd.j;
    const std::string lib_rel = js.at("library").get<std::string>();
    const std::string sha = js.at("sha256").get<std::string>();
    if (lib_rel.empty() || lib_rel[0] == '/' || lib_rel.find("..") != std::string::npos)
      load_fail(where + ": library path '" + lib_rel + "' must be relative to the bundle directory");
    const std::string lib = join(dir, lib_rel);
    struct stat st;
    if (stat(lib.c_str(), &st) != 0)
      load_fail(where + ": library '" + lib + "' is missing: the bundle is incomplete; export it again");
    std::string got, err2;
    if (!detail::sha256_file(lib, &got, &err2)) load_fail(where + ": " + err2);
    if (got != sha)
      load_fail(where + ": library '" + lib + "' does not match the manifest (sha256 " + got + ", expected " + sha +
                "): the bundle was modified or corrupted; refusing to load it");
    std::string err3;
    auto module = Module::open(lib, &err3);
    if (!module) load_fail(where + ": " + err3);

    // the tensor part of the key, and its cross-check against the recorded argument shapes
    std::vector<uint64_t> key;
    for (const json& w : js.at("tensor_key")) key.push_back(get_word(w, where + ": tensor_key"));
    const json& jt = js.at("tensors");
    if (!jt.is_array() || jt.size() != static_cast<size_t>(t.n_tensors()))
      load_fail(where + ": a specialization describes " + std::to_string(jt.size()) + " tensors, the kernel has " +
                std::to_string(t.n_tensors()));
    std::vector<std::vector<int64_t>> shapes(t.n_tensors());
    std::vector<DLTensor> dl(t.n_tensors());
    std::string desc;
    for (int i = 0; i < t.n_tensors(); ++i) {
      const json& ji = jt[i];
      const int dt = dtype_from_name(ji.at("dtype"), where);
      if (dt == kAnyDType) load_fail(where + ": a specialization has no tensor dtype");
      std::string dims;
      if (!ji.at("shape").is_array() || ji.at("shape").size() > PYPTO_MAX_RANK)
        load_fail(where + ": a specialization's tensor shape is not a list of at most " +
                  std::to_string(PYPTO_MAX_RANK) + " dims");
      for (const json& d : ji.at("shape")) {
        if (d.is_null()) {
          shapes[i].push_back(1);  // any size: dynamic dims are not keyed
          dims += std::string(dims.empty() ? "" : ", ") + "DYNAMIC";
        } else if (d.is_string()) {
          shapes[i].push_back(1);  // a named dim: the same size everywhere, not keyed
          dims += std::string(dims.empty() ? "" : ", ") + d.get<std::string>();
        } else {
          shapes[i].push_back(get_int(d, where + ": a specialization's tensor shape", 0));
          dims += (dims.empty() ? "" : ", ") + std::to_string(shapes[i].back());
        }
      }
      dl[i] = DLTensor{nullptr, DLDevice{kDLCPU, 0}, static_cast<int32_t>(shapes[i].size()), dtype_to_dlpack(dt),
                       shapes[i].data(), nullptr, 0};
      desc += (desc.empty() ? "" : ", ") + t.tensor(i).name + ": " + dtype_name(dt) + "[" + dims + "]";
    }
    // the recorded tensors must satisfy the parameter table (dtype, rank, fixed dims: the binder's checks), and
    // the recorded key must be the one the binder computes for them
    std::vector<uint64_t> expect(kMaxKeyWords);
    const int nw = bind_tensors(t, dl.data(), expect.data());
    if (nw < 0)
      load_fail(where + ": a specialization's tensors (" + desc + ") do not satisfy the parameter table: " +
                tensor_error(t, dl.data()).message + "; the manifest is inconsistent");
    if (static_cast<int>(key.size()) != nw || !std::equal(key.begin(), key.end(), expect.begin()))
      load_fail(where + ": a specialization's tensor_key does not match its tensor shapes: the manifest is "
                        "inconsistent");
    for (int c = 0; c < t.n_constexprs(); ++c) {
      key.push_back(static_cast<uint64_t>(pd.const_index[c]) + 1);
      desc += ", " + t.params[t.constexpr_pos[c]].name + "=" + k->const_values[c][pd.const_index[c]].repr();
    }
    auto spec = std::make_unique<Specialization>();
    spec->hash = hash_key(key.data(), static_cast<int>(key.size()));
    spec->key = std::move(key);
    spec->entry = module->entry();
    spec->module = std::move(module);
    spec->written_mask = get_word(js.at("written_mask"), where + ": written_mask");
    spec->library_path = lib;
    const Specialization* placed = k->specs.insert(std::move(spec));
    if (placed->library_path != lib) load_fail(where + ": two specializations have the same key (" + desc + ")");
    k->spec_descriptions.push_back(desc);
  }
  return k;
}

}  // namespace

Status Bundle::open(const std::string& directory, Bundle* out) {
  const std::string path = join(directory, "manifest.json");
  try {
    std::ifstream f(path);
    if (!f) return fail(StatusCode::kLoadError, "cannot open bundle manifest '" + path + "': no such file");
    std::stringstream ss;
    ss << f.rdbuf();
    json m;
    try {
      m = json::parse(ss.str());
    } catch (const json::parse_error& e) {
      return fail(StatusCode::kLoadError, "malformed bundle manifest '" + path + "': " + e.what());
    }
    if (!m.is_object() || m.value("format", std::string()) != kBundleFormat)
      return fail(StatusCode::kLoadError, "'" + path + "' is not a pypto bundle manifest (no \"format\": \"" +
                                              kBundleFormat + "\")");
    const int fv = m.at("format_version").get<int>();
    if (fv != kBundleFormatVersion)
      return fail(StatusCode::kLoadError, "bundle '" + directory + "' has format version " + std::to_string(fv) +
                                              ", this runtime reads version " +
                                              std::to_string(kBundleFormatVersion) + "; export it again");
    const std::string pv = m.at("pypto_version").get<std::string>();
    if (pv != PYPTO_VERSION)
      return fail(StatusCode::kLoadError, "bundle '" + directory + "' was exported by pypto " + pv +
                                              ", this runtime is pypto " + PYPTO_VERSION +
                                              "; export it again with this version");
    const unsigned abi = m.at("kernel_abi_version").get<unsigned>();
    if (abi != PYPTO_KERNEL_ABI_VERSION)
      return fail(StatusCode::kLoadError, "bundle '" + directory + "' was built for kernel ABI " +
                                              std::to_string(abi) + ", this runtime implements ABI " +
                                              std::to_string(PYPTO_KERNEL_ABI_VERSION) + "; export it again");
    auto impl = std::make_shared<detail::BundleImpl>();
    impl->directory = directory;
    impl->pypto_version = pv;
    for (const json& jk : m.at("kernels")) {
      auto k = parse_kernel(jk, directory);
      for (const auto& other : impl->kernels)
        if (other->table.kernel == k->table.kernel)
          return fail(StatusCode::kLoadError, "bundle '" + directory + "' has two kernels named '" +
                                                  k->table.kernel + "'");
      impl->kernels.push_back(std::move(k));
    }
    out->impl_ = std::move(impl);
    return Status();
  } catch (const LoadFailure& e) {
    return fail(StatusCode::kLoadError, "bundle '" + directory + "': " + e.message);
  } catch (const json::exception& e) {
    return fail(StatusCode::kLoadError, "malformed bundle manifest '" + path + "': " + e.what());
  } catch (const std::exception& e) {
    return fail(StatusCode::kLoadError, "cannot load bundle '" + directory + "': " + e.what());
  }
}

Bundle Bundle::load(const std::string& directory) {
  Bundle b;
  Status s = open(directory, &b);
  if (!s.ok()) throw Error(std::move(s));
  return b;
}

const Kernel* Bundle::find(std::string_view name) const noexcept {
  if (!impl_) return nullptr;
  for (const auto& k : impl_->kernels)
    if (k->table.kernel == name) return &k->handle;
  return nullptr;
}

Status Bundle::kernel(std::string_view name, const Kernel** out) const {
  if (const Kernel* k = find(name)) {
    *out = k;
    return Status();
  }
  std::string have;
  for (const std::string& n : kernel_names()) have += (have.empty() ? "'" : ", '") + n + "'";
  return fail(StatusCode::kNotFound, "bundle '" + directory() + "' has no kernel '" + std::string(name) +
                                         "'; it has " + (have.empty() ? "none" : have));
}

const Kernel& Bundle::kernel(std::string_view name) const {
  const Kernel* k = nullptr;
  Status s = kernel(name, &k);
  if (!s.ok()) throw Error(std::move(s));
  return *k;
}

std::vector<std::string> Bundle::kernel_names() const {
  std::vector<std::string> r;
  if (impl_)
    for (const auto& k : impl_->kernels) r.push_back(k->table.kernel);
  return r;
}

const std::string& Bundle::directory() const noexcept {
  static const std::string empty;
  return impl_ ? impl_->directory : empty;
}

const std::string& Bundle::pypto_version() const noexcept {
  static const std::string empty;
  return impl_ ? impl_->pypto_version : empty;
}

}  // namespace pypto::runtime
