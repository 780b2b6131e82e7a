// bundle_files: opening a bundle's files as a parser facing the network would — never outside the bundle, never
// through a symbolic link, never blocking, never more than a size limit — and loading a library from the very
// descriptor whose bytes were verified.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/module.h"

namespace pypto::runtime::detail {

// The manifest's limits, checked before anything is parsed (docs/security.md): its size, and how deeply its arrays
// and objects may nest (the JSON parser and the value decoder recurse; a 50,000-deep tuple must be an error, never
// a stack overflow).
constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
constexpr int kMaxManifestDepth = 64;
// A library larger than this is refused before it is hashed.
constexpr uint64_t kMaxLibraryBytes = uint64_t{1} << 30;

// An open descriptor, closed on destruction.
class Fd {
 public:
  explicit Fd(int fd = -1) noexcept : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const noexcept { return fd_; }
  int release() noexcept {
    const int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

// The bundle directory, opened once for the whole load: every file is reached from this descriptor.
struct BundleDir {
  std::string path;  // as the caller named it (for messages)
  Fd fd;
};

// Opens `path` as a directory (the caller's own path: symbolic links in it are the caller's choice). "" or why not.
std::string open_bundle_dir(const std::string& path, BundleDir* out);

// Opens the regular file `rel` inside the bundle: relative, no empty, "." or ".." component, every component opened
// with O_NOFOLLOW (a symbolic link anywhere is refused, so nothing outside the bundle is reached), the last with
// O_NONBLOCK (a FIFO never blocks) and checked with fstat to be a regular file of at most `max_bytes`.
// Returns the descriptor, or -1 with *why set to a phrase to put after the file's name ("is missing", "is a FIFO,
// not a regular file", ...). *size receives the file's size.
int open_inside(const BundleDir& dir, const std::string& rel, uint64_t max_bytes, uint64_t* size, std::string* why);

// Reads the whole regular file open at `fd` (`size` bytes, from open_inside). "" or why not.
std::string read_all(int fd, uint64_t size, std::string* out);

// Loads the library open at `fd` (whose bytes hash to `sha256`) from that descriptor: through a link named by the
// sha256 in a private directory to /proc/self/fd/N, so that the loader maps exactly these bytes and no other
// library ever shares its loader name. nullptr and *error when it cannot be loaded.
std::shared_ptr<Module> load_library_fd(int fd, const std::string& sha256, const std::string& shown_path,
                                        std::string* error);

}  // namespace pypto::runtime::detail
