// C++ tests of the pypto runtime (include/pypto/runtime.h), driven by tests/ut/embed/test_runtime_cpp.py.
//
//   test_runtime unit BUNDLE [GROUP]      run the unit tests (groups: calls, errors, threads); prints PASS/FAIL lines
//   test_runtime load DIR...              try to load each bundle; prints one JSON line per directory
//   test_runtime case BUNDLE CASE.json    run one call described by CASE.json (written by the Python test);
//                                         writes every tensor argument back to <file>.out, prints a JSON status
//
// The bundle for `unit` is exported by the Python test from tests/ut/embed/_kernels.py with the examples listed
// there (scaled_add 4x4 alpha 1.0/2.0 and 8x8 alpha 2.0 tile 16; rows_exp; axpy; act relu/sigmoid).
#include <pypto/runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace pypto::runtime;

namespace {

int g_failed = 0, g_passed = 0;
std::string g_current;

struct Failure {
  std::string what;
};

#define CHECK(cond)                                                                                   \
  do {                                                                                                \
    if (!(cond)) throw Failure{std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #cond}; \
  } while (0)

#define CHECK_MSG(cond, msg)                                                                                     \
  do {                                                                                                           \
    if (!(cond)) throw Failure{std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #cond " -- " + (msg)}; \
  } while (0)

void expect_error(const Status& s, StatusCode code, std::initializer_list<const char*> parts) {
  CHECK_MSG(!s.ok(), "expected an error, got OK");
  CHECK_MSG(s.code() == code, std::string("wrong code ") + status_code_name(s.code()) + ": " + s.message());
  for (const char* p : parts)
    CHECK_MSG(s.message().find(p) != std::string::npos, "'" + std::string(p) + "' not in: " + s.message());
}

void run(const std::string& name, const std::function<void()>& fn) {
  g_current = name;
  try {
    fn();
    std::printf("PASS %s\n", name.c_str());
    ++g_passed;
  } catch (const Failure& f) {
    std::printf("FAIL %s: %s\n", name.c_str(), f.what.c_str());
    ++g_failed;
  } catch (const std::exception& e) {
    std::printf("FAIL %s: exception %s\n", name.c_str(), e.what());
    ++g_failed;
  }
}

// A float32 tensor owning its data, viewable as DLTensor and TensorRef.
struct Buf {
  std::vector<float> v;
  std::vector<int64_t> shape;
  DLTensor dl{};
  explicit Buf(std::vector<int64_t> s, float fill = 0.f) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    v.assign(n, fill);
    refresh();
  }
  void refresh() {
    dl = DLTensor{v.data(), DLDevice{kDLCPU, 0}, static_cast<int32_t>(shape.size()), DLDataType{kDLFloat, 32, 1},
                  shape.data(), nullptr, 0};
  }
  TensorRef ref() { return TensorRef{v.data(), shape.data(), static_cast<int32_t>(shape.size()), PYPTO_DT_FP32}; }
  void randomize(unsigned seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-2.f, 2.f);
    for (float& x : v) x = d(g);
  }
};

bool close(float a, float b) { return std::fabs(a - b) <= 1e-5f * (1.f + std::fabs(b)); }

void check_all(const std::vector<float>& got, const std::function<float(size_t)>& ref) {
  for (size_t i = 0; i < got.size(); ++i)
    CHECK_MSG(close(got[i], ref(i)), "element " + std::to_string(i) + ": got " + std::to_string(got[i]) +
                                         ", expected " + std::to_string(ref(i)));
}

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// ---------------------------------------------------------------------------------------------------------
void group_calls(const Bundle& bundle) {
  const Kernel& sa = bundle.kernel("scaled_add");
  run("calls.positional_default_constants", [&] {
    Buf a({4, 4}), b({4, 4}), out({4, 4}, -1.f);
    a.randomize(1);
    b.randomize(2);
    Status s = sa.call({a.dl, b.dl, out.dl});
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return a.v[i] * 1.0f + b.v[i]; });
  });
  run("calls.named_constant_selects_specialization", [&] {
    Buf a({4, 4}), b({4, 4}), out({4, 4}, -1.f);
    a.randomize(3);
    b.randomize(4);
    Status s = sa.call({a.dl, b.dl, out.dl}, {{"alpha", 2.0}});
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return a.v[i] * 2.0f + b.v[i]; });
  });
  run("calls.all_by_name_any_order", [&] {
    Buf a({4, 4}), b({4, 4}), out({4, 4}, -1.f);
    a.randomize(5);
    b.randomize(6);
    Status s = sa.call({}, {{"out", out.dl}, {"alpha", 2.0}, {"b", &b.dl}, {"a", a.ref()}});
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return a.v[i] * 2.0f + b.v[i]; });
  });
  run("calls.shape_and_two_constants", [&] {
    Buf a({8, 8}), b({8, 8}), out({8, 8}, -1.f);
    a.randomize(7);
    b.randomize(8);
    sa(a.ref(), b.ref(), out.ref(), 2.0, 16);  // positional constants, throwing layer
    check_all(out.v, [&](size_t i) { return a.v[i] * 2.0f + b.v[i]; });
  });
  run("calls.throwing_layer_named", [&] {
    Buf a({4, 4}), b({4, 4}), out({4, 4}, -1.f);
    a.randomize(9);
    b.randomize(10);
    sa(a.dl, b.dl, out.dl, kw("alpha", 2.0), kw("tile", 32));
    check_all(out.v, [&](size_t i) { return a.v[i] * 2.0f + b.v[i]; });
    bool thrown = false;
    try {
      sa(a.dl, b.dl, out.dl, kw("alpha", 5.0));
    } catch (const Error& e) {
      thrown = e.code() == StatusCode::kNotFound && std::string(e.what()).find("5.0") != std::string::npos;
    }
    CHECK(thrown);
  });
  run("calls.dynamic_dims_pass_through", [&] {
    const Kernel& re = bundle.kernel("rows_exp");
    CHECK(re.num_specializations() == 1);
    for (int64_t n : {1, 3, 16, 17, 40, 100}) {
      Buf x({n, 64}), out({n, 64}, -1.f);
      x.randomize(static_cast<unsigned>(n));
      Status s = re.call({x.dl, out.dl});
      CHECK_MSG(s.ok(), s.to_string());
      check_all(out.v, [&](size_t i) { return std::exp(x.v[i]); });
    }
  });
  run("calls.named_dims_and_runtime_scalar", [&] {
    const Kernel& ax = bundle.kernel("axpy");
    for (int64_t n : {1, 5, 1000}) {
      Buf x({n}), y({n}), out({n}, -1.f);
      x.randomize(11);
      y.randomize(12);
      Status s = ax.call({x.dl, y.dl, out.dl, 2.5});
      CHECK_MSG(s.ok(), s.to_string());
      check_all(out.v, [&](size_t i) { return x.v[i] * 2.5f + y.v[i]; });
      s = ax.call({x.dl, y.dl, out.dl}, {{"s", 3}});  // an int for a float scalar, like Python
      CHECK_MSG(s.ok(), s.to_string());
      check_all(out.v, [&](size_t i) { return x.v[i] * 3.0f + y.v[i]; });
    }
  });
  run("calls.string_tuple_keyword_only_constants", [&] {
    const Kernel& act = bundle.kernel("act");
    Buf x({8, 4}), out({8, 4}, -1.f);
    x.randomize(13);
    Status s = act.call({x.dl, out.dl});  // defaults: mode="relu", shift=(0, 1)
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return std::max(x.v[i], 0.f) + 1.f; });
    s = act.call({x.dl, out.dl, "sigmoid"}, {{"shift", Arg::tuple({2, 3})}});
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return sigmoid(x.v[i]) + 2.f; });
    s = act.call({x.dl, out.dl, "sigmoid"});  // shift default (0, 1) was exported only with relu
    expect_error(s, StatusCode::kNotFound, {"no exported specialization matches", "mode='sigmoid'", "shift=(0, 1)"});
    s = act.call({x.dl, out.dl, "gelu"});
    expect_error(s, StatusCode::kNotFound, {"parameter 'mode'", "'gelu'", "exported values: 'relu', 'sigmoid'"});
    s = act.call({x.dl, out.dl}, {{"shift", Arg::tuple({2.0, 3})}});  // 2.0 is not 2
    expect_error(s, StatusCode::kNotFound, {"parameter 'shift'", "(2.0, 3)"});
  });
  run("calls.introspection", [&] {
    CHECK(sa.name() == "scaled_add");
    CHECK(sa.num_specializations() == 3);
    CHECK(sa.params().size() == 5);
    CHECK(sa.params()[0].annotation == "pypto.Tensor([STATIC, STATIC], float32)");
    CHECK(sa.params()[3].kind == ParamKind::kConstant && sa.params()[3].has_default);
    const auto names = bundle.kernel_names();
    CHECK(names.size() == 4);
    CHECK(bundle.find("nope") == nullptr);
    const Kernel* k = nullptr;
    expect_error(bundle.kernel("nope", &k), StatusCode::kNotFound, {"no kernel 'nope'", "'scaled_add'"});
    CHECK(std::string(version()) == bundle.pypto_version());
    CHECK(kernel_abi_version() == PYPTO_KERNEL_ABI_VERSION);
  });
  run("calls.keywords_resolved_once", [&] {
    Buf a({4, 4}), b({4, 4}), out({4, 4}, -1.f);
    a.randomize(16);
    b.randomize(17);
    const Keywords kws = sa.keywords({"tile", "alpha"});  // any order; values follow the names
    CHECK(kws.size() == 2);
    Arg args[] = {a.dl, b.dl, out.dl};
    Arg values[] = {32, 2.0};
    Status s = sa.call(args, 3, kws, values);
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return a.v[i] * 2.0f + b.v[i]; });
    const Keywords only_alpha = sa.keywords({"alpha"});  // tile from its default
    Arg one[] = {1.0};
    PreparedCall p;
    s = sa.prepare(args, 3, only_alpha, one, &p);
    CHECK_MSG(s.ok(), s.to_string());
    s = sa.launch(p);
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return a.v[i] + b.v[i]; });
    const Keywords tensors = sa.keywords({"out", "b"});  // tensors by name, a by position
    Arg a_only[] = {a.ref()};
    Arg tv[] = {out.dl, b.ref()};
    std::fill(out.v.begin(), out.v.end(), -1.f);
    s = sa.call(a_only, 1, tensors, tv);
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return a.v[i] + b.v[i]; });
    const Kernel& act = bundle.kernel("act");  // a keyword-only constant
    Buf x({8, 4}), o({8, 4}, -1.f);
    x.randomize(18);
    const Keywords shift = act.keywords({"shift"});
    Arg xa[] = {x.dl, o.dl, "sigmoid"};
    const Arg items[] = {2, 3};  // tuple items must outlive the call
    Arg sv[] = {Arg::tuple(items, 2)};
    s = act.call(xa, 3, shift, sv);
    CHECK_MSG(s.ok(), s.to_string());
    check_all(o.v, [&](size_t i) { return sigmoid(x.v[i]) + 2.f; });
    s = sa.call(args, 3, Keywords(), nullptr);  // a default Keywords names nothing
    CHECK_MSG(s.ok(), s.to_string());
  });
  run("calls.prepare_then_launch", [&] {
    Buf a({4, 4}), b({4, 4}), out({4, 4}, -1.f);
    a.randomize(14);
    b.randomize(15);
    Arg args[] = {a.dl, b.dl, out.dl};
    NamedArg kwargs[] = {{"alpha", 2.0}};
    PreparedCall p;
    Status s = sa.prepare(args, 3, kwargs, 1, &p);
    CHECK_MSG(s.ok(), s.to_string());
    CHECK(out.v[0] == -1.f);  // nothing launched yet
    s = sa.launch(p);
    CHECK_MSG(s.ok(), s.to_string());
    check_all(out.v, [&](size_t i) { return a.v[i] * 2.0f + b.v[i]; });
  });
}

