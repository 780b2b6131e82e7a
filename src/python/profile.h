// profile: per-stage time counters of the cache-hit path, compiled in only when PYPTO_PROFILE is 1.
//
// CMake builds the extension twice: pypto._core (counters compiled out: the macros below expand to nothing, so the
// hit path pays zero) and pypto._core_prof (PYPTO_PROFILE=1), which `import pypto` loads as pypto._core when the
// environment has PYPTO_PROFILE=1. Stage boundaries are timed with the TSC; only calls that hit are committed.
#pragma once

#include <cstdint>

#ifndef PYPTO_PROFILE
#define PYPTO_PROFILE 0
#endif

namespace pypto::py::profile {

enum Stage { kBind = 0, kRead, kGuards, kKey, kLookup, kLaunch, kStages };
inline constexpr const char* kStageNames[kStages] = {"bind", "read", "guards", "key", "lookup", "launch"};

struct Totals {
  uint64_t calls = 0;
  uint64_t cycles[kStages] = {};
};
Totals& totals() noexcept;       // process-wide (the hit path holds the GIL when it commits)
double ns_per_tick();            // calibrated once against steady_clock
uint64_t ticks() noexcept;       // TSC where available, else steady_clock nanoseconds

#if PYPTO_PROFILE
struct Clock {
  uint64_t last = ticks();
  uint64_t cycles[kStages] = {};
  void mark(Stage s) noexcept {
    const uint64_t now = ticks();
    cycles[s] += now - last;
    last = now;
  }
  void commit() noexcept {
    Totals& t = totals();
    t.calls++;
    for (int i = 0; i < kStages; ++i) t.cycles[i] += cycles[i];
  }
};
#define PYPTO_PROF_START ::pypto::py::profile::Clock prof_clock_
#define PYPTO_PROF_MARK(stage) prof_clock_.mark(::pypto::py::profile::stage)
#define PYPTO_PROF_COMMIT() prof_clock_.commit()
#else
#define PYPTO_PROF_START static_cast<void>(0)
#define PYPTO_PROF_MARK(stage) static_cast<void>(0)
#define PYPTO_PROF_COMMIT() static_cast<void>(0)
#endif

}  // namespace pypto::py::profile
