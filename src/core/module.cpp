// module: dlopen + ABI check.
#include "core/module.h"

#include <dlfcn.h>

namespace pypto {

std::shared_ptr<Module> Module::open(const std::string& path, std::string* error) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    *error = "cannot load kernel library '" + path + "': " + (e ? e : "unknown error");
    return nullptr;
  }
  auto version = reinterpret_cast<PyptoAbiVersionFn>(dlsym(h, PYPTO_ABI_VERSION_SYMBOL));
  auto entry = reinterpret_cast<PyptoKernelEntry>(dlsym(h, PYPTO_ENTRY_SYMBOL));
  if (version == nullptr || entry == nullptr) {
    dlclose(h);
    *error = "kernel library '" + path + "' does not export " PYPTO_ABI_VERSION_SYMBOL " and " PYPTO_ENTRY_SYMBOL;
    return nullptr;
  }
  if (version() != PYPTO_KERNEL_ABI_VERSION) {
    const unsigned got = version();
    dlclose(h);
    *error = "kernel library '" + path + "' was built for kernel ABI " + std::to_string(got) +
             ", this runtime implements ABI " + std::to_string(PYPTO_KERNEL_ABI_VERSION);
    return nullptr;
  }
  std::shared_ptr<Module> m(new Module());
  m->handle_ = h;
  m->entry_ = entry;
  m->spec_key_ = reinterpret_cast<PyptoSpecKeyFn>(dlsym(h, PYPTO_SPEC_KEY_SYMBOL));
  m->path_ = path;
  return m;
}

Module::~Module() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace pypto