// ---------------------------------------------------------------------------------------------------------
void group_errors(const Bundle& bundle) {
  const Kernel& sa = bundle.kernel("scaled_add");
  Buf a({4, 4}, 1.f), b({4, 4}, 2.f), out({4, 4}, -7.f);
  auto untouched = [&] {
    for (float v : out.v) CHECK_MSG(v == -7.f, "output modified by a failed call");
  };
  run("errors.wrong_dtype", [&] {
    std::vector<int32_t> iv(16, 1);
    TensorRef r{iv.data(), a.shape.data(), 2, PYPTO_DT_INT32};
    expect_error(sa.call({a.dl, r, out.dl}), StatusCode::kTypeError,
                 {"kernel 'scaled_add': parameter 'b': expected dtype float32, got int32"});
    untouched();
  });
  run("errors.wrong_rank", [&] {
    Buf v3({2, 2, 4});
    expect_error(sa.call({v3.dl, b.dl, out.dl}), StatusCode::kValueError,
                 {"kernel 'scaled_add': parameter 'a': expected 2 dimensions", "got 3 (shape [2, 2, 4])"});
    untouched();
  });
  run("errors.fixed_dim", [&] {
    const Kernel& act = bundle.kernel("act");
    Buf x({7, 4}), o({8, 4}, -7.f);
    expect_error(act.call({x.dl, o.dl}), StatusCode::kValueError,
                 {"kernel 'act': parameter 'x': dimension 0 must be 8", "got 7 (shape [7, 4])"});
    for (float v : o.v) CHECK(v == -7.f);
  });
  run("errors.named_dim_disagrees", [&] {
    const Kernel& ax = bundle.kernel("axpy");
    Buf x({5}), y({6}), o({5}, -7.f);
    expect_error(ax.call({x.dl, y.dl, o.dl, 1.0}), StatusCode::kValueError,
                 {"kernel 'axpy': parameter 'y': dimension 0 is the named dimension 'N', expected 5", "got 6"});
    for (float v : o.v) CHECK(v == -7.f);
  });
  run("errors.non_contiguous", [&] {
    int64_t strides[2] = {1, 4};
    DLTensor t = a.dl;
    t.strides = strides;
    expect_error(sa.call({t, b.dl, out.dl}), StatusCode::kValueError,
                 {"parameter 'a': expected a contiguous (row-major) tensor, got strides [1, 4]"});
    untouched();
  });
  run("errors.non_cpu_device", [&] {
    DLTensor t = a.dl;
    t.device = DLDevice{kDLCUDA, 0};
    expect_error(sa.call({t, b.dl, out.dl}), StatusCode::kValueError, {"parameter 'a': expected a CPU tensor"});
    untouched();
  });
  run("errors.binding", [&] {
    expect_error(sa.call({a.dl, b.dl}), StatusCode::kTypeError,
                 {"kernel 'scaled_add': missing required argument(s) 'out'"});
    expect_error(sa.call({a.dl, b.dl, out.dl, 1.0, 32, 7}), StatusCode::kTypeError,
                 {"kernel 'scaled_add': takes 5 positional argument(s) but 6 were given"});
    expect_error(sa.call({a.dl, b.dl, out.dl}, {{"beta", 1.0}}), StatusCode::kTypeError,
                 {"kernel 'scaled_add': got an unexpected keyword argument 'beta'"});
    expect_error(sa.call({a.dl, b.dl, out.dl}, {{"a", a.dl}}), StatusCode::kTypeError,
                 {"kernel 'scaled_add': got multiple values for argument 'a'"});
    const Kernel& act = bundle.kernel("act");
    Buf x({8, 4});
    expect_error(act.call({x.dl, x.dl, "relu", Arg::tuple({0, 1})}), StatusCode::kTypeError,
                 {"kernel 'act': takes 3 positional argument(s) but 4 were given"});
    untouched();
  });
  run("errors.keywords", [&] {
    Keywords k;
    const std::string_view beta[] = {"alpha", "beta"};
    expect_error(sa.keywords(beta, 2, &k), StatusCode::kTypeError,
                 {"kernel 'scaled_add': got an unexpected keyword argument 'beta'"});
    const std::string_view twice[] = {"tile", "tile"};
    expect_error(sa.keywords(twice, 2, &k), StatusCode::kTypeError,
                 {"kernel 'scaled_add': got multiple values for argument 'tile'"});
    bool thrown = false;
    try {
      sa.keywords({"gamma"});
    } catch (const Error& e) {
      thrown = e.code() == StatusCode::kTypeError && std::string(e.what()).find("'gamma'") != std::string::npos;
    }
    CHECK(thrown);
    const Keywords kws = sa.keywords({"b", "alpha"});
    Arg vals[] = {b.dl, 2.0};
    Arg two[] = {a.dl, b.dl};
    expect_error(sa.call(two, 2, kws, vals), StatusCode::kTypeError,
                 {"kernel 'scaled_add': got multiple values for argument 'b'"});
    Arg one[] = {a.dl};
    expect_error(sa.call(one, 1, kws, vals), StatusCode::kTypeError,
                 {"kernel 'scaled_add': missing required argument(s) 'out'"});
    Arg six[] = {a.dl, b.dl, out.dl, 1.0, 32, 7};
    expect_error(sa.call(six, 6, sa.keywords({"alpha"}), vals), StatusCode::kTypeError,
                 {"kernel 'scaled_add': takes 5 positional argument(s) but 6 were given"});
    const Kernel& act = bundle.kernel("act");
    const Keywords foreign = act.keywords({"mode"});
    Arg three[] = {a.dl, b.dl, out.dl};
    Arg mode[] = {"relu"};
    expect_error(sa.call(three, 3, foreign, mode), StatusCode::kValueError,
                 {"kernel 'scaled_add': these Keywords were resolved for kernel 'act'"});
    Arg bad_alpha[] = {3.0};
    expect_error(sa.call(three, 3, sa.keywords({"alpha"}), bad_alpha), StatusCode::kNotFound,
                 {"parameter 'alpha': the bundle has no specialization for the compile-time constant value 3.0"});
    untouched();
  });
  run("errors.argument_kinds", [&] {
    expect_error(sa.call({a.dl, 3.0, out.dl}), StatusCode::kTypeError,
                 {"parameter 'b': expected a tensor (DLTensor or TensorRef) for pypto.Tensor([STATIC, STATIC], "
                  "float32), got float 3.0"});
    expect_error(sa.call({a.dl, static_cast<const DLTensor*>(nullptr), out.dl}), StatusCode::kTypeError,
                 {"parameter 'b': got a null DLTensor pointer"});
    expect_error(sa.call({a.dl, b.dl, out.dl, a.dl}), StatusCode::kTypeError,
                 {"parameter 'alpha': is a compile-time constant (no pypto.Tensor annotation), got a tensor"});
    const Kernel& ax = bundle.kernel("axpy");
    Buf x({5});
    expect_error(ax.call({x.dl, x.dl, x.dl, "two"}), StatusCode::kTypeError,
                 {"parameter 's': expected a float32 scalar (pypto.Scalar), got str"});
    untouched();
  });
  run("errors.constants_not_exported", [&] {
    expect_error(sa.call({a.dl, b.dl, out.dl}, {{"alpha", 3.0}}), StatusCode::kNotFound,
                 {"parameter 'alpha': the bundle has no specialization for the compile-time constant value 3.0",
                  "exported values: 1.0, 2.0"});
    expect_error(sa.call({a.dl, b.dl, out.dl}, {{"alpha", 2}}), StatusCode::kNotFound,
                 {"constant value 2 (int)", "exported values: 1.0, 2.0"});
    expect_error(sa.call({a.dl, b.dl, out.dl}, {{"tile", 16}}), StatusCode::kNotFound,
                 {"no exported specialization matches this call (a: float32[4, 4], b: float32[4, 4], "
                  "out: float32[4, 4], alpha=1.0, tile=16)",
                  "a: float32[8, 8], b: float32[8, 8], out: float32[8, 8], alpha=2.0, tile=16"});
    Buf a6({6, 6}), b6({6, 6}), o6({6, 6});
    expect_error(sa.call({a6.dl, b6.dl, o6.dl}), StatusCode::kNotFound,
                 {"no exported specialization matches this call (a: float32[6, 6]"});
    untouched();
  });
}

