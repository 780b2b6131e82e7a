// libpypto_shmem: symmetric windows in POSIX shared memory, and the per-process registry that generated
// multi-rank kernels look their windows up in (include/pypto/kernel_shmem.h declares the lookup).
//
// A window is one shared-memory segment per rank of a group, all of the same size; rank r creates segment r
// (mode 0600, O_EXCL, an unguessable name chosen by python/pypto/distributed/windows.py) and maps every other
// rank's segment after checking that it is a regular object owned by this user, not group/other accessible,
// and exactly the expected size. The Python side unlinks each name as soon as every rank has mapped it, so a
// crash leaves nothing behind in /dev/shm. Plain C ABI: loaded by ctypes, linked by generated kernels.
#include <pypto/kernel_shmem.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace {

constexpr int kMaxWindows = 256;

struct Entry {
  char key[PYPTO_SHMEM_KEY_MAX];
  PyptoShmemWindow window;
  bool used;
};

// Registration is rare (one per group and layout); lookups happen once per kernel launch. A mutex keeps both
// simple: an uncontended lock is a few dozen cycles next to a kernel that talks to other processes.
std::mutex g_lock;
Entry g_entries[kMaxWindows];
std::atomic<int64_t> g_timeout_ns{60LL * 1000 * 1000 * 1000};

int set_error(char* err, int cap, const char* what, const char* name, int e) {
  if (err && cap > 0) std::snprintf(err, (size_t)cap, "%s '%s': %s", what, name, e ? std::strerror(e) : "");
  return -1;
}

}  // namespace

extern "C" {

PYPTO_SHMEM_API int pypto_shmem_create(const char* name, int64_t bytes, void** out, char* err, int cap) {
  *out = nullptr;
  if (bytes <= 0) return set_error(err, cap, "shmem window size must be positive for", name, 0);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return set_error(err, cap, "cannot create shared-memory window", name, errno);
  if (ftruncate(fd, (off_t)bytes) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name);
    return set_error(err, cap, "cannot size shared-memory window", name, e);
  }
  void* p = mmap(nullptr, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name);
    return set_error(err, cap, "cannot map shared-memory window", name, e);
  }
  *out = p;
  return 0;
}

PYPTO_SHMEM_API int pypto_shmem_open(const char* name, int64_t bytes, void** out, char* err, int cap) {
  *out = nullptr;
  int fd = shm_open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) return set_error(err, cap, "cannot open a peer's shared-memory window", name, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return set_error(err, cap, "cannot stat a peer's shared-memory window", name, e);
  }
  // trust comes from ownership: a segment someone else made (or could write) is refused
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0 || st.st_size != (off_t)bytes) {
    close(fd);
    if (err && cap > 0)
      std::snprintf(err, (size_t)cap, "peer's shared-memory window '%s' is not ours (owner %u, mode %o, %lld "
                    "bytes; expected owner %u, mode 600, %lld bytes)", name, (unsigned)st.st_uid,
                    (unsigned)(st.st_mode & 0777), (long long)st.st_size, (unsigned)geteuid(), (long long)bytes);
    return -1;
  }
  void* p = mmap(nullptr, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return set_error(err, cap, "cannot map a peer's shared-memory window", name, e);
  *out = p;
  return 0;
}

PYPTO_SHMEM_API int pypto_shmem_unlink(const char* name) { return shm_unlink(name) == 0 ? 0 : errno; }

PYPTO_SHMEM_API int pypto_shmem_unmap(void* base, int64_t bytes) {
  return munmap(base, (size_t)bytes) == 0 ? 0 : errno;
}

PYPTO_SHMEM_API int pypto_shmem_register(const char* key, const char* group, int32_t rank, int32_t n_pes,
                                         int64_t bytes, void* const* bases, const int32_t* pids) {
  if (std::strlen(key) >= PYPTO_SHMEM_KEY_MAX || n_pes <= 0 || n_pes > PYPTO_SHMEM_MAX_PES || rank < 0 ||
      rank >= n_pes)
    return -1;
  std::lock_guard<std::mutex> g(g_lock);
  Entry* free_slot = nullptr;
  for (Entry& e : g_entries) {
    if (e.used && std::strcmp(e.key, key) == 0) return -2;
    if (!e.used && !free_slot) free_slot = &e;
  }
  if (!free_slot) return -3;
  std::memset(free_slot, 0, sizeof(Entry));
  std::snprintf(free_slot->key, sizeof(free_slot->key), "%s", key);
  PyptoShmemWindow& w = free_slot->window;
  w.rank = rank;
  w.n_pes = n_pes;
  w.bytes = bytes;
  std::snprintf(w.group, sizeof(w.group), "%s", group);
  for (int i = 0; i < n_pes; ++i) {
    w.base[i] = (char*)bases[i];
    w.pid[i] = pids[i];
  }
  free_slot->used = true;
  return 0;
}

PYPTO_SHMEM_API int pypto_shmem_unregister(const char* key) {
  std::lock_guard<std::mutex> g(g_lock);
  for (Entry& e : g_entries)
    if (e.used && std::strcmp(e.key, key) == 0) {
      e.used = false;
      return 0;
    }
  return -1;
}

PYPTO_SHMEM_API const PyptoShmemWindow* pypto_shmem_lookup(const char* key) {
  std::lock_guard<std::mutex> g(g_lock);
  for (Entry& e : g_entries)
    if (e.used && std::strcmp(e.key, key) == 0) return &e.window;
  return nullptr;
}

PYPTO_SHMEM_API void pypto_shmem_set_timeout_ns(int64_t ns) { g_timeout_ns.store(ns, std::memory_order_relaxed); }

PYPTO_SHMEM_API int64_t pypto_shmem_timeout_ns(void) { return g_timeout_ns.load(std::memory_order_relaxed); }

}  // extern "C"
