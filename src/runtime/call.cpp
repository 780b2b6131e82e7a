// call: the C++ runtime's call path — bind, check, key, look up (prepare), launch — noexcept and allocation-free
// on success; every failure jumps to a cold builder in messages.cpp.
#include <cstring>
#include <type_traits>

#include "core/backend.h"
#include "core/binder.h"
#include "core/dtype.h"
#include "core/launch.h"
#include "core/overlap.h"
#include "runtime/kernel_impl.h"

namespace pypto::runtime {

using detail::ConstFast;
using detail::KernelImpl;
using detail::kSlowMatch;
using namespace detail;

namespace {

// A TensorRef's dtype code as a DLPack layout (core/dtype.h, the one table); a code that is named only or unknown
// becomes the opaque code, which no annotation's layout matches.
inline DLDataType tensor_ref_dtype(int dtype) noexcept {
  const DLDataType d = dtype_to_dlpack(dtype);
  return d.bits != 0 ? d : DLDataType{3, 0, 0};
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

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// the call

Status KernelImpl::prepare(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named,
                           PreparedCall* out) const noexcept {
  if (n_args == static_cast<size_t>(n_params) && n_named == 0 && n_positional == n_params) [[likely]]
    return finish(AllPositional{args}, out);  // every parameter by position: the arguments are the slots
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
    if (j == np) [[unlikely]] return unexpected_keyword_error(*this, name);
    if (slots[j] != nullptr) [[unlikely]] return multiple_values_error(*this, j);
    slots[j] = &named[k].value;
  }
  for (int i = static_cast<int>(n_args); i < np; ++i)
    if (slots[i] == nullptr && !has_default[i]) [[unlikely]] return missing_error(*this, slots);
  return finish(BySlots{slots}, out);
} catch (const std::exception& e) {  // std::bad_alloc while building a message
  return exception_error(StatusCode::kValueError, e);
}

// Keyword layouts: names resolved once (cold), then bound by position.
Status KernelImpl::keywords(const std::string_view* names, size_t n, Keywords* out) const try {
  Keywords kw;
  kw.kernel_ = this;
  for (int i = 0; i < kMaxParams; ++i) kw.src_[i] = -1;
  uint64_t named = 0;
  for (size_t k = 0; k < n; ++k) {
    int j = 0;
    while (j < n_params && table.params[j].name != names[k]) ++j;
    if (j == n_params) return unexpected_keyword_error(*this, std::string(names[k]).c_str());
    if (named >> j & 1) return multiple_values_error(*this, j);
    named |= uint64_t{1} << j;
    kw.src_[j] = static_cast<int8_t>(k);
  }
  int min_args = 0;
  for (int i = 0; i < n_params; ++i)
    if (!has_default[i] && !(named >> i & 1)) min_args = i + 1;
  const int first_named = named != 0 ? __builtin_ctzll(named) : n_params;
  kw.n_ = static_cast<uint8_t>(n);
  kw.min_args_ = static_cast<uint8_t>(min_args);
  kw.max_args_ = static_cast<uint8_t>(first_named < n_positional ? first_named : n_positional);
  *out = kw;
  return Status();
} catch (const std::exception& e) {
  return exception_error(StatusCode::kValueError, e);
}

Status KernelImpl::prepare(const Arg* args, size_t n_args, const Keywords& kw, const Arg* kw_values,
                           PreparedCall* out) const noexcept try {
  if (kw.kernel_ != this) [[unlikely]] {
    if (kw.kernel_ != nullptr) return foreign_keywords_error(*this, *kw.kernel_);
    return prepare(args, n_args, nullptr, 0, out);  // a default Keywords: no keywords
  }
  // no slot array: finish() asks ByKeywords for each parameter it reads
  const ByKeywords bound{args, static_cast<int>(n_args), kw.src_, kw_values};
  if (n_args < kw.min_args_ || n_args > kw.max_args_) [[unlikely]] {  // the same errors as the by-name bind
    if (n_args > static_cast<size_t>(n_positional)) return positional_error(*this, n_args);
    if (n_args > kw.max_args_) return multiple_values_error(*this, kw.max_args_);
    const Arg* slots[kMaxParams];
    for (int i = 0; i < n_params; ++i) slots[i] = bound(i);
    return missing_error(*this, slots);
  }
  return finish(bound, out);
} catch (const std::exception& e) {
  return exception_error(StatusCode::kValueError, e);
}

// finish()'s stages, always inlined into it (one function on the call path, as the Python extension's call_impl).
// After binding: arg(i) is the argument of parameter i (nullptr: the default; never for AllPositional).

// 2. tensors: each argument as a DLTensor (a TensorRef is converted), copied into the launch's arguments.
// Returns the index of a tensor parameter whose argument is not a tensor, or -1.
template <class Bound>
[[gnu::always_inline]] inline int read_tensor_args(const Bound& arg, int nt, DLTensor* dl, PreparedCall* out) noexcept {
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
      dl[t].dtype = tensor_ref_dtype(r.dtype);
      dl[t].shape = const_cast<int64_t*>(r.shape);
      dl[t].strides = const_cast<int64_t*>(r.strides);
      dl[t].byte_offset = 0;
    } else [[unlikely]] {
      return t;
    }
    out->tensors[t].data = dl[t].data;
    out->tensors[t].shape = dl[t].shape;
    out->tensors[t].ndim = dl[t].ndim;
  }
  return -1;
}