// ---------------------------------------------------------------------------------------------------------
void group_threads(const Bundle& bundle) {
  run("threads.concurrent_calls", [&] {
    const Kernel& sa = bundle.kernel("scaled_add");
    const Kernel& re = bundle.kernel("rows_exp");
    const Kernel& ax = bundle.kernel("axpy");
    constexpr int kThreads = 8, kIters = 300;
    std::atomic<int> bad{0}, errors_ok{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&, t] {
        Buf a({8, 8}), b({8, 8}), out({8, 8});
        Buf x({static_cast<int64_t>(t + 1), 64}), xo({static_cast<int64_t>(t + 1), 64});
        Buf v({static_cast<int64_t>(10 + t)}), w({static_cast<int64_t>(10 + t)}), vo({static_cast<int64_t>(10 + t)});
        a.randomize(100 + t);
        b.randomize(200 + t);
        x.randomize(300 + t);
        v.randomize(400 + t);
        w.randomize(500 + t);
        for (int i = 0; i < kIters; ++i) {
          const double alpha = 2.0;
          if (!sa.call({a.dl, b.dl, out.dl, alpha, 16}).ok()) bad++;
          for (size_t j = 0; j < out.v.size(); ++j)
            if (!close(out.v[j], a.v[j] * 2.f + b.v[j])) { bad++; break; }
          if (!re.call({x.dl, xo.dl}).ok()) bad++;
          for (size_t j = 0; j < xo.v.size(); ++j)
            if (!close(xo.v[j], std::exp(x.v[j]))) { bad++; break; }
          const double s = 0.5 * (i % 7);
          if (!ax.call({v.dl, w.dl, vo.dl, s}).ok()) bad++;
          for (size_t j = 0; j < vo.v.size(); ++j)
            if (!close(vo.v[j], v.v[j] * static_cast<float>(s) + w.v[j])) { bad++; break; }
          Status e = sa.call({a.dl, b.dl, out.dl, 9.0});  // an error path, concurrently
          if (e.code() == StatusCode::kNotFound) errors_ok++;
        }
      });
    }
    for (auto& th : ts) th.join();
    CHECK_MSG(bad.load() == 0, std::to_string(bad.load()) + " wrong results");
    CHECK(errors_ok.load() == kThreads * kIters);
  });
}

