// overlap: the exact comparison and the message of the partial-overlap check (overlap.h; cold).
#include "core/overlap.h"

#include "core/messages.h"

namespace pypto {

bool partially_overlap(const DLTensor& a, const DLTensor& b) noexcept {
  const uint64_t na = tensor_bytes(a), nb = tensor_bytes(b);
  if (na == 0 || nb == 0) return false;
  const uintptr_t a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
  if (a0 >= b0 + nb || b0 >= a0 + na) return false;
  if (a0 != b0 || na != nb || a.ndim != b.ndim) return true;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return true;
  return false;  // the same tensor twice: an in-place update
}

int find_partial_overlap(const DLTensor* t, int n, uint64_t written, uint64_t window) noexcept {
  if (window == 0) window = overlap_window(t, n);
  const uint64_t span = 2 * window;
  for (; written != 0; written &= written - 1) {
    const int w = __builtin_ctzll(written);
    const uintptr_t low = reinterpret_cast<uintptr_t>(t[w].data) - window;  // modular: a wrap only adds candidates
    for (int j = 0; j < n; ++j)
      if (j != w && reinterpret_cast<uintptr_t>(t[j].data) - low < span && partially_overlap(t[w], t[j]))
        return w * 256 + j;
  }
  return -1;
}

OverlapPlan plan_overlap_check(const DLTensor* t, int n, uint64_t written, bool shapes_keyed) noexcept {
  OverlapPlan plan;
  if (!shapes_keyed || written == 0 || (written & (written - 1)) != 0) return plan;
  plan.window = overlap_window(t, n);
  if (plan.window > 0) plan.tensor = __builtin_ctzll(written);
  return plan;
}

int pack_tensor_args_general(const DLTensor* t, int n, PyptoTensorArg* out, uint64_t written,
                             int64_t elements) noexcept {
  for (int i = 0; i < n; ++i) out[i] = PyptoTensorArg{t[i].data, t[i].shape, t[i].ndim};
  if (written == 0) return -1;
  const uint64_t bound = elements < 0 ? 0 : static_cast<uint64_t>(elements) < (uint64_t{1} << 58)
                                                ? static_cast<uint64_t>(elements) * 8
                                                : uint64_t{1} << 61;
  return find_partial_overlap(t, n, written, elements < 0 ? 0 : bound);
}

std::string overlap_message(const ParamTable& table, int pair) {
  const int w = pair / 256, j = pair % 256;
  const std::string other = table.tensor(j).name;
  return msg::head(table, table.tensor_pos[w]) + "this output partially overlaps the memory of parameter '" + other +
         "' (a view of the same storage at another offset or shape): the kernel would read values it already "
         "overwrote. Pass a separate output tensor (or '" + other + "' itself for an in-place update)";
}

}  // namespace pypto
