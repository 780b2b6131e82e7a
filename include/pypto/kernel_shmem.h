/* pypto kernel shmem runtime: what generated multi-rank kernels call (codegen/shmem.py emits the calls).
 *
 * Part 1 (C): the window registry of libpypto_shmem (src/distributed/shmem_window.cpp). A window is one
 * shared-memory segment per rank of a group, mapped into every rank: `base[p]` is rank p's segment as seen
 * from this process, so a remote tile is a plain pointer and puts/gets are loads and stores.
 * Part 2 (C++, kernels only): remote element stores with SET / atomic ADD (CAS loops for floating types),
 * int32 signals, and waits that spin with backoff and give up with an error naming kernel, rank, group, slot,
 * expected and last-seen value after pypto_shmem_timeout_ns(), or as soon as a peer process has exited.
 * Memory order: signals are release stores / read-modify-writes, waits acquire: data put before a signal is
 * visible to the rank that saw the signal.
 */
#ifndef PYPTO_KERNEL_SHMEM_H_
#define PYPTO_KERNEL_SHMEM_H_

#include <stdint.h>

#define PYPTO_SHMEM_MAX_PES 64
#define PYPTO_SHMEM_KEY_MAX 256
#define PYPTO_SHMEM_SIG_HEADER 80 /* int32s before a tensor's signal grid: barrier counters + epoch */

#ifdef PYPTO_SHMEM_BUILDING
#define PYPTO_SHMEM_API __attribute__((visibility("default")))
#else
#define PYPTO_SHMEM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct PyptoShmemWindow {
  int32_t rank;                     /* this process's rank in the group */
  int32_t n_pes;                    /* ranks in the group */
  int64_t bytes;                    /* size of each rank's segment */
  char group[128];                  /* the group's name (pypto.distributed.group_name) */
  char* base[PYPTO_SHMEM_MAX_PES];  /* rank p's segment, mapped here */
  int32_t pid[PYPTO_SHMEM_MAX_PES]; /* rank p's process id (same host): a dead peer fails waits early */
} PyptoShmemWindow;

PYPTO_SHMEM_API int pypto_shmem_create(const char* name, int64_t bytes, void** out, char* err, int cap);
PYPTO_SHMEM_API int pypto_shmem_open(const char* name, int64_t bytes, void** out, char* err, int cap);
PYPTO_SHMEM_API int pypto_shmem_unlink(const char* name);
PYPTO_SHMEM_API int pypto_shmem_unmap(void* base, int64_t bytes);
PYPTO_SHMEM_API int pypto_shmem_register(const char* key, const char* group, int32_t rank, int32_t n_pes,
                                         int64_t bytes, void* const* bases, const int32_t* pids);
PYPTO_SHMEM_API int pypto_shmem_unregister(const char* key);
PYPTO_SHMEM_API const PyptoShmemWindow* pypto_shmem_lookup(const char* key);
PYPTO_SHMEM_API void pypto_shmem_set_timeout_ns(int64_t ns);
PYPTO_SHMEM_API int64_t pypto_shmem_timeout_ns(void);

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && !defined(PYPTO_SHMEM_BUILDING)
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <cstring>
#include <time.h>