// ---------------------------------------------------------------------------------------------------------
// case runner (cross-check with the Python call)

int code_dtype_bytes(int dt) {
  static const int sizes[] = {1, 1, 2, 4, 8, 1, 2, 2, 4, 8};
  return dt >= 0 && dt < 10 ? sizes[dt] : 0;
}

struct CaseTensor {
  std::string file;
  std::vector<char> data;
  std::vector<int64_t> shape, strides;
  TensorRef ref;
};

int run_case(const std::string& bundle_dir, const std::string& case_path) {
  using json = nlohmann::json;
  std::ifstream f(case_path);
  json c = json::parse(f);
  Bundle bundle;
  Status s = Bundle::open(bundle_dir, &bundle);
  const Kernel* k = nullptr;
  if (s.ok()) s = bundle.kernel(c.at("kernel").get<std::string>(), &k);
  std::vector<CaseTensor> tensors;
  tensors.reserve(64);
  std::vector<std::vector<Arg>> tuple_store;
  tuple_store.reserve(64);
  std::vector<std::string> str_store;
  str_store.reserve(64);
  std::function<Arg(const json&)> make = [&](const json& j) -> Arg {
    if (j.contains("tensor")) {
      const json& t = j.at("tensor");
      CaseTensor ct;
      ct.file = t.at("file").get<std::string>();
      std::ifstream in(ct.file, std::ios::binary);
      ct.data.assign(std::istreambuf_iterator<char>(in), {});
      ct.shape = t.at("shape").get<std::vector<int64_t>>();
      if (t.contains("strides")) ct.strides = t.at("strides").get<std::vector<int64_t>>();
      tensors.push_back(std::move(ct));
      CaseTensor& r = tensors.back();
      r.ref = TensorRef{r.data.data(), r.shape.data(), static_cast<int32_t>(r.shape.size()),
                        t.at("dtype").get<int>(), r.strides.empty() ? nullptr : r.strides.data()};
      return Arg(r.ref);
    }
    const std::string type = j.at("type").get<std::string>();
    if (type == "none") return Arg(none);
    if (type == "bool") return Arg(j.at("value").get<bool>());
    if (type == "int") return Arg(j.at("value").get<long long>());
    if (type == "float") {
      const uint64_t bits = std::stoull(j.at("bits").get<std::string>(), nullptr, 16);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return Arg(d);
    }
    if (type == "str") {
      str_store.push_back(j.at("value").get<std::string>());
      return Arg(str_store.back());
    }
    if (type == "tuple" || type == "list") {
      std::vector<Arg> items;
      for (const json& it : j.at("items")) items.push_back(make(it));
      tuple_store.push_back(std::move(items));
      return Arg::tuple(tuple_store.back().data(), tuple_store.back().size());
    }
    throw std::runtime_error("case: unknown value type " + type);
  };
  if (s.ok()) {
    std::vector<Arg> args;
    std::vector<NamedArg> named;
    std::vector<std::string> names;
    names.reserve(64);
    for (const json& a : c.at("args")) args.push_back(make(a));
    for (auto it = c.at("kwargs").begin(); it != c.at("kwargs").end(); ++it) {
      names.push_back(it.key());
      named.push_back(NamedArg{names.back().c_str(), make(it.value())});
    }
    s = k->call(args.data(), args.size(), named.data(), named.size());
  }
  for (const CaseTensor& t : tensors) {
    (void)code_dtype_bytes;
    std::ofstream o(t.file + ".out", std::ios::binary);
    o.write(t.data.data(), static_cast<std::streamsize>(t.data.size()));
  }
  json r = {{"code", status_code_name(s.code())}, {"message", s.message()}};
  std::cout << r.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s unit BUNDLE [GROUP] | load DIR... | case BUNDLE CASE.json\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "load") {
    for (int i = 2; i < argc; ++i) {
      Bundle b;
      Status s = Bundle::open(argv[i], &b);
      nlohmann::json r = {{"dir", argv[i]}, {"code", status_code_name(s.code())}, {"message", s.message()},
                          {"kernels", b.kernel_names()}};
      std::cout << r.dump() << std::endl;
    }
    return 0;
  }
  if (mode == "case") {
    if (argc != 4) return 2;
    return run_case(argv[2], argv[3]);
  }
  if (mode != "unit") return 2;
  Bundle bundle;
  Status s = Bundle::open(argv[2], &bundle);
  if (!s.ok()) {
    std::printf("FAIL load: %s\n", s.to_string().c_str());
    return 1;
  }
  const std::string group = argc > 3 ? argv[3] : "all";
  if (group == "all" || group == "calls") group_calls(bundle);
  if (group == "all" || group == "errors") group_errors(bundle);
  if (group == "all" || group == "threads") group_threads(bundle);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 && g_passed > 0 ? 0 : 1;
}