// 3. runtime scalars (a default when not given). Returns the position of a scalar of the wrong type, or -1.
template <bool kPositional, class Bound>
[[gnu::always_inline]] inline int read_scalar_args(const KernelImpl& k, const Bound& arg, PreparedCall* out) noexcept {
  for (int s = 0; s < k.n_scalars; ++s) {
    const Arg* a = arg(k.scalar_pos[s]);
    if (!kPositional && a == nullptr) {
      out->scalars[s] = k.default_scalars[s];
      continue;
    }
    const bool want_float = k.scalar_is_float[s];
    switch (a->kind()) {
      case Arg::Kind::kFloat:
        if (!want_float) [[unlikely]] return k.scalar_pos[s];
        out->scalars[s].f = a->as_float();
        break;
      case Arg::Kind::kInt:
      case Arg::Kind::kBool:
        if (want_float) out->scalars[s].f = static_cast<double>(a->as_int());
        else out->scalars[s].i = a->as_int();
        break;
      default:
        return k.scalar_pos[s];
    }
  }
  return -1;
}

// 4. constant c's key word: 1 + the index of the call's value among the bundle's values (0: none matches).
template <bool kPositional>
[[gnu::always_inline]] inline uint64_t constant_word(const KernelImpl& k, int c, const Arg* a) noexcept {
  if (!kPositional && a == nullptr) return static_cast<uint64_t>(k.default_const_index[c] + 1);
  const uint8_t kind = static_cast<uint8_t>(a->kind());
  const uint64_t w = a->bits();
  const ConstFast* const begin = k.const_fast.data() + k.const_begin[c];
  const ConstFast* const end = k.const_fast.data() + k.const_begin[c + 1];
  const ConstFast* f = begin;
  while (f != end && !(f->kind == kind && f->word == w)) ++f;
  if (f != end) [[likely]] return static_cast<uint64_t>(f - begin) + 1;
  const std::vector<ConstValue>& vals = k.const_values[c];  // str, tuple and enum values: the full comparison
  for (size_t v = 0; v < vals.size(); ++v)
    if (begin[v].kind == kSlowMatch && matches(*a, vals[v])) return static_cast<uint64_t>(v) + 1;
  return 0;
}

