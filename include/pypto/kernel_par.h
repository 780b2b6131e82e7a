/* pypto kernel thread pool: one small persistent pool per process, shared by every kernel library.
 *
 * Included by kernel_rt.h when PYPTO_RT_THREADS is defined (generated code defines it only when something in the
 * kernel can run in parallel), so single-threaded kernels pay nothing for it, not even pthread.h.
 *
 * Why a pthread pool and not -fopenmp: the libraries are dlopen'ed into a process that usually has torch's
 * OpenMP runtime (libgomp or Intel's libiomp) already loaded; a second OpenMP runtime in the same process, or
 * nested teams from two runtimes, oversubscribe the cores and can deadlock at fork. A pool we own is small
 * (below), has a known wake-up cost, and its workers sleep on a condition variable when idle.
 *
 * Why one pool per process although every kernel is its own .so: pool() is an inline function with default
 * visibility, so its static object is an STB_GNU_UNIQUE symbol; the dynamic linker binds all libraries to the
 * first definition even with RTLD_LOCAL. A worker runs the code of the library that started it, so that library
 * pins itself (dlopen RTLD_NODELETE of its own path) before starting one: unloading the kernel later cannot unmap
 * a worker's code. The name carries a layout version (v1): change the struct, bump it.
 *
 * Determinism: callers split work into parts whose results do not depend on which thread runs them (tiles that
 * write disjoint outputs; partial results combined afterwards in a fixed order), so any thread count, including 1,
 * gives the same bits. A second launch while the pool is busy (another Python thread, a nested parallel region)
 * runs its parts on the calling thread instead of waiting.
 */
#ifndef PYPTO_KERNEL_PAR_H_
#define PYPTO_KERNEL_PAR_H_

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

namespace pypto_rt {

enum { POOL_MAX_THREADS = 64 };
/* Below this many elements of work a kernel runs on the calling thread: waking a sleeping worker costs ~10-50 us,
 * the time of about 64 Ki simple element operations (the same threshold at which the core releases the GIL). */
static const int64_t PARALLEL_MIN_WORK = 65536;

struct PoolV1 {
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  int busy;                      /* one launch at a time; others run serially */
  int nworkers;                  /* started worker threads */
  uint64_t gen;                  /* job generation; workers wait for it to change */
  uint64_t ticket;               /* (gen << 32) | next part index: parts are taken by CAS within one generation */
  int64_t nparts, remaining;
  int (*fn)(void* arg, int64_t part);
  void* arg;
  int err;                       /* first non-zero part result; later parts are skipped */
  int fixed;                     /* 1: part k runs on worker k (k >= 1), part 0 on the caller (parallel_for) */
  pthread_t threads[POOL_MAX_THREADS];
  uint64_t born[POOL_MAX_THREADS + 1]; /* per worker: the generation before the job it was started for */
  uint64_t slot[POOL_MAX_THREADS];     /* fixed mode: part k is still to run in generation slot[k] */
};

__attribute__((visibility("default"))) inline PoolV1& pool_v1() {
  static PoolV1 p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0,
                     0, 0, 0, 0, 0, 0, {}, {}, {}};
  return p;
}

