// pypto C++ runtime: load an AOT bundle exported from Python (`kernel.export(dir, ...)`) and call its kernels
// with no Python interpreter.
//
//   #include <pypto/runtime.h>
//   using namespace pypto::runtime;
//   Bundle bundle = Bundle::load("/path/to/bundle");            // throws pypto::runtime::Error
//   const Kernel& k = bundle.kernel("scaled_add");
//   k(a, b, out, kw("alpha", 2.0));                             // throws on error
//   Status s = k.call({a, b, out}, {{"alpha", 2.0}});            // or: a Status, no exception
//
// Arguments: tensors as `DLTensor` (by reference or pointer) or `TensorRef` (raw pointer + shape + dtype);
// runtime scalars (pypto.Scalar[...]) as C++ numbers; compile-time constants as C++ values (int, double, bool,
// string, `none`, `Arg::tuple({...})`). A constant selects the exported specialization; a value no
// specialization was exported for is an error that lists what the bundle has. DYNAMIC dims pass through.
//
// The argument checks, the specialization key of the tensors and the lookup table are the same code as the
// Python extension's (src/core), so a call that fails in Python fails here with the same message.
// Thread safety: a loaded Bundle is immutable; any number of threads may call its kernels concurrently; the
// call path takes no lock and allocates nothing unless it fails.
#ifndef PYPTO_RUNTIME_H_
#define PYPTO_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pypto/dlpack.h"
#include "pypto/kernel_abi.h"

#if defined(PYPTO_RUNTIME_BUILDING)
#define PYPTO_RT_API __attribute__((visibility("default")))
#else
#define PYPTO_RT_API
#endif

