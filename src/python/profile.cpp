// profile: counters and clock calibration (see profile.h).
#include "python/profile.h"

#include <chrono>
#include <thread>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace pypto::py::profile {

Totals& totals() noexcept {
  static Totals t;
  return t;
}

uint64_t ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

double ns_per_tick() {
  static const double v = [] {
#if defined(__x86_64__) || defined(__i386__)
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = ticks();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t c1 = ticks();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(c1 - c0);
#else
    return 1.0;
#endif
  }();
  return v;
}

}  // namespace pypto::py::profile
