// A serving-style use of the pypto C++ runtime: load a bundle once, then N worker threads run a batch of
// requests (variable row counts, per-request scalars and two constant variants) concurrently, and every result
// is checked against a reference computed here in C++.
//
//   serving BUNDLE_DIR [THREADS=4] [REQUESTS_PER_THREAD=2000]
#include <pypto/runtime.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace rt = pypto::runtime;

namespace {

struct Request {
  int64_t rows;
  float scale;
  double shift;  // a compile-time constant of scale_shift: 0.5 (default) or -1.0 were exported
};

bool close(float a, float b) { return std::fabs(a - b) <= 1e-5f * (1.f + std::fabs(b)); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s BUNDLE_DIR [THREADS] [REQUESTS_PER_THREAD]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  const int per_thread = argc > 3 ? std::atoi(argv[3]) : 2000;

  rt::Bundle bundle;
  if (rt::Status s = rt::Bundle::open(argv[1], &bundle); !s.ok()) {
    std::fprintf(stderr, "cannot load the bundle: %s\n", s.to_string().c_str());
    return 1;
  }
  const rt::Kernel& rows_exp = bundle.kernel("rows_exp");
  const rt::Kernel& scale_shift = bundle.kernel("scale_shift");
  std::printf("loaded %s (pypto %s): rows_exp (%zu specialization), scale_shift (%zu specializations)\n", argv[1],
              bundle.pypto_version().c_str(), rows_exp.num_specializations(), scale_shift.num_specializations());

  std::atomic<long> mismatches{0}, failures{0}, calls{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 rng(1234 + w);
      std::uniform_int_distribution<int64_t> rows_d(1, 48);
      std::uniform_real_distribution<float> val(-3.f, 3.f);
      std::vector<float> x, y, z;
      for (int r = 0; r < per_thread; ++r) {
        const Request req{rows_d(rng), val(rng), (r % 3 == 0) ? -1.0 : 0.5};
        const int64_t shape[2] = {req.rows, 64};
        x.resize(req.rows * 64);
        y.assign(x.size(), 0.f);
        z.assign(x.size(), 0.f);
        for (float& v : x) v = val(rng);
        rt::TensorRef tx{x.data(), shape, 2, PYPTO_DT_FP32}, ty{y.data(), shape, 2, PYPTO_DT_FP32},
            tz{z.data(), shape, 2, PYPTO_DT_FP32};
        // y = exp(x); z = y * scale + shift      (status-returning calls, by position and by name)
        rt::Status s = rows_exp.call({tx, ty});
        if (s.ok()) s = scale_shift.call({ty, tz, req.scale}, {{"shift", req.shift}});
        if (!s.ok()) {
          if (failures++ == 0) std::fprintf(stderr, "call failed: %s\n", s.to_string().c_str());
          continue;
        }
        calls += 2;
        for (size_t i = 0; i < x.size(); ++i) {
          const float ey = std::exp(x[i]);
          if (!close(y[i], ey) || !close(z[i], ey * req.scale + static_cast<float>(req.shift))) {
            mismatches++;
            break;
          }
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // An argument error is a Status with the same message as the Python call, never a crash.
  std::vector<float> bad(10 * 32);
  const int64_t bad_shape[2] = {10, 32};
  rt::Status e = rows_exp.call({rt::TensorRef{bad.data(), bad_shape, 2, PYPTO_DT_FP32},
                                rt::TensorRef{bad.data(), bad_shape, 2, PYPTO_DT_FP32}});
  std::printf("a wrong call reports: %s\n", e.to_string().c_str());

  std::printf("%d threads x %d requests: %ld kernel calls in %.3f s, %ld mismatches, %ld failed calls\n", threads,
              per_thread, calls.load(), secs, mismatches.load(), failures.load());
  const bool ok = mismatches == 0 && failures == 0 && calls == 2L * threads * per_thread &&
                  e.code() == rt::StatusCode::kValueError;
  std::printf(ok ? "OK\n" : "FAILED\n");
  return ok ? 0 : 1;
}
