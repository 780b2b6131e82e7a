/* pypto kernel shmem rings: fresh, zeroed memory at every execution of create_shmem_tensor (kernels only;
 * included after kernel_shmem.h by kernels that use shmem tensors; codegen/shmem.py emits the calls).
 *
 * The reference binds a fresh region of the group's window each time a create op executes (once per launch, or
 * once per iteration of the loop it is written in). Here each shmem tensor owns a ring of `ring` slots in the
 * window, after a header whose first int32 counts the creates this rank has entered (`entered`, written only by
 * its owner, read by the peers). Execution c of the create uses slot c % ring. Every rank executes each create
 * the same number of times (SPMD), so execution c means the same slot on every rank.
 *
 * Reuse protocol (ring >= 2). A rank is done with every access to execution c-1 once it has entered execution c
 * (program order: a tensor created in a loop body is only used in that iteration).
 *  - enter(c): if c >= ring, slot c % ring last held execution c - ring; wait until every peer has entered
 *    c - ring + 1 (so nobody still reads or writes it), zero the slot (data and signals), then publish
 *    entered = c + 1 (release).
 *  - an access to a peer's slot for execution c (put, get, signal, barrier arrival) first waits until that peer
 *    has entered c (acquire), so nothing lands in a slot its owner is about to zero; executions c < ring use
 *    slots nobody has used since the window was created (zero), and need no wait.
 * No wait can close a cycle: a rank entering c waits only for peers to reach c - ring + 1 <= c - 1, which needs
 * only accesses the rank has already made. Every wait is bounded (timeout, dead peer: ring_wait).
 */
#ifndef PYPTO_KERNEL_SHMEM_RING_H_
#define PYPTO_KERNEL_SHMEM_RING_H_

#include <cstring>
#include <sched.h>
#include <stdio.h>
#include <time.h>

namespace pypto_shmem {

/* Wait until rank `pe` has entered at least `want` executions of shmem tensor `alloc` (its header word `word`).
 * Rare (only when a slot is reused while a peer lags), and the owner's store of that word wakes nobody, so after
 * the shared spin and yield this wait sleeps in steps of at most 20 us; bounded like every wait (backoff_wait). */
static inline int ring_wait(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, const int32_t* word,
                            int32_t want, const char* kernel, const char* op, int64_t alloc, int64_t pe) {
  int32_t seen = 0;
  return backoff_wait(
      w, [&] { return (seen = __atomic_load_n(word, __ATOMIC_ACQUIRE)) >= want; },
      [](int64_t ns) {
        struct timespec ts = {0, (long)(ns < 20000 ? ns : 20000)};
        nanosleep(&ts, 0);
      },
      [&](int dead, int64_t timeout) {
        char msg[768], why[160];
        wait_why(why, sizeof why, w, dead, timeout);
        snprintf(msg, sizeof msg, "kernel '%s': %s on rank %d of group '%s': %s while waiting for rank %lld to "
                 "enter execution %d of shmem tensor #%lld (its count of entered executions: expected >= %d, "
                 "last seen %d; every rank must execute each create_shmem_tensor the same number of times)",
                 kernel, op, w->rank, w->group, why, (long long)pe, want - 1, (long long)alloc, want, seen);
        return pypto_rt::fail(ctx, msg);
      });
}

/* Execution number and slot byte offset of the next execution of a shmem tensor's create (zeroed, ready). */
static inline int ring_enter(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, int64_t hdr_off, int64_t slot0,
                             int64_t slot_bytes, int32_t ring, int64_t alloc, const char* kernel, int32_t* gen,
                             int64_t* slot_off) {
  int32_t* entered = (int32_t*)(w->base[w->rank] + hdr_off);
  const int32_t c = __atomic_load_n(entered, __ATOMIC_RELAXED);
  const int64_t off = (int64_t)(c % ring) * slot_bytes;
  if (c >= ring) {
    for (int p = 0; p < w->n_pes; ++p) {
      if (p == w->rank) continue;
      const int32_t* peer = (const int32_t*)(w->base[p] + hdr_off);
      if (__atomic_load_n(peer, __ATOMIC_ACQUIRE) >= c - ring + 2) continue;
      if (ring_wait(ctx, w, peer, c - ring + 2, kernel,
                    "create_shmem_tensor (reusing a ring slot: every rank must have passed the execution that last "
                    "used it)", alloc, p))
        return 1;
    }
    std::memset(w->base[w->rank] + slot0 + off, 0, (size_t)slot_bytes);
  }
  __atomic_store_n(entered, c + 1, __ATOMIC_RELEASE);
  *gen = c;
  *slot_off = off;
  return 0;
}

/* Before touching rank `pe`'s slot of execution `gen`: wait until `pe` has entered (and zeroed) it. */
static inline int ring_ready(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, int64_t hdr_off, int32_t ring,
                             int32_t gen, int64_t pe, int64_t alloc, const char* kernel, const char* op) {
  if (gen < ring || pe == w->rank) return 0;
  const int32_t* entered = (const int32_t*)(w->base[pe] + hdr_off);
  if (__atomic_load_n(entered, __ATOMIC_ACQUIRE) > gen) return 0;
  return ring_wait(ctx, w, entered, gen + 1, kernel, op, alloc, pe);
}

/* ring_ready for every peer (barriers, signals to all ranks) */
static inline int ring_ready_all(PyptoLaunchContext* ctx, const PyptoShmemWindow* w, int64_t hdr_off, int32_t ring,
                                 int32_t gen, int64_t alloc, const char* kernel, const char* op) {
  if (gen < ring) return 0;
  for (int p = 0; p < w->n_pes; ++p)
    if (ring_ready(ctx, w, hdr_off, ring, gen, p, alloc, kernel, op)) return 1;
  return 0;
}

}  // namespace pypto_shmem

#endif /* PYPTO_KERNEL_SHMEM_RING_H_ */
