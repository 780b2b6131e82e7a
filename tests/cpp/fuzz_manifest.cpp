// fuzz_manifest: the fuzzing target of the C++ runtime's bundle loader — each input is a manifest.json, loaded by
// Bundle::open from a bundle directory whose lib/ holds real kernel libraries (so that mutated manifests that keep a
// library's sha256 reach library loading and the key checks). Built with libFuzzer (clang -fsanitize=fuzzer) or
// with fuzz_driver.cpp (a seeded mutator for compilers without libFuzzer); always with ASan and UBSan.
//
// The bundle directory comes from $PYPTO_FUZZ_BUNDLE (tests/ut/security/test_fuzz_manifest.py sets it up).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "pypto/runtime.h"

namespace {

const std::string& bundle_dir() {
  static const std::string dir = [] {
    const char* d = std::getenv("PYPTO_FUZZ_BUNDLE");
    if (d == nullptr || *d == '\0') {
      std::fprintf(stderr, "fuzz_manifest: set PYPTO_FUZZ_BUNDLE to a bundle directory\n");
      std::abort();
    }
    return std::string(d);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The intact bundle (loaded once, before the first input replaces its manifest) keeps the libraries mapped, so
  // that inputs reaching library loading find them loaded instead of mapping and relocating them every time.
  static const pypto::runtime::Bundle intact = [] {
    pypto::runtime::Bundle b;
    (void)pypto::runtime::Bundle::open(bundle_dir(), &b);
    return b;
  }();
  (void)intact;
  const std::string path = bundle_dir() + "/manifest.json";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  pypto::runtime::Bundle bundle;
  const pypto::runtime::Status s = pypto::runtime::Bundle::open(bundle_dir(), &bundle);
  // every outcome is a Status: a loaded bundle, or a LoadError with a message (never empty)
  if (!s.ok() && (s.code() != pypto::runtime::StatusCode::kLoadError || s.message().empty())) std::abort();
  if (s.ok())
    for (const std::string& name : bundle.kernel_names()) {
      const pypto::runtime::Kernel* k = bundle.find(name);
      if (k == nullptr) std::abort();
      (void)k->specializations();
      (void)k->params();
    }
  return 0;
}
