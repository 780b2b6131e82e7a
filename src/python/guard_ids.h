// guard_ids: a kernel's ids for the values of its guarded globals and closure cells, and the guard states built
// from them — without keeping every value a global was ever bound to alive.
//
// A guard value is keyed
//   - by value when it has a plain encoding (None, bools, ints, floats, strs, enum members, numpy scalars, small
//     tuples of those: ConstInterner::encode_plain, at most kMaxPlainBytes): no object is kept;
//   - else by identity. An object that supports weak references is held weakly: when it dies, its id and every
//     guard state and specialization that used it are retired (a dead id is never handed out again, so an object
//     that later gets the same address gets a new id and never runs a stale specialization). Any other object is
//     held strongly, at most kMaxStrong of them per kernel (least recently keyed first out).
// Value-keyed entries are bounded too (kMaxValues per kernel, LRU), so that rebinding a global to ever new numbers
// does not grow the tables without end.
// Evicting a value retires the same way; a later rebind back to it keys and loads again (from the disk cache).
// The values a guard is bound to now are never evicted (Guard::last holds them).
//
// Retired specializations leave the lookup table at once but are freed only at a safe point (reclaim): under the
// GIL, when no call of this kernel is between its lookup and the end of its launch (JitState::launching).
// Slow path only: the hit path compares guard values by identity (jit_call.cpp) and never reaches this file.
#pragma once

#include <Python.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/spec_table.h"

namespace pypto::py {

struct JitState;

class GuardIds {
 public:
  static constexpr size_t kMaxStrong = 8;         // strongly held (not weakly referenceable) values per kernel
  static constexpr size_t kMaxValues = 64;        // value-keyed entries per kernel
  static constexpr size_t kMaxPlainBytes = 1024;  // longer encodings (big tuples) are keyed by identity

  // The guard state for the current values (one per guard, each a new reference: `values` keeps them alive while
  // their ids are taken). Never fails: an object is at worst keyed by identity.
  uint32_t state_of(JitState& st, PyObject* const* values, size_t n);
  // Frees what was retired, when no call of this kernel can still use it.
  void reclaim(JitState& st);
  // Called by a weak reference's callback: the object it pointed to died.
  void on_dead(JitState& st, PyObject* weakref);
  int traverse(visitproc visit, void* arg) const;
  size_t live_values() const { return entries_.size(); }
  size_t live_states() const { return states_.size(); }
  void clear();  // drops everything (the kernel is going away); callbacks will not run afterwards
  ~GuardIds() { clear(); }

 private:
  struct Entry {
    PyObject* ref = nullptr;  // a weak reference (weak) or the object (strong); NULL for a value-keyed entry
    const void* address = nullptr;
    std::string encoding;     // value-keyed entries only
    bool weak = false;
    uint64_t used = 0;
  };
  uint32_t id_of(JitState& st, PyObject* v);
  void retire(JitState& st, uint32_t id);
  void trim(JitState& st, const std::vector<uint32_t>& current);
  bool evict_oldest(JitState& st, const std::vector<uint32_t>& current, bool value_keyed);

  std::unordered_map<uint32_t, Entry> entries_;
  std::unordered_map<const void*, uint32_t> by_address_;   // identity-keyed entries
  std::unordered_map<std::string, uint32_t> by_encoding_;  // value-keyed entries
  std::unordered_map<PyObject*, uint32_t> by_weakref_;
  std::map<std::vector<uint32_t>, uint32_t> states_;       // ids -> guard state
  std::unordered_map<uint32_t, std::vector<uint32_t>> state_ids_;  // guard state -> ids
  uint32_t next_id_ = 1;
  uint32_t next_state_ = 1;
  uint64_t tick_ = 0;
  size_t strong_ = 0;                                // strongly held entries (against kMaxStrong)
  size_t values_ = 0;                                // value-keyed entries (against kMaxValues)
  PyObject* callback_ = nullptr;                     // the weak references' callback (bound to the JitState)
  PyObject* capsule_ = nullptr;                      // its self: the JitState's address
  std::vector<PyObject*> dead_refs_;                 // weak references and objects to release at reclaim
  std::vector<std::unique_ptr<Specialization>> dead_specs_;
};

}  // namespace pypto::py
