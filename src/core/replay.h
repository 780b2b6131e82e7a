// replay: a recorded sequence of kernel launches run in one call — the native half of `pypto.capture()`
// (src/python/capture.cpp records, capture_replay.cpp replays) and of the C++ runtime's sequences
// (src/runtime/sequence.cpp).
//
// A launch is its kernel entry, its packed tensor and scalar arguments (shapes copied in) and its launch options;
// the libraries stay loaded while the sequence lives (it holds their modules). Running takes no lock, allocates
// nothing and runs no Python: one indirect call per launch, over flat arrays. What makes the recorded pointers
// still valid (the captured tensors are alive and unmoved) is the caller's check, made before run().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "pypto/kernel_abi.h"

namespace pypto {

class LaunchSequence {
 public:
  // Appends one launch: copies the arguments (and the shapes they point to). `keep` is what keeps `entry` loaded
  // (its Module). Returns the launch's index. Invalidates the pointers tensors()/scalars() returned before.
  int add(PyptoKernelEntry entry, std::shared_ptr<const void> keep, const PyptoTensorArg* tensors, int n_tensors,
          const PyptoScalarArg* scalars, int n_scalars, int32_t num_threads, int32_t debug_mode, std::string kernel);

  // Runs every launch in order. Returns -1 when all succeeded, else the index of the launch that failed (the ones
  // after it did not run) with the kernel's message in `error` (NUL-terminated, `capacity` bytes).
  int run(char* error, size_t capacity) const noexcept {
    PyptoLaunchContext ctx{1, 0, error, static_cast<int64_t>(capacity)};
    error[0] = '\0';
    const PyptoTensorArg* t = tensors_.data();
    const PyptoScalarArg* s = scalars_.data();
    const int n = static_cast<int>(launches_.size());
    for (int i = 0; i < n; ++i) {
      const Launch& l = launches_[i];
      ctx.num_threads = l.num_threads;
      ctx.debug_mode = l.debug_mode;
      if (sim_launch(l.entry, t + l.tensor_begin, s + l.scalar_begin, &ctx) != 0) [[unlikely]] return i;
    }
    return -1;
  }

  size_t size() const noexcept { return launches_.size(); }
  int n_tensors(int launch) const noexcept { return launches_[launch].n_tensors; }
  int n_scalars(int launch) const noexcept { return launches_[launch].n_scalars; }
  // The launch's arguments, for rebinding between runs (a scalar slot; a caller's buffer in the C++ runtime).
  PyptoTensorArg* tensors(int launch) noexcept { return tensors_.data() + launches_[launch].tensor_begin; }
  PyptoScalarArg* scalars(int launch) noexcept { return scalars_.data() + launches_[launch].scalar_begin; }
  const PyptoTensorArg* tensors(int launch) const noexcept { return tensors_.data() + launches_[launch].tensor_begin; }
  const std::string& kernel(int launch) const noexcept { return kernels_[launch]; }
  PyptoKernelEntry entry(int launch) const noexcept { return launches_[launch].entry; }
  int32_t num_threads(int launch) const noexcept { return launches_[launch].num_threads; }

 private:
  struct Launch {
    PyptoKernelEntry entry;
    uint32_t tensor_begin, scalar_begin;
    int32_t num_threads, debug_mode;
    int32_t n_tensors, n_scalars;
  };
  std::vector<Launch> launches_;
  std::vector<PyptoTensorArg> tensors_;  // every launch's, in order; shape pointers into shapes_ (re-pointed on growth)
  std::vector<int64_t> shapes_;
  std::vector<PyptoScalarArg> scalars_;
  std::vector<std::shared_ptr<const void>> keep_;
  std::vector<std::string> kernels_;
  std::vector<uint32_t> shape_begin_;  // per tensor argument: its dims in shapes_
};

}  // namespace pypto