static inline void pool_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static inline void pool_run_one(PoolV1& p, int64_t k) {
  if (!__atomic_load_n(&p.err, __ATOMIC_RELAXED)) {
    const int r = p.fn(p.arg, k);
    if (r) {
      int expected = 0;
      __atomic_compare_exchange_n(&p.err, &expected, r, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    }
  }
  if (__atomic_sub_fetch(&p.remaining, 1, __ATOMIC_ACQ_REL) == 0) {
    pthread_mutex_lock(&p.mu);
    pthread_cond_broadcast(&p.done);
    pthread_mutex_unlock(&p.mu);
  }
}

/* Take and run parts of generation g until none is left (fixed mode: worker w runs part w only); the thread that
 * finishes the last part signals. */
static inline void pool_run_parts(PoolV1& p, uint64_t g, int64_t worker) {
  if (__atomic_load_n(&p.fixed, __ATOMIC_ACQUIRE)) {
    /* claim part `worker` of generation g; fails when it is not g's (a newer job, or already run) */
    uint64_t expect = g;
    if (worker >= 1 && worker < POOL_MAX_THREADS &&
        __atomic_compare_exchange_n(&p.slot[worker], &expect, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      pool_run_one(p, worker);
    return;
  }
  for (;;) {
    uint64_t t = __atomic_load_n(&p.ticket, __ATOMIC_ACQUIRE);
    if ((t >> 32) != (g & 0xffffffffu) || (int64_t)(t & 0xffffffffu) >= p.nparts) return;
    if (!__atomic_compare_exchange_n(&p.ticket, &t, t + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    pool_run_one(p, (int64_t)(t & 0xffffffffu));
  }
}

static inline void* pool_worker(void* arg) {
  PoolV1& p = pool_v1();
  const int64_t worker = (int64_t)(intptr_t)arg; /* 1-based */
  pthread_setname_np(pthread_self(), "pypto-pool");
  /* not the current gen: the job this worker was started for may already be published when it gets here */
  uint64_t seen = __atomic_load_n(&p.born[worker], __ATOMIC_ACQUIRE);
  for (;;) {
    /* spin briefly (back-to-back launches), then sleep: idle workers must not eat the shared cores */
    uint64_t g = seen;
    for (int i = 0; i < 500 && (g = __atomic_load_n(&p.gen, __ATOMIC_ACQUIRE)) == seen; ++i) pool_pause();
    if (g == seen) {
      pthread_mutex_lock(&p.mu);
      while ((g = __atomic_load_n(&p.gen, __ATOMIC_ACQUIRE)) == seen) pthread_cond_wait(&p.wake, &p.mu);
      pthread_mutex_unlock(&p.mu);
    }
    seen = g;
    pool_run_parts(p, g, worker);
  }
  return 0;
}

static inline void pool_after_fork_child() {
  /* the workers do not exist in a forked child: start over */
  PoolV1& p = pool_v1();
  pthread_mutex_init(&p.mu, 0);
  pthread_cond_init(&p.wake, 0);
  pthread_cond_init(&p.done, 0);
  p.nworkers = 0;
  p.busy = 0;
}

/* Run part(k) for k in [0, nparts) on up to `nthreads` threads (the caller is one of them). Returns the first
 * non-zero part result (the remaining parts are then skipped), else 0. */
template <class F>
static int run_parts(int64_t nparts, int32_t nthreads, F& part, int fixed = 0) {
  if (nparts <= 0) return 0;
  if (nthreads > POOL_MAX_THREADS) nthreads = POOL_MAX_THREADS;
  PoolV1& p = pool_v1();
  if (nthreads <= 1 || nparts == 1 || __atomic_exchange_n(&p.busy, 1, __ATOMIC_ACQUIRE)) {
    for (int64_t k = 0; k < nparts; ++k) {
      const int r = part(k);
      if (r) return r;
    }
    return 0;
  }
  const int want = (int)(nparts < nthreads ? nparts : nthreads) - 1;
  if (p.nworkers < want) {
    static int pinned = 0; /* per library: this library's pool_worker code must outlive any dlclose */
    if (!pinned) {
      Dl_info info;
      if (dladdr((void*)&pool_worker, &info) && info.dli_fname)
        pinned = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != 0;
      if (!pinned) {
        for (int64_t k = 0; k < nparts; ++k) { /* cannot pin: never leave a thread in unloadable code */
          const int r = part(k);
          if (r) return r;
        }
        __atomic_store_n(&p.busy, 0, __ATOMIC_RELEASE);
        return 0;
      }
    }
    pthread_mutex_lock(&p.mu);
    static int atfork_done = 0;  /* per library is fine: the handler only resets the shared pool */
    if (!atfork_done) atfork_done = pthread_atfork(0, 0, &pool_after_fork_child) == 0;
    while (p.nworkers < want && (__atomic_store_n(&p.born[p.nworkers + 1], p.gen, __ATOMIC_RELEASE), true) &&
           pthread_create(&p.threads[p.nworkers], 0, &pool_worker, (void*)(intptr_t)(p.nworkers + 1)) == 0) {
      pthread_detach(p.threads[p.nworkers]);
      ++p.nworkers;
    }
    pthread_mutex_unlock(&p.mu);
  }
  struct Thunk {
    static int call(void* a, int64_t k) { return (*(F*)a)(k); }
  };
  /* first make the ticket useless to a worker still looking at the previous job (it re-reads it and sees another
   * generation), and only then change the job's fields */
  __atomic_store_n(&p.ticket, ((p.gen + 1) & 0xffffffffu) << 32 | 0xffffffffu, __ATOMIC_SEQ_CST);
  p.fn = &Thunk::call;
  p.arg = &part;
  p.nparts = nparts;
  p.err = 0;
  p.fixed = fixed;
  const uint64_t g = p.gen + 1;
  if (fixed)
    for (int64_t k = 0; k < nparts; ++k) __atomic_store_n(&p.slot[k], g, __ATOMIC_RELEASE);
  __atomic_store_n(&p.remaining, nparts, __ATOMIC_RELEASE);
  __atomic_store_n(&p.ticket, (g & 0xffffffffu) << 32, __ATOMIC_RELEASE);
  pthread_mutex_lock(&p.mu);
  __atomic_store_n(&p.gen, g, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&p.wake);
  pthread_mutex_unlock(&p.mu);
  if (fixed) {
    pool_run_one(p, 0);
    for (int64_t k = p.nworkers + 1; k < nparts; ++k) { /* no worker could be started for it */
      uint64_t expect = g;
      if (__atomic_compare_exchange_n(&p.slot[k], &expect, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        pool_run_one(p, k);
    }
  } else {
    pool_run_parts(p, g, 0);
  }
  for (int i = 0; i < 2000 && __atomic_load_n(&p.remaining, __ATOMIC_ACQUIRE) != 0; ++i) pool_pause();
  if (__atomic_load_n(&p.remaining, __ATOMIC_ACQUIRE) != 0) {
    pthread_mutex_lock(&p.mu);
    while (__atomic_load_n(&p.remaining, __ATOMIC_ACQUIRE) != 0) pthread_cond_wait(&p.done, &p.mu);
    pthread_mutex_unlock(&p.mu);
  }
  const int err = p.err;
  __atomic_store_n(&p.busy, 0, __ATOMIC_RELEASE);
  return err;
}

/* pypto.loop(parallel=True): iteration k of [0, n) runs f(k); each thread takes a contiguous chunk (one part per
 * thread); the first error stops the remaining iterations of every chunk. */
template <class F>
static int parallel_for(int64_t n, int32_t num_threads, F f) {
  if (n <= 0) return 0;
  int64_t nt = num_threads < 1 ? 1 : (num_threads > POOL_MAX_THREADS ? POOL_MAX_THREADS : num_threads);
  if (nt > n) nt = n;
  int stop = 0;
  auto chunk = [&](int64_t t) -> int {
    for (int64_t k = n * t / nt; k < n * (t + 1) / nt; ++k) {
      if (__atomic_load_n(&stop, __ATOMIC_RELAXED)) return 0;
      const int r = f(k);
      if (r) {
        __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
        return r;
      }
    }
    return 0;
  };
  return run_parts(nt, (int32_t)nt, chunk, 1);
}

}  // namespace pypto_rt

#endif /* PYPTO_KERNEL_PAR_H_ */
