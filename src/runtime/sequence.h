// sequence: a captured sequence of launches exported into a bundle (manifest "sequences"), run with caller buffers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/spec_table.h"
#include "runtime/kernel_impl.h"

namespace pypto::runtime::detail {

struct SequenceLaunch {
  const KernelImpl* kernel = nullptr;
  const Specialization* spec = nullptr;
  std::vector<int> buffers;                 // per tensor parameter: the buffer index
  std::vector<PyptoScalarArg> scalars;      // as recorded
  std::vector<std::pair<int, int>> slots;   // (scalar index, slot index) rebound by the caller
  std::vector<bool> slot_is_float;          // per entry of `slots`
};

struct SequenceImpl {
  std::string name;
  std::vector<BufferInfo> buffers;
  std::vector<std::vector<int64_t>> strides;  // per buffer: dense row-major element strides
  std::vector<SequenceLaunch> launches;
  std::vector<std::string> slots;
  int max_scalars = 0;
  Sequence handle{this};

  Status run(const Arg* buffers, size_t n, const NamedArg* slots, size_t n_slots) const noexcept;
};

// Reads the manifest's "sequences" (absent: none) against the loaded kernels; a LoadFailure names what is wrong.
void load_sequences(BundleImpl& b, const nlohmann::json& m);

}  // namespace pypto::runtime::detail