namespace pypto {
namespace runtime {

// ---- results ------------------------------------------------------------------------------------------------

enum class StatusCode : int {
  kOk = 0,
  kTypeError,           // wrong kind/dtype of argument (Python: TypeError)
  kValueError,          // wrong shape, rank, device, layout (Python: ValueError)
  kOverflowError,       // an integer that does not fit (Python: OverflowError)
  kNotFound,            // no such kernel, or no exported specialization for these arguments
  kLoadError,           // the bundle cannot be loaded (manifest, version, missing or tampered library)
  kBackendUnavailable,  // the kernel's run mode cannot run here (Python: pypto.BackendUnavailableError)
  kKernelError,         // the kernel reported an error while running (Python: pypto.KernelRuntimeError)
};

PYPTO_RT_API const char* status_code_name(StatusCode code) noexcept;

class Status {
 public:
  Status() noexcept = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  explicit operator bool() const noexcept { return ok(); }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  // "TypeError: kernel 'k': parameter 'a': expected dtype float32, got int32"
  std::string to_string() const { return ok() ? "OK" : std::string(status_code_name(code_)) + ": " + message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Thrown by the exception-based convenience layer (Bundle::load, Kernel::operator(), Bundle::kernel).
class Error : public std::runtime_error {
 public:
  explicit Error(Status s) : std::runtime_error(s.message()), status_(std::move(s)) {}
  const Status& status() const noexcept { return status_; }
  StatusCode code() const noexcept { return status_.code(); }

 private:
  Status status_;
};

// ---- arguments ----------------------------------------------------------------------------------------------

// A dense tensor by raw pointer. `dtype` is a PyptoDType code (PYPTO_DT_FP32, ...). `strides` (in elements) may
// be null (row-major). The shape/strides arrays must stay valid for the duration of the call.
struct TensorRef {
  void* data = nullptr;
  const int64_t* shape = nullptr;
  int32_t ndim = 0;
  int32_t dtype = PYPTO_DT_FP32;
  const int64_t* strides = nullptr;
};

struct NoneType {};
inline constexpr NoneType none{};

// One argument: a tensor, a number, a string, None or a tuple. A non-owning view: strings and tuple items must
// outlive the call (literals and temporaries in the call expression do).
class Arg {
 public:
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kTuple, kDLTensor, kTensorRef };

  Arg() noexcept : kind_(Kind::kNone) {}
  Arg(NoneType) noexcept : kind_(Kind::kNone) {}
  Arg(std::nullptr_t) noexcept : kind_(Kind::kNone) {}
  Arg(bool v) noexcept : kind_(Kind::kBool) { u_.i = v; }
  Arg(int v) noexcept : kind_(Kind::kInt) { u_.i = v; }
  Arg(long v) noexcept : kind_(Kind::kInt) { u_.i = v; }
  Arg(long long v) noexcept : kind_(Kind::kInt) { u_.i = v; }
  Arg(unsigned v) noexcept : kind_(Kind::kInt) { u_.i = v; }
  Arg(unsigned long v) noexcept : kind_(Kind::kInt) { u_.i = static_cast<int64_t>(v); }       // as int64
  Arg(unsigned long long v) noexcept : kind_(Kind::kInt) { u_.i = static_cast<int64_t>(v); }  // as int64
  Arg(double v) noexcept : kind_(Kind::kFloat) { u_.f = v; }
  Arg(float v) noexcept : kind_(Kind::kFloat) { u_.f = v; }
  Arg(const char* s) noexcept : kind_(Kind::kStr) { u_.s = {s, std::char_traits<char>::length(s)}; }
  Arg(std::string_view s) noexcept : kind_(Kind::kStr) { u_.s = {s.data(), s.size()}; }
  Arg(const std::string& s) noexcept : kind_(Kind::kStr) { u_.s = {s.data(), s.size()}; }
  Arg(const DLTensor& t) noexcept : kind_(Kind::kDLTensor) { u_.dl = &t; }
  Arg(const DLTensor* t) noexcept : kind_(Kind::kDLTensor) { u_.dl = t; }
  Arg(const TensorRef& t) noexcept : kind_(Kind::kTensorRef) { u_.ref = t; }
  // A tuple (or list) constant. The items must outlive the call.
  static Arg tuple(const Arg* items, size_t n) noexcept {
    Arg a(none);
    a.kind_ = Kind::kTuple;
    a.u_.t = {items, n};
    return a;
  }
  static Arg tuple(std::initializer_list<Arg> items) noexcept { return tuple(items.begin(), items.size()); }

  Kind kind() const noexcept { return kind_; }
  bool is_tensor() const noexcept { return kind_ == Kind::kDLTensor || kind_ == Kind::kTensorRef; }
  int64_t as_int() const noexcept { return u_.i; }
  // The 8 value bytes (int, bool, or the double's bit pattern): the runtime's constant matcher compares these.
  uint64_t bits() const noexcept {
    uint64_t w;
    std::memcpy(&w, &u_, sizeof w);
    return w;
  }
  double as_float() const noexcept { return u_.f; }
  std::string_view as_str() const noexcept { return {u_.s.p, u_.s.n}; }
  const Arg* items() const noexcept { return u_.t.p; }
  size_t size() const noexcept { return u_.t.n; }
  const DLTensor* dltensor() const noexcept { return u_.dl; }
  const TensorRef& tensor_ref() const noexcept { return u_.ref; }

 private:
  Kind kind_;
  union U {
    int64_t i;
    double f;
    struct { const char* p; size_t n; } s;
    struct { const Arg* p; size_t n; } t;
    const DLTensor* dl;
    TensorRef ref;
    U() noexcept : i(0) {}
  } u_;
};

struct NamedArg {
  const char* name = nullptr;
  Arg value;
};
// A keyword argument for Kernel::operator(): k(a, b, out, kw("alpha", 2.0)).
inline NamedArg kw(const char* name, Arg value) noexcept { return NamedArg{name, value}; }

// ---- kernels and bundles ------------------------------------------------------------------------------------

namespace detail {
struct KernelImpl;
struct BundleImpl;
struct SequenceImpl;
}  // namespace detail

// Keyword names resolved once against one kernel, the way the Python side learns a call site's keyword layout:
//   static const Keywords kws = k.keywords({"alpha", "tile"});     // names checked here, once
//   Arg values[] = {2.0, 16};                                      // in the order of the names
//   k.call(args, 3, kws, values);
// A call then binds its keywords with two compares and a store per name: no string is compared. Valid for the
// kernel that resolved it while its bundle is loaded (a call with another kernel's Keywords is a kValueError).
// A default-constructed Keywords names nothing.
class Keywords {
 public:
  Keywords() noexcept = default;
  size_t size() const noexcept { return n_; }

