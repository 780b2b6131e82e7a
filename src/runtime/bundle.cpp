// bundle: the Bundle and version queries of the C++ runtime (include/pypto/runtime.h); loading is manifest.cpp,
// calls are call.cpp.
#include "pypto/runtime.h"
#include "runtime/kernel_impl.h"

#ifndef PYPTO_VERSION
#error "PYPTO_VERSION must be defined by the build"
#endif

namespace pypto::runtime {

using detail::fail;

const char* version() noexcept { return PYPTO_VERSION; }
unsigned kernel_abi_version() noexcept { return PYPTO_KERNEL_ABI_VERSION; }

Bundle Bundle::load(const std::string& directory) {
  Bundle b;
  Status s = open(directory, &b);
  if (!s.ok()) throw Error(std::move(s));
  return b;
}

const Kernel* Bundle::find(std::string_view name) const noexcept {
  if (!impl_) return nullptr;
  for (const auto& k : impl_->kernels)
    if (k->table.kernel == name) return &k->handle;
  return nullptr;
}

Status Bundle::kernel(std::string_view name, const Kernel** out) const {
  if (const Kernel* k = find(name)) {
    *out = k;
    return Status();
  }
  std::string have;
  for (const std::string& n : kernel_names()) have += (have.empty() ? "'" : ", '") + n + "'";
  return fail(StatusCode::kNotFound, "bundle '" + directory() + "' has no kernel '" + std::string(name) +
                                         "'; it has " + (have.empty() ? "none" : have));
}

const Kernel& Bundle::kernel(std::string_view name) const {
  const Kernel* k = nullptr;
  Status s = kernel(name, &k);
  if (!s.ok()) throw Error(std::move(s));
  return *k;
}

std::vector<std::string> Bundle::kernel_names() const {
  std::vector<std::string> r;
  if (impl_)
    for (const auto& k : impl_->kernels) r.push_back(k->table.kernel);
  return r;
}

const std::string& Bundle::directory() const noexcept {
  static const std::string empty;
  return impl_ ? impl_->directory : empty;
}

const std::string& Bundle::pypto_version() const noexcept {
  static const std::string empty;
  return impl_ ? impl_->pypto_version : empty;
}

}  // namespace pypto::runtime
