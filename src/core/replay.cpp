// replay: building a LaunchSequence (the run loop is inline in replay.h).
#include "core/replay.h"

#include <utility>

namespace pypto {

int LaunchSequence::add(PyptoKernelEntry entry, std::shared_ptr<const void> keep, const PyptoTensorArg* tensors,
                        int n_tensors, const PyptoScalarArg* scalars, int n_scalars, int32_t num_threads,
                        int32_t debug_mode, std::string kernel) {
  Launch l{entry, static_cast<uint32_t>(tensors_.size()), static_cast<uint32_t>(scalars_.size()), num_threads,
           debug_mode, n_tensors, n_scalars};
  const int64_t* old_base = shapes_.data();
  const size_t first_new = tensors_.size();
  for (int t = 0; t < n_tensors; ++t) {
    shape_begin_.push_back(static_cast<uint32_t>(shapes_.size()));
    shapes_.insert(shapes_.end(), tensors[t].shape, tensors[t].shape + tensors[t].ndim);
    tensors_.push_back(tensors[t]);
  }
  scalars_.insert(scalars_.end(), scalars, scalars + n_scalars);
  // the new arguments point at their copied shapes; when the storage moved, every argument does
  for (size_t i = shapes_.data() != old_base ? 0 : first_new; i < tensors_.size(); ++i)
    tensors_[i].shape = shapes_.data() + shape_begin_[i];
  launches_.push_back(l);
  keep_.push_back(std::move(keep));
  kernels_.push_back(std::move(kernel));
  return static_cast<int>(launches_.size()) - 1;
}

}  // namespace pypto