 private:
  friend class Kernel;
  friend struct detail::KernelImpl;
  const detail::KernelImpl* kernel_ = nullptr;
  uint8_t n_ = 0;
  uint8_t min_args_ = 0;     // positional arguments needed: 1 + the last required parameter not named
  uint8_t max_args_ = 0;     // positional arguments allowed: the first named parameter (or the positional count)
  int8_t src_[64] = {};      // per parameter: the index of its name, or -1 (by position or its default)
};

// A bound call: everything needed to launch, produced by Kernel::prepare (bind + checks + key + lookup).
// The shapes point into the caller's tensors; valid while they are.
struct PreparedCall {
  PyptoKernelEntry entry = nullptr;
  int n_tensors = 0;
  int n_scalars = 0;
  PyptoTensorArg tensors[64];
  PyptoScalarArg scalars[64];
};

enum class ParamKind : uint8_t { kTensor = 0, kConstant = 1, kScalar = 2 };

struct ParamInfo {
  std::string name;
  ParamKind kind;
  bool keyword_only;
  bool has_default;
  std::string annotation;  // e.g. "pypto.Tensor([DYNAMIC, 64], float32)", "pypto.Scalar[float32]", "constant"
};

class PYPTO_RT_API Kernel {
 public:
  // The call, by position and by parameter name. Returns a non-OK Status (with the Python message) on any error;
  // nothing is launched and no output is touched unless every argument is valid.
  Status call(const Arg* args, size_t n_args, const NamedArg* named = nullptr, size_t n_named = 0) const noexcept;
  Status call(std::initializer_list<Arg> args, std::initializer_list<NamedArg> named = {}) const noexcept {
    return call(args.begin(), args.size(), named.begin(), named.size());
  }
  // Everything but the launch: bind, check, key, look up. `launch(p)` then runs it.
  Status prepare(const Arg* args, size_t n_args, const NamedArg* named, size_t n_named,
                 PreparedCall* out) const noexcept;
  Status launch(const PreparedCall& p) const noexcept;

  // Keyword names resolved once (see Keywords): an unknown or repeated name is a kTypeError here, not at the call.
  Status keywords(const std::string_view* names, size_t n, Keywords* out) const;
  Keywords keywords(std::initializer_list<std::string_view> names) const;  // throws Error
  // The call with keyword values by a resolved layout: kw_values[i] is the argument named by the i-th name.
  Status call(const Arg* args, size_t n_args, const Keywords& kw, const Arg* kw_values) const noexcept;
  Status prepare(const Arg* args, size_t n_args, const Keywords& kw, const Arg* kw_values,
                 PreparedCall* out) const noexcept;

  // Exception-throwing convenience: k(a, b, out, kw("alpha", 2.0)).
  template <class... A>
  void operator()(const A&... a) const {
    Arg pos[sizeof...(A) + 1];
    NamedArg named[sizeof...(A) + 1];
    size_t np = 0, nn = 0;
    (collect(a, pos, np, named, nn), ...);
    Status s = call(pos, np, named, nn);
    if (!s.ok()) throw Error(std::move(s));
  }

  const std::string& name() const noexcept;
  const std::vector<ParamInfo>& params() const noexcept;
  size_t num_specializations() const noexcept;
  // One line per exported specialization, e.g. "a: float32[64, 96], b: ..., alpha=2.0, tile=32".
  std::vector<std::string> specializations() const;

