// backend: where a specialization runs. SIM runs the compiled kernel on the host CPU (exact results);
// NPU needs the CANN toolkit and Ascend hardware, which this build cannot drive: it is detected and refused
// with a clear reason, never silently replaced by SIM.
#pragma once

#include <string>

#include "pypto/kernel_abi.h"

namespace pypto {

enum class RunMode : int { kNpu = 0, kSim = 1 };

// "" when the backend for `mode` can run here, else the reason it cannot.
std::string backend_unavailable_reason(RunMode mode);

// Runs a kernel on the host (the SIM backend). Returns the kernel's status; the message is in ctx->error.
inline int sim_launch(PyptoKernelEntry entry, const PyptoTensorArg* tensors, const PyptoScalarArg* scalars,
                      PyptoLaunchContext* ctx) noexcept {
  return entry(tensors, scalars, ctx);
}

}  // namespace pypto
