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

 private:
  Module() = default;
  void* handle_ = nullptr;
  PyptoKernelEntry entry_ = nullptr;
  std::string path_;
};

}  // namespace pypto