  explicit Kernel(const detail::KernelImpl* impl) noexcept : impl_(impl) {}

 private:
  static void collect(const NamedArg& a, Arg*, size_t&, NamedArg* named, size_t& nn) { named[nn++] = a; }
  template <class T>
  static void collect(const T& a, Arg* pos, size_t& np, NamedArg*, size_t&) { pos[np++] = Arg(a); }
  const detail::KernelImpl* impl_;
};

// One buffer of an exported sequence: a tensor the captured step passed (docs/capture.md).
struct BufferInfo {
  int32_t dtype = PYPTO_DT_FP32;  // PyptoDType code
  std::vector<int64_t> shape;     // exact (DYNAMIC sizes were frozen at capture)
  bool written = false;           // some launch writes it
  std::string first_use;          // "kernel 'k' parameter 'x' (launch 0)"
};

// A captured sequence of launches (`g.export(dir, name)` in Python): the step replayed with the caller's buffers.
//   const Sequence& step = bundle.sequence("step");
//   Status s = step.run({x, y, out}, {{"alpha", 0.5}});     // one buffer per captured tensor, in buffers() order
// run() checks every buffer against the captured one (a tensor, CPU, non-null, the dtype and exact shape, dense
// row-major; a written buffer may not overlap another), then runs the launches in order, with the recorded scalars
// and the named slots given. Nothing is launched unless every buffer and slot is valid. Thread safe; allocation-free
// unless it fails.
class PYPTO_RT_API Sequence {
 public:
  Status run(const Arg* buffers, size_t n_buffers, const NamedArg* slots = nullptr, size_t n_slots = 0) const noexcept;
  Status run(std::initializer_list<Arg> buffers, std::initializer_list<NamedArg> slots = {}) const noexcept {
    return run(buffers.begin(), buffers.size(), slots.begin(), slots.size());
  }
  const std::string& name() const noexcept;
  size_t num_launches() const noexcept;
  const std::vector<BufferInfo>& buffers() const noexcept;
  const std::vector<std::string>& slots() const noexcept;

  explicit Sequence(const detail::SequenceImpl* impl) noexcept : impl_(impl) {}

 private:
  const detail::SequenceImpl* impl_;
};

class PYPTO_RT_API Bundle {
 public:
  // Loads `directory` (holding manifest.json): checks the manifest, the format/pypto/kernel-ABI versions, every
  // library's sha256, loads the libraries and their ABI versions. Any problem -> a kLoadError Status.
  static Status open(const std::string& directory, Bundle* out);
  static Bundle load(const std::string& directory);  // throws Error

  Bundle() = default;
  bool valid() const noexcept { return impl_ != nullptr; }
  // nullptr when the bundle has no such kernel.
  const Kernel* find(std::string_view name) const noexcept;
  Status kernel(std::string_view name, const Kernel** out) const;
  const Kernel& kernel(std::string_view name) const;  // throws Error (kNotFound)
  std::vector<std::string> kernel_names() const;
  // The captured sequences (`g.export(dir, name)`): nullptr / kNotFound when the bundle has no such sequence.
  const Sequence* find_sequence(std::string_view name) const noexcept;
  Status sequence(std::string_view name, const Sequence** out) const;
  const Sequence& sequence(std::string_view name) const;  // throws Error (kNotFound)
  std::vector<std::string> sequence_names() const;
  const std::string& directory() const noexcept;
  const std::string& pypto_version() const noexcept;  // the exporter's (== this runtime's) version

 private:
  std::shared_ptr<const detail::BundleImpl> impl_;
};

// This runtime's pypto version and kernel ABI version.
PYPTO_RT_API const char* version() noexcept;
PYPTO_RT_API unsigned kernel_abi_version() noexcept;

}  // namespace runtime
}  // namespace pypto

#endif  // PYPTO_RUNTIME_H_
