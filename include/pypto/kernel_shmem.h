/* pypto kernel shmem runtime: what generated multi-rank kernels call (codegen/shmem.py emits the calls).
 *
 * Part 1 (C): the window registry of libpypto_shmem (src/distributed/shmem_window.cpp). A window is one
 * shared-memory segment per rank of a group, mapped into every rank: `base[p]` is rank p's segment as seen
 * from this process, so a remote tile is a plain pointer and puts/gets are loads and stores.
 * Part 2 (C++, kernels only): remote element stores with SET / atomic ADD (CAS loops for floating types),
 * int32 signals, and waits that spin briefly, then sleep on a process-shared futex, and give up with an error
 * naming kernel, rank, group, slot, expected and last-seen value after pypto_shmem_timeout_ns(), or within
 * PYPTO_SHMEM_CHECK_NS of a peer process having exited.
 * Memory order: signals are sequentially consistent stores / read-modify-writes, waits acquire: data put before
 * a signal is visible to the rank that saw the signal.
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
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
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

/* signals and waits ------------------------------------------------------------------------------------
 * A waiter spins briefly (the peer is usually running on another core: a round trip is then well under a
 * microsecond), then sleeps in the kernel on the slot's address (a process-shared futex), so that on a machine
 * with more runnable processes than cores it gives its core to the peer it is waiting for instead of burning it.
 * Header word PYPTO_SHMEM_SLEEPERS of each signal region counts the ranks asleep on any of its slots; a signal
 * issues the wake syscall only when that count is non-zero, so a signal nobody sleeps on costs one load.
 * Lost wake-ups are excluded by sequential consistency: the waiter publishes itself before re-reading the slot,
 * the signaller writes the slot before reading the count, and FUTEX_WAIT itself re-checks the slot's value. */
#define PYPTO_SHMEM_SLEEPERS (PYPTO_SHMEM_SIG_HEADER - 1) /* header index; barrier slots use [0, n_pes] */
static_assert(PYPTO_SHMEM_MAX_PES + 1 < PYPTO_SHMEM_SLEEPERS, "signal header too small");
/* Phases of a wait (measured on a loaded 2-core machine, put + signal + wait exchange: a 20 us spin cost 66 us
 * per round, 2 us 5-16 us, 0.2 us 2-3 us: a spinning waiter holds the core its peer needs) */
#define PYPTO_SHMEM_SPIN_NS 500LL         /* spin this long (a running peer answers well within it), */
#define PYPTO_SHMEM_YIELD_NS 100000LL     /* then yield the core until this long, then sleep on the futex */
#define PYPTO_SHMEM_CHECK_NS 20000000LL   /* a sleeper wakes this often to see whether a peer process is gone */

static inline void futex_wake_all(int32_t* addr) {
  syscall(SYS_futex, addr, FUTEX_WAKE, 0x7fffffff, (void*)0, (void*)0, 0);
}

/* grid: the region's signal grid (its header ends just before it); i: the slot */
static inline void signal(int32_t* grid, int64_t i, int32_t v, bool add) {
  int32_t* slot = grid + i;
  if (add)
    __atomic_fetch_add(slot, v, __ATOMIC_SEQ_CST);
  else
    __atomic_store_n(slot, v, __ATOMIC_SEQ_CST);
  int32_t* sleepers = grid - PYPTO_SHMEM_SIG_HEADER + PYPTO_SHMEM_SLEEPERS;
  if (__builtin_expect(__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) != 0, 0)) futex_wake_all(slot);
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

static inline bool reached(int32_t seen, int32_t expected, bool ge) { return ge ? seen >= expected : seen == expected; }

/* sleep on `slot` while it still reads `seen` (at most `ns`), counted in the region's sleepers word */
static inline void sleep_on(int32_t* sleepers, int32_t* slot, int32_t expected, bool ge, int64_t ns) {
  __atomic_fetch_add(sleepers, 1, __ATOMIC_SEQ_CST);
  const int32_t seen = __atomic_load_n(slot, __ATOMIC_SEQ_CST);
  if (!reached(seen, expected, ge)) {
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    syscall(SYS_futex, slot, FUTEX_WAIT, seen, &ts, (void*)0, 0);   /* EAGAIN / EINTR / ETIMEDOUT: re-check */
  }
  __atomic_fetch_sub(sleepers, 1, __ATOMIC_SEQ_CST);
}

/* why a wait gave up: rank `dead` exited (dead >= 0), or the timeout passed */
static inline void wait_why(char* why, size_t n, const PyptoShmemWindow* w, int dead, int64_t timeout) {
  if (dead >= 0)
    snprintf(why, n, "rank %d (pid %d) of the group exited", dead, (int)w->pid[dead]);
  else
    snprintf(why, n, "timed out after %.3f s (pypto.distributed.set_timeout)", timeout / 1e9);
}