namespace pypto_shmem {

/* element stores into a (possibly remote) window ---------------------------------------------------------- */
template <class T>
static inline void put_set(T* p, T v) { *p = v; }

template <class T, class U>
static inline void cas_add_bits(T* p, T v) {
  U* q = (U*)p;
  U old = __atomic_load_n(q, __ATOMIC_RELAXED);
  for (;;) {
    T cur;
    memcpy(&cur, &old, sizeof(T));
    T nv = pypto_rt::Cvt<T>::from(float(cur) + float(v));
    U nb;
    memcpy(&nb, &nv, sizeof(U));
    if (__atomic_compare_exchange_n(q, &old, nb, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  }
}

template <class T>
static inline void put_add(T* p, T v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }  /* integers */
template <>
inline void put_add<float>(float* p, float v) {
  uint32_t* q = (uint32_t*)p;
  uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
  for (;;) {
    float cur, nv;
    memcpy(&cur, &old, 4);
    nv = cur + v;
    uint32_t nb;
    memcpy(&nb, &nv, 4);
    if (__atomic_compare_exchange_n(q, &old, nb, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  }
}
template <>
inline void put_add<double>(double* p, double v) {
  uint64_t* q = (uint64_t*)p;
  uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
  for (;;) {
    double cur, nv;
    memcpy(&cur, &old, 8);
    nv = cur + v;
    uint64_t nb;
    memcpy(&nb, &nv, 8);
    if (__atomic_compare_exchange_n(q, &old, nb, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  }
}
template <>
inline void put_add<pypto_rt::half>(pypto_rt::half* p, pypto_rt::half v) { cas_add_bits<pypto_rt::half, uint16_t>(p, v); }
template <>
inline void put_add<pypto_rt::bf16>(pypto_rt::bf16* p, pypto_rt::bf16 v) { cas_add_bits<pypto_rt::bf16, uint16_t>(p, v); }
template <>
inline void put_add<bool>(bool* p, bool v) { if (v) __atomic_store_n(p, true, __ATOMIC_RELAXED); }

/* signals ----------------------------------------------------------------------------------------------- */
static inline void signal(int32_t* slot, int32_t v, bool add) {
  if (add)
    __atomic_fetch_add(slot, v, __ATOMIC_RELEASE);
  else
    __atomic_store_n(slot, v, __ATOMIC_RELEASE);
}

static inline int64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* true when process `pid` has exited: gone, or a zombie its parent has not reaped yet (kill(pid, 0) still
 * succeeds on those, so /proc says) */
static inline bool exited(int32_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  char path[48], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE* f = fopen(path, "r");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* r = strrchr(buf, ')');
  return r && r[1] == ' ' && (r[2] == 'Z' || r[2] == 'X');
}

/* -1 when every peer process is alive, else the rank of one that has exited */
static inline int dead_peer(const PyptoShmemWindow* w) {
  for (int p = 0; p < w->n_pes; ++p)
    if (p != w->rank && w->pid[p] > 0 && exited(w->pid[p])) return p;
  return -1;
}

/* Wait until *slot == expected (ge: >=). Backoff: spin, then yield, then sleep 20 us. */
static inline int wait_for(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, const int32_t* slot,
                           int32_t expected, bool ge, const char* kernel, const char* op, int64_t slot_index,
                           int64_t from_pe) {
  int32_t seen = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (ge ? seen >= expected : seen == expected) return 0;
  const int64_t timeout = pypto_shmem_timeout_ns();
  const int64_t t0 = now_ns();
  int64_t next_check = t0 + 20000000LL;
  for (uint64_t spin = 0;; ++spin) {
    seen = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (ge ? seen >= expected : seen == expected) return 0;
    if (spin < 256) {
      __builtin_ia32_pause();
      continue;
    }
    if (spin < 2048) {
      sched_yield();
      continue;
    }
    struct timespec ts = {0, 20000};
    nanosleep(&ts, 0);
    const int64_t t = now_ns();
    if (t < next_check) continue;
    next_check = t + 20000000LL;
    const int dead = dead_peer(w);
    if (dead >= 0 || t - t0 > timeout) {
      char msg[768];
      char why[160];
      if (dead >= 0)
        snprintf(why, sizeof why, "rank %d (pid %d) of the group exited", dead, (int)w->pid[dead]);
      else
        snprintf(why, sizeof why, "timed out after %.3f s (pypto.distributed.set_timeout)", timeout / 1e9);
      snprintf(msg, sizeof msg, "kernel '%s': %s on rank %d of group '%s': %s while waiting on signal slot "
               "%lld (from pe %lld): expected %s %d, last seen %d", kernel, op, w->rank, w->group, why,
               (long long)slot_index, (long long)from_pe, ge ? ">=" : "==", expected, seen);
      return pypto_rt::fail(ctx, msg);
    }
  }
}

/* all ranks of the window: each rank bumps its epoch, stores it into slot [rank] of every peer's header, then
 * waits until every slot of its own header has reached the epoch (monotonic: reusable without clearing) */
static inline int barrier(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, int64_t sig_off,
                          const char* kernel) {
  int32_t* mine = (int32_t*)(w->base[w->rank] + sig_off);
  const int32_t epoch = mine[w->n_pes] + 1;
  mine[w->n_pes] = epoch;
  for (int p = 0; p < w->n_pes; ++p)
    __atomic_store_n((int32_t*)(w->base[p] + sig_off) + w->rank, epoch, __ATOMIC_RELEASE);
  for (int q = 0; q < w->n_pes; ++q)
    if (wait_for(ctx, w, mine + q, epoch, true, kernel, "shmem_barrier_all", q, q)) return 1;
  return 0;
}

static inline int bad_pe(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, const char* kernel,
                         const char* op, const char* what, int64_t pe) {
  char msg[512];
  snprintf(msg, sizeof msg, "kernel '%s': %s: %s %lld is out of range for group '%s' of %d ranks (expected 0 to "
           "%d)", kernel, op, what, (long long)pe, w->group, w->n_pes, w->n_pes - 1);
  return pypto_rt::fail(ctx, msg);
}

static inline int bad_offset(PyptoLaunchContext* ctx, const char* kernel, const char* op, int dim,
                             int64_t off, int64_t tile) {
  char msg[512];
  snprintf(msg, sizeof msg, "kernel '%s': %s: offset %lld of dim %d is not a multiple of the signal tile %lld "
           "(signals are kept per tile of the first signal/wait region of this shmem tensor)", kernel, op,
           (long long)off, dim, (long long)tile);
  return pypto_rt::fail(ctx, msg);
}

}  // namespace pypto_shmem
#endif

#endif /* PYPTO_KERNEL_SHMEM_H_ */
