// const_interner: maps compile-time constant values to small integer ids, exactly and type-tagged.
//
// 1, True, 1.0 and "1" get four ids; -0.0 and 0.0 differ (bit patterns); a NaN keeps its id; int/float/str
// subclasses are keyed by (type, value); enum members by identity (they are singletons). Any other object is keyed
// by (type, the value key of pypto.vocab.constkey.key): a dataclass by its fields, other objects by what pickle
// would rebuild them from, never by address. The types and enum members whose address takes part in a key are
// kept alive (once each), so an address is never reused for a different key.
// Guard values (python/guard_ids.h) use only the encoding, never the key function: anything else is keyed there by
// identity, without this interner keeping it.
// Slow path only: the call path first compares the object with the one it saw last.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pypto::py {

class ConstInterner {
 public:
  // Id (>= 1) for `obj`, or 0 with *error set when the value cannot be a constant. `obj` may be NULL
  // (an absent global), which has its own id.
  uint32_t intern(PyObject* obj, std::string* error);
  // The value encoding of `obj` when it has one without calling Python code (None, bool, int, float, str, their
  // subclasses, enum members, numpy scalars, tuples and lists of those); false otherwise (then keyed by identity).
  bool encode_plain(PyObject* obj, std::string* out);
  // Id for a sequence of ids (a guard state); never fails.
  uint32_t intern_ids(const uint32_t* ids, size_t n);
  // The object an id stands for (borrowed; NULL for the absent marker).
  // Whether the value last interned holds a part that can change in place under the same identity (a list, a
  // non-frozen dataclass, a plain object): its key must then be derived again on every call.
  bool last_mutable() const { return mutable_seen_; }
  PyObject* value(uint32_t id) const { return id >= 1 && id <= values_.size() ? values_[id - 1] : nullptr; }
  ~ConstInterner();

 private:
  bool encode(PyObject* obj, bool plain, int depth, std::string* out, std::string* error);
  // encode's cases, one per kind of value
  bool encode_scalar(PyObject* obj, bool exact, std::string* out, std::string* error);
  bool encode_sequence(PyObject* obj, bool plain, int depth, std::string* out, std::string* error);
  bool encode_buffer_scalar(PyObject* obj, std::string* out);
  bool encode_by_key(PyObject* obj, int depth, std::string* out, std::string* error);
  void keep(PyObject* obj);
  bool mutable_seen_ = false;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<std::string, uint32_t> state_ids_;
  std::vector<PyObject*> values_;   // strong references, index id-1
  std::vector<PyObject*> kept_;     // strong references to objects whose address is part of an encoding
  std::unordered_set<PyObject*> kept_set_;  // the same, to keep each once
};

// The process-wide interner (all kernels share ids; GIL-protected).
ConstInterner& interner();

}  // namespace pypto::py