static inline int wait_failed(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, int dead, int64_t timeout,
                              int32_t expected, bool ge, int32_t seen, const char* kernel, const char* op,
                              int64_t slot_index, int64_t from_pe) {
  char msg[768], why[160];
  wait_why(why, sizeof why, w, dead, timeout);
  snprintf(msg, sizeof msg, "kernel '%s': %s on rank %d of group '%s': %s while waiting on signal slot "
           "%lld (from pe %lld): expected %s %d, last seen %d", kernel, op, w->rank, w->group, why,
           (long long)slot_index, (long long)from_pe, ge ? ">=" : "==", expected, seen);
  return pypto_rt::fail(ctx, msg);
}

/* The backoff every wait shares: spin for PYPTO_SHMEM_SPIN_NS, yield the core until PYPTO_SHMEM_YIELD_NS, then
 * sleep(ns) (never past the next check) until ready(); every PYPTO_SHMEM_CHECK_NS the peers' processes are
 * checked. Gives up with fail(dead rank or -1, timeout) when a peer has exited or after pypto_shmem_timeout_ns().
 * ready() re-reads the awaited word (a capture keeps what it last saw for the message). */
template <class Ready, class Sleep, class Fail>
static inline int backoff_wait(const PyptoShmemWindow* w, Ready ready, Sleep sleep, Fail fail) {
  if (__builtin_expect(ready(), 1)) return 0;
  const int64_t t0 = now_ns();
  for (uint32_t spin = 1;; ++spin) {
    __builtin_ia32_pause();
    if (ready()) return 0;
    if ((spin & 15) == 0 && now_ns() - t0 > PYPTO_SHMEM_SPIN_NS) break;
  }
  while (now_ns() - t0 <= PYPTO_SHMEM_YIELD_NS) {
    sched_yield();
    if (ready()) return 0;
  }
  const int64_t timeout = pypto_shmem_timeout_ns();
  int64_t next_check = t0 + PYPTO_SHMEM_CHECK_NS;
  for (;;) {
    const int64_t t = now_ns();
    if (t >= next_check || t - t0 > timeout) {   /* a wake short of the awaited value sleeps on */
      next_check = t + PYPTO_SHMEM_CHECK_NS;
      const int dead = dead_peer(w);
      if (dead >= 0 || t - t0 > timeout) return fail(dead, timeout);
    }
    const int64_t until = next_check < t0 + timeout ? next_check : t0 + timeout + 1;
    sleep(until > t ? until - t : 1);
    if (ready()) return 0;
  }
}

/* Wait until grid[i] == expected (ge: >=), sleeping on the slot (woken by the signal) after the spin. */
static inline int wait_for(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, int32_t* grid, int64_t i,
                           int32_t expected, bool ge, const char* kernel, const char* op, int64_t slot_index,
                           int64_t from_pe) {
  int32_t* slot = grid + i;
  int32_t* sleepers = grid - PYPTO_SHMEM_SIG_HEADER + PYPTO_SHMEM_SLEEPERS;
  int32_t seen = 0;
  return backoff_wait(
      w, [&] { return reached(seen = __atomic_load_n(slot, __ATOMIC_ACQUIRE), expected, ge); },
      [&](int64_t ns) { sleep_on(sleepers, slot, expected, ge, ns); },
      [&](int dead, int64_t timeout) {
        return wait_failed(ctx, w, dead, timeout, expected, ge, seen, kernel, op, slot_index, from_pe);
      });
}

/* all ranks of the window: each rank bumps its epoch, stores it into slot [rank] of every peer's header, then
 * waits until every slot of its own header has reached the epoch (monotonic: reusable without clearing) */
static inline int barrier(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, int64_t sig_off,
                          const char* kernel) {
  int32_t* mine = (int32_t*)(w->base[w->rank] + sig_off);
  const int32_t epoch = mine[w->n_pes] + 1;
  mine[w->n_pes] = epoch;
  for (int p = 0; p < w->n_pes; ++p)
    signal((int32_t*)(w->base[p] + sig_off) + PYPTO_SHMEM_SIG_HEADER, w->rank - PYPTO_SHMEM_SIG_HEADER, epoch,
           false);
  for (int q = 0; q < w->n_pes; ++q)
    if (wait_for(ctx, w, mine + PYPTO_SHMEM_SIG_HEADER, q - PYPTO_SHMEM_SIG_HEADER, epoch, true, kernel,
                 "shmem_barrier_all", q, q))
      return 1;
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
