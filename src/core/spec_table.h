// spec_table: the specialization table — packed key -> compiled kernel.
//
// Open addressing over an array of pointers. Readers take no lock: they load the current slot array with
// acquire semantics and probe; an insert (rare, after a compile) takes a mutex, fills an empty slot with a release
// store, or publishes a grown copy. Retired arrays and entries live until the table dies, so a reader never sees
// freed memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/module.h"
#include "core/param_table.h"
#include "pypto/dlpack.h"

namespace pypto {

struct Specialization {
  std::vector<uint64_t> key;
  uint64_t hash = 0;
  std::shared_ptr<Module> module;
  PyptoKernelEntry entry = nullptr;
  uint64_t written_mask = 0;   // bit i: tensor parameter i is written by the kernel
  std::string library_path;
  double compile_seconds = 0;
  int64_t elements = -1;       // total elements of the tensor arguments when the key fixes them (no DYNAMIC dims)
  uint64_t overlap_window = 0; // the longest tensor argument in bytes when the key fixes them (core/overlap.h)
  int overlap_tensor = -1;     // the one written tensor, for pack_tensor_args' one-pass form (core/overlap.h)
  std::shared_ptr<void> user;  // front-end data (e.g. a Python object kept alive by the extension)
};

class SpecializationTable {
 public:
  SpecializationTable();
  ~SpecializationTable();
  SpecializationTable(const SpecializationTable&) = delete;
  SpecializationTable& operator=(const SpecializationTable&) = delete;

  const Specialization* find(const uint64_t* key, int n, uint64_t hash) const noexcept {
    const Slots* s = slots_.load(std::memory_order_acquire);
    size_t i = hash & s->mask;
    for (;;) {
      const Specialization* e = s->at(i).load(std::memory_order_acquire);
      if (e == nullptr) return nullptr;
      if (e->hash == hash && e->key.size() == static_cast<size_t>(n) && same_words(e->key.data(), key, n)) return e;
      i = (i + 1) & s->mask;
    }
  }

  // The memoized lookup: the first specialization a lookup found (set once, so threads never race to rewrite it;
  // remove_if clears it and the next one found takes its place) is checked by a plain key compare before hashing,
  // so the common serving case of one hot specialization skips the hash's multiply chain and the probe.
  // `hash_of(key, n)` is called only when the memo does not match.
  template <class HashOf>
  [[gnu::always_inline]] const Specialization* find_memoized(const uint64_t* key, int n,
                                                             HashOf&& hash_of) const noexcept {
    const Specialization* spec = memo_.load(std::memory_order_acquire);
    if (spec != nullptr && spec->key.size() == static_cast<size_t>(n) && same_words(spec->key.data(), key, n))
      return spec;
    spec = find(key, n, hash_of(key, n));
    if (spec != nullptr && memo_.load(std::memory_order_relaxed) == nullptr) {
      const Specialization* expected = nullptr;
      memo_.compare_exchange_strong(expected, spec, std::memory_order_release, std::memory_order_relaxed);
    }
    return spec;
  }

  // Keys are a few words: an inline loop beats a call to memcmp.
  static bool same_words(const uint64_t* a, const uint64_t* b, int n) noexcept {
    for (int i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }

  // Inserts `spec` unless an equal key is present; returns the entry that is in the table afterwards.
  const Specialization* insert(std::unique_ptr<Specialization> spec);
  // Takes the entries for which pred(entry) holds out of the table and hands them to the caller, who frees them
  // when no reader can still use them. The slot array is rebuilt; the old one is retired.
  template <class Pred>
  std::vector<std::unique_ptr<Specialization>> remove_if(Pred pred) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::unique_ptr<Specialization>> removed, kept;
    for (auto& e : owned_) (pred(*e) ? removed : kept).push_back(std::move(e));
    owned_ = std::move(kept);
    if (removed.empty()) return removed;
    memo_.store(nullptr, std::memory_order_release);  // it may name a removed entry
    Slots* s = slots_.load(std::memory_order_relaxed);
    Slots* fresh = make_slots(s->mask + 1);
    for (const auto& e : owned_) place(fresh, e.get());
    slots_.store(fresh, std::memory_order_release);
    retired_.push_back(s);
    count_.store(owned_.size(), std::memory_order_release);
    return removed;
  }
  // Frees the retired slot arrays. Only when no reader can be probing one (the caller's own guarantee).
  void free_retired();
  size_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  // Snapshot of all entries (insertion order).
  std::vector<const Specialization*> entries() const;

 private:
  struct Slots {
    size_t mask;
    std::atomic<const Specialization*>* data;
    std::atomic<const Specialization*>& at(size_t i) const { return data[i]; }
  };
  static Slots* make_slots(size_t capacity);
  void place(Slots* s, const Specialization* e);

  std::atomic<Slots*> slots_;
  mutable std::atomic<const Specialization*> memo_{nullptr};  // find_memoized's; cleared by remove_if
  std::atomic<size_t> count_{0};
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Specialization>> owned_;   // guarded by mu_
  std::vector<Slots*> retired_;                          // guarded by mu_
};

// Total elements of `nt` tensors (the Python path: whether a launch releases the GIL; the general overlap bound).
inline int64_t count_elements(const DLTensor* dl, int nt) noexcept {
  int64_t elements = 0;
  for (int t = 0; t < nt; ++t) {
    int64_t e = 1;
    for (int d = 0; d < dl[t].ndim; ++d) e *= dl[t].shape[d];
    elements += e;
  }
  return elements;
}

// A verified, loaded library and what its loader knows about it.
struct LoadedLibrary {
  std::shared_ptr<Module> module;
  std::string path;
  uint64_t written_mask = 0;   // bit i: the kernel writes tensor i
  double compile_seconds = 0;
  std::shared_ptr<void> user;  // front-end data kept with the specialization
};

// The one way a loaded library becomes a specialization, for both loaders (the Python miss, src/python/jit_slow.cpp,
// and the bundle manifest, src/runtime/manifest_stages.cpp): its key, entry and written mask, and for `dl` (the
// tensors it was specialized for) the element count and the overlap plan (core/overlap.h) when the key fixes every
// shape. Returns the entry in the table afterwards: an equal key already present wins (compare library paths).
const Specialization* install_specialization(SpecializationTable& table, const ParamTable& params,
                                             const uint64_t* key, int n, uint64_t hash, const DLTensor* dl,
                                             LoadedLibrary lib);

}  // namespace pypto