template <class Bound>
Status KernelImpl::finish(const Bound& arg, PreparedCall* out) const noexcept try {
  constexpr bool kPositional = std::is_same_v<Bound, AllPositional>;

  // 2. tensors: checks + the tensor part of the key in one pass (core/binder, shared with the Python path)
  const int nt = n_tensors;
  DLTensor dl[kMaxParams];
  if (const int bad = read_tensor_args(arg, nt, dl, out); bad >= 0) [[unlikely]]
    return not_a_tensor_error(*this, bad, *arg(bad));
  uint64_t key[kMaxKeyWords];
  int n = bind_tensors(table, dl, key);
  if (n < 0) [[unlikely]] return check_error(*this, dl);

  // 3. runtime scalars
  if (const int bad = read_scalar_args<kPositional>(*this, arg, out); bad >= 0) [[unlikely]]
    return scalar_error(*this, bad, *arg(bad));

  // 4. key: after the tensor words, one word per constant
  for (int c = 0; c < n_constexprs; ++c) {
    const uint64_t w = constant_word<kPositional>(*this, c, arg(constexpr_pos[c]));
    if (w == 0) [[unlikely]] return constant_error(*this, c, arg(constexpr_pos[c]));
    key[n++] = w;
  }

  // 5. lookup: one hot specialization per kernel skips the hash (SpecializationTable::find_memoized)
  if (!backend_ok) [[unlikely]] return backend_error(*this);
  const Specialization* spec = specs.find_memoized(key, n, hash_key);
  if (spec == nullptr) [[unlikely]] {
    const Arg* slots[kMaxParams];
    for (int i = 0; i < n_params; ++i) slots[i] = arg(i);
    return no_spec_error(*this, dl, slots);
  }
  if (const int pair = find_partial_overlap(dl, nt, spec->written_mask, spec->overlap_window); pair >= 0) [[unlikely]]
    return overlap_error(*this, pair);
  out->entry = spec->entry;
  out->n_tensors = nt;
  out->n_scalars = n_scalars;
  return Status();
} catch (const std::exception& e) {  // std::bad_alloc while building a message
  return exception_error(StatusCode::kValueError, e);
}

Status KernelImpl::launch(const PreparedCall& p) const noexcept try {
  if (p.entry == nullptr) [[unlikely]] return unprepared_error(*this);
  KernelLaunch launch(num_threads, debug_mode);
  if (launch.run(p.entry, p.tensors, p.scalars) != 0) [[unlikely]] return kernel_launch_error(*this, launch.error);
  return Status();
} catch (const std::exception& e) {
  return exception_error(StatusCode::kKernelError, e);
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

Status Kernel::keywords(const std::string_view* names, size_t n, Keywords* out) const {
  return impl_->keywords(names, n, out);
}

Keywords Kernel::keywords(std::initializer_list<std::string_view> names) const {
  Keywords kw;
  Status s = impl_->keywords(names.begin(), names.size(), &kw);
  if (!s.ok()) throw Error(std::move(s));
  return kw;
}

Status Kernel::call(const Arg* args, size_t n_args, const Keywords& kw, const Arg* kw_values) const noexcept {
  PreparedCall p;
  Status s = impl_->prepare(args, n_args, kw, kw_values, &p);
  if (!s.ok()) [[unlikely]] return s;
  return impl_->launch(p);
}

Status Kernel::prepare(const Arg* args, size_t n_args, const Keywords& kw, const Arg* kw_values,
                       PreparedCall* out) const noexcept {
  return impl_->prepare(args, n_args, kw, kw_values, out);
}

Status Kernel::launch(const PreparedCall& p) const noexcept { return impl_->launch(p); }

const std::string& Kernel::name() const noexcept { return impl_->table.kernel; }
const std::vector<ParamInfo>& Kernel::params() const noexcept { return impl_->info; }
size_t Kernel::num_specializations() const noexcept { return impl_->specs.size(); }
std::vector<std::string> Kernel::specializations() const { return impl_->spec_descriptions; }

}  // namespace pypto::runtime
