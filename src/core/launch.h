// launch: running a specialization's kernel entry and naming its failure — one implementation for the Python
// extension and the C++ runtime.
#pragma once

#include <cstdint>
#include <string>

#include "core/backend.h"
#include "pypto/kernel_abi.h"

namespace pypto {

// The launch context of one call, with the buffer the kernel writes its error message into. Lives on the caller's
// stack for the duration of the call (ctx.error points into it: not copyable).
struct KernelLaunch {
  char error[512];
  PyptoLaunchContext ctx;

  KernelLaunch(int32_t num_threads, int32_t debug_mode) noexcept : ctx{num_threads, debug_mode, error, sizeof error} {
    error[0] = '\0';
  }
  KernelLaunch(const KernelLaunch&) = delete;
  KernelLaunch& operator=(const KernelLaunch&) = delete;

  // The kernel's status (0: success; otherwise the message is in `error`).
  int run(PyptoKernelEntry entry, const PyptoTensorArg* tensors, const PyptoScalarArg* scalars) noexcept {
    return sim_launch(entry, tensors, scalars, &ctx);
  }
};

// The message of a failed launch of `kernel`: the kernel's own message when it already names the kernel, else the
// message (or a generic one when the kernel wrote none) after "kernel '<name>': ".
[[gnu::cold]] std::string kernel_error_message(const std::string& kernel, const char* error);

}  // namespace pypto
