// module: a loaded kernel library (dlopen), checked against the kernel ABI version.
#pragma once

#include <memory>
#include <string>

#include "pypto/kernel_abi.h"

namespace pypto {

class Module {
 public:
  // Loads `path`; on failure returns nullptr and sets *error.
  static std::shared_ptr<Module> open(const std::string& path, std::string* error);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  PyptoKernelEntry entry() const noexcept { return entry_; }
  const std::string& path() const noexcept { return path_; }
  // The specialization key the library was compiled for (PYPTO_SPEC_KEY_SYMBOL), or NULL when it exports none.
  const char* spec_key() const noexcept { return spec_key_ ? spec_key_() : nullptr; }

 private:
  Module() = default;
  void* handle_ = nullptr;
  PyptoKernelEntry entry_ = nullptr;
  PyptoSpecKeyFn spec_key_ = nullptr;
  std::string path_;
};

}  // namespace pypto
