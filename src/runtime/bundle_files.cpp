// bundle_files: a bundle's files opened inside the bundle without following links or blocking (bundle_files.h).
#include "runtime/bundle_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace pypto::runtime::detail {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Why opening a path component failed, as a phrase after the path's name.
std::string open_failure(const std::string& component, int e) {
  const std::string which = component.empty() ? "" : " (its component '" + component + "')";
  if (e == ELOOP) return "is reached through a symbolic link" + which + ": a bundle's files must lie inside it";
  if (e == ENOTDIR) return "is not inside a directory" + which;
  if (e == ENOENT) return "is missing";
  return "cannot be opened" + which + ": " + errno_text(e);
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a regular file";
}

}  // namespace

std::string open_bundle_dir(const std::string& path, BundleDir* out) {
  out->path = path;
  const int fd = ::open(path.empty() ? "." : path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return "cannot open bundle manifest '" + path + "/manifest.json': no such file";
    return "cannot open bundle directory '" + path + "': " + errno_text(e);
  }
  out->fd = Fd(fd);
  return "";
}

int open_inside(const BundleDir& dir, const std::string& rel, uint64_t max_bytes, uint64_t* size, std::string* why) {
  const char* const kRelative = "must be relative to the bundle directory, without empty, '.' or '..' components";
  if (rel.empty() || rel[0] == '/' || rel.find('\0') != std::string::npos) {
    *why = kRelative;
    return -1;
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t slash = rel.find('/', start);
    parts.push_back(rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  for (const std::string& p : parts)
    if (p.empty() || p == "." || p == "..") {
      *why = kRelative;
      return -1;
    }
  // walk the directories one component at a time: O_NOFOLLOW refuses a link at every step
  Fd here;
  int at = dir.fd.get();
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const int fd = ::openat(at, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      struct stat st;  // O_NOFOLLOW|O_DIRECTORY on a link fails with ENOTDIR or ELOOP: say which it is
      if (e == ENOTDIR && fstatat(at, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        e = ELOOP;
      *why = open_failure(parts[i], e);
      return -1;
    }
    here = Fd(fd);
    at = fd;
  }
  const int fd = ::openat(at, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *why = open_failure(errno == ELOOP ? parts.back() : "", errno);
    return -1;
  }
  Fd file(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *why = "cannot be inspected: " + errno_text(errno);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = std::string("is ") + kind_of(st.st_mode) + ", not a regular file";
    return -1;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    *why = "is " + std::to_string(st.st_size) + " bytes, more than the limit of " + std::to_string(max_bytes);
    return -1;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return file.release();
}

std::string read_all(int fd, uint64_t size, std::string* out) {
  out->assign(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, &(*out)[done], size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_text(errno);
    if (n == 0) break;  // the file shrank while it was read: parse what is there (and fail on it)
    done += static_cast<uint64_t>(n);
  }
  out->resize(done);
  return "";
}

std::shared_ptr<Module> load_library_fd(int fd, const std::string& sha256, const std::string& shown_path,
                                        std::string* error) {
  // A private directory (mkdtemp: 0700, a fresh name) holds the link for the duration of the dlopen only.
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/pypto-load-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    *error = "cannot load kernel library '" + shown_path + "': cannot create a private directory for it (" +
             errno_text(errno) + ")";
    return nullptr;
  }
  const std::string private_dir(buf.data());
  const std::string link = private_dir + "/" + sha256 + ".so";
  const std::string target = "/proc/self/fd/" + std::to_string(fd);
  std::shared_ptr<Module> module;
  if (symlink(target.c_str(), link.c_str()) != 0) {
    *error = "cannot load kernel library '" + shown_path + "': " + errno_text(errno);
  } else {
    std::string err;
    module = Module::open(link, &err);
    if (!module) {  // the loader's message names the link: name the bundle's file instead
      for (size_t at = err.find(link); at != std::string::npos; at = err.find(link, at + shown_path.size()))
        err.replace(at, link.size(), shown_path);
      *error = err;
    }
    ::unlink(link.c_str());
  }
  ::rmdir(private_dir.c_str());
  return module;
}

}  // namespace pypto::runtime::detail
