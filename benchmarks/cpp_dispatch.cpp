// C++ dispatch cost of the pypto runtime: bind + checks + key + lookup per call, with an empty kernel body.
//
//   cpp_dispatch BUNDLE [time REPEATS N | loop CASE N]
//
// `time`: per case, the median over REPEATS interleaved rounds of the mean per-call time of N calls (ns).
// `loop CASE N`: runs N calls of one case inside bench_loop() (for callgrind --toggle-collect=bench_loop).
// Cases (kernel `dispatch3`: three [STATIC, STATIC] float32 tensors + two constants; `dispatch_dyn`: two
// [DYNAMIC, 64] tensors + a runtime scalar):
//   prepare_dl       Kernel::prepare, DLTensor args, constants by position       (bind+checks+key+lookup)
//   prepare_named    Kernel::prepare, TensorRef args, constants by name (NamedArg: names matched per call)
//   prepare_kw       Kernel::prepare, TensorRef args, constants by name through a Keywords resolved once
//   prepare_dyn      Kernel::prepare on dispatch_dyn (DYNAMIC dims + a scalar)
//   call_empty       prepare + launch of an empty kernel body (launch() with the entry replaced by a no-op)
//   call_real        Kernel::call of the real 4x4 kernel (for reference: includes the kernel's work)
#include <pypto/runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace rt = pypto::runtime;

namespace {

extern "C" int empty_entry(const PyptoTensorArg*, const PyptoScalarArg*, PyptoLaunchContext*) { return 0; }

struct Setup {
  const rt::Kernel* k3;
  const rt::Kernel* kd;
  float a[16], b[16], out[16];
  int64_t shape[2] = {4, 4};
  DLTensor da, db, dout;
  float x[8 * 64], y[8 * 64];
  int64_t dshape[2] = {8, 64};
};

volatile int g_sink;

template <class F>
__attribute__((noinline)) int bench_loop(long n, F&& f) {
  int bad = 0;
  for (long i = 0; i < n; ++i) bad += !f();
  return bad;
}

bool run_case(Setup& s, const std::string& c, long n) {
  int bad = 0;
  if (c == "prepare_dl") {
    rt::Arg args[] = {s.da, s.db, s.dout, 2.0, 16};
    rt::PreparedCall p;
    bad = bench_loop(n, [&] { return s.k3->prepare(args, 5, nullptr, 0, &p).ok(); });
  } else if (c == "prepare_named") {
    rt::TensorRef ra{s.a, s.shape, 2, PYPTO_DT_FP32}, rb{s.b, s.shape, 2, PYPTO_DT_FP32},
        ro{s.out, s.shape, 2, PYPTO_DT_FP32};
    rt::Arg args[] = {ra, rb, ro};
    rt::NamedArg kw[] = {{"alpha", 2.0}, {"tile", 16}};
    rt::PreparedCall p;
    bad = bench_loop(n, [&] { return s.k3->prepare(args, 3, kw, 2, &p).ok(); });
  } else if (c == "prepare_kw") {
    rt::TensorRef ra{s.a, s.shape, 2, PYPTO_DT_FP32}, rb{s.b, s.shape, 2, PYPTO_DT_FP32},
        ro{s.out, s.shape, 2, PYPTO_DT_FP32};
    rt::Arg args[] = {ra, rb, ro};
    static const rt::Keywords kws = s.k3->keywords({"alpha", "tile"});
    rt::Arg values[] = {2.0, 16};
    rt::PreparedCall p;
    bad = bench_loop(n, [&] { return s.k3->prepare(args, 3, kws, values, &p).ok(); });
  } else if (c == "prepare_dyn") {
    rt::TensorRef rx{s.x, s.dshape, 2, PYPTO_DT_FP32}, ry{s.y, s.dshape, 2, PYPTO_DT_FP32};
    rt::Arg args[] = {rx, ry, 0.5};
    rt::PreparedCall p;
    bad = bench_loop(n, [&] { return s.kd->prepare(args, 3, nullptr, 0, &p).ok(); });
  } else if (c == "call_empty") {
    rt::Arg args[] = {s.da, s.db, s.dout, 2.0, 16};
    rt::PreparedCall p;
    bad = bench_loop(n, [&] {
      if (!s.k3->prepare(args, 5, nullptr, 0, &p).ok()) return false;
      p.entry = empty_entry;
      return s.k3->launch(p).ok();
    });
  } else if (c == "call_real") {
    bad = bench_loop(n, [&] { return s.k3->call({s.da, s.db, s.dout, 2.0, 16}).ok(); });
  } else {
    std::fprintf(stderr, "unknown case %s\n", c.c_str());
    return false;
  }
  g_sink = bad;
  return bad == 0;
}

const char* kCases[] = {"prepare_dl", "prepare_named", "prepare_kw", "prepare_dyn", "call_empty", "call_real"};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s BUNDLE [time REPEATS N | loop CASE N]\n", argv[0]);
    return 2;
  }
  rt::Bundle bundle;
  if (rt::Status st = rt::Bundle::open(argv[1], &bundle); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  static Setup s;
  s.k3 = &bundle.kernel("dispatch3");
  s.kd = &bundle.kernel("dispatch_dyn");
  s.da = DLTensor{s.a, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, s.shape, nullptr, 0};
  s.db = DLTensor{s.b, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, s.shape, nullptr, 0};
  s.dout = DLTensor{s.out, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, s.shape, nullptr, 0};
  const std::string mode = argc > 2 ? argv[2] : "time";
  if (mode == "loop") {
    if (argc != 5) return 2;
    return run_case(s, argv[3], std::atol(argv[4])) ? 0 : 1;
  }
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 11;
  const long n = argc > 4 ? std::atol(argv[4]) : 1000000;
  const int ncases = static_cast<int>(sizeof kCases / sizeof kCases[0]);
  for (const char* c : kCases)
    if (!run_case(s, c, n / 10)) {  // warm-up, and a correctness check of the case
      std::fprintf(stderr, "case %s failed\n", c);
      return 1;
    }
  // interleaved rounds: every case once per round, so that machine noise hits all cases alike
  std::vector<std::vector<double>> ns(ncases);
  for (int r = 0; r < repeats; ++r)
    for (int c = 0; c < ncases; ++c) {
      const auto t0 = std::chrono::steady_clock::now();
      run_case(s, kCases[c], n);
      ns[c].push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n);
    }
  for (int c = 0; c < ncases; ++c) {
    std::vector<double>& v = ns[c];
    std::sort(v.begin(), v.end());
    std::printf("%-14s median %.1f ns/call  (min %.1f, max %.1f; %d interleaved rounds x %ld calls)\n", kCases[c],
                v[v.size() / 2], v[0], v.back(), repeats, n);
  }
  return 0;
}
