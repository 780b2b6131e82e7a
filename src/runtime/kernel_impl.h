// kernel_impl: the runtime's private types — a loaded kernel (KernelImpl), a bundle (BundleImpl) — and the cold
// error builders the call path (call.cpp) jumps to (messages.cpp).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/const_value.h"
#include "core/param_table.h"
#include "core/spec_table.h"
#include "pypto/runtime.h"

namespace pypto::runtime::detail {


constexpr uint8_t kSlowMatch = 0xFF;
struct ConstFast {
  uint8_t kind;   // Arg::Kind of a matching argument, or kSlowMatch
  uint64_t word;  // Arg::bits() of a matching argument
};

// How KernelImpl::finish() finds the argument of parameter i after binding (nullptr: the parameter's default).
struct AllPositional {  // every parameter by position
  const Arg* args;
  const Arg* operator()(int i) const noexcept { return &args[i]; }
};
struct BySlots {  // bound by name (NamedArg): slots[i]
  const Arg* const* slots;
  const Arg* operator()(int i) const noexcept { return slots[i]; }
};
struct ByKeywords {  // a Keywords layout: the first n_args by position, then kw_values[src[i]]
  const Arg* args;
  int n_args;
  const int8_t* src;
  const Arg* values;
  const Arg* operator()(int i) const noexcept { return i < n_args ? &args[i] : src[i] >= 0 ? &values[src[i]] : nullptr; }
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
  Status prepare(const Arg* args, size_t n_args, const Keywords& kw, const Arg* kw_values,
                 PreparedCall* out) const noexcept;
  Status keywords(const std::string_view* names, size_t n, Keywords* out) const;
  template <class Bound>
  Status finish(const Bound& arg, PreparedCall* out) const noexcept;
  Status launch(const PreparedCall& p) const noexcept;
};

struct BundleImpl {
  std::string directory;
  std::string pypto_version;
  std::vector<std::unique_ptr<KernelImpl>> kernels;
  std::vector<std::shared_ptr<const SequenceImpl>> sequences;  // runtime/sequence.h
};


// ---- messages.cpp (cold)
inline Status fail(StatusCode c, std::string m) { return Status(c, std::move(m)); }
bool is_float_dtype(int dt);
const char* arg_type_name(const Arg& a);
std::string arg_repr(const Arg& a);
[[gnu::cold]] Status positional_error(const KernelImpl& k, size_t n);
[[gnu::cold]] Status unexpected_keyword_error(const KernelImpl& k, const char* name);
[[gnu::cold]] Status multiple_values_error(const KernelImpl& k, int pos);
[[gnu::cold]] Status foreign_keywords_error(const KernelImpl& k, const KernelImpl& other);
[[gnu::cold]] Status missing_error(const KernelImpl& k, const Arg* const* slots);
[[gnu::cold]] Status not_a_tensor_error(const KernelImpl& k, int t, const Arg& a);
[[gnu::cold]] Status check_error(const KernelImpl& k, const DLTensor* dl);
[[gnu::cold]] Status scalar_error(const KernelImpl& k, int pos, const Arg& a);
[[gnu::cold]] Status constant_error(const KernelImpl& k, int c, const Arg* a);
[[gnu::cold]] Status no_spec_error(const KernelImpl& k, const DLTensor* dl, const Arg* const* slots);
[[gnu::cold]] Status backend_error(const KernelImpl& k);
[[gnu::cold]] Status overlap_error(const KernelImpl& k, int pair);
[[gnu::cold]] Status kernel_launch_error(const KernelImpl& k, const char* error);
[[gnu::cold]] Status unprepared_error(const KernelImpl& k);
[[gnu::cold]] Status exception_error(StatusCode c, const std::exception& e);

}  // namespace pypto::runtime::detail
