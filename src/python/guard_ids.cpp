// guard_ids: ids for guard values, weakly held where possible, bounded otherwise (see guard_ids.h).
#include "python/guard_ids.h"

#include <algorithm>

#include "python/const_interner.h"
#include "python/jit_state.h"

namespace pypto::py {

namespace {

char kGone;  // a capsule pointing here belongs to a kernel that was cleared (its weak references may outlive it)

PyObject* dead_callback(PyObject* capsule, PyObject* weakref) {
  void* p = PyCapsule_GetPointer(capsule, "pypto.JitState");
  if (p != nullptr && p != &kGone) {
    auto* st = static_cast<JitState*>(p);
    st->guard_ids.on_dead(*st, weakref);
  }
  PyErr_Clear();
  Py_RETURN_NONE;
}

PyMethodDef dead_callback_def = {"_guard_value_died", dead_callback, METH_O, nullptr};

}  // namespace

uint32_t GuardIds::id_of(JitState& st, PyObject* v) {
  ++tick_;
  std::string enc;
  if (interner().encode_plain(v, &enc) && enc.size() <= kMaxPlainBytes) {
    auto it = by_encoding_.find(enc);
    if (it != by_encoding_.end()) {
      entries_[it->second].used = tick_;
      return it->second;
    }
    const uint32_t id = next_id_++;
    by_encoding_.emplace(enc, id);
    Entry e;
    e.encoding = std::move(enc);
    e.used = tick_;
    entries_.emplace(id, std::move(e));
    ++values_;
    return id;
  }
  auto it = by_address_.find(v);
  if (it != by_address_.end()) {  // a weak entry is retired when its object dies, a strong one holds it
    Entry& known = entries_[it->second];
    if (!known.weak || PyWeakref_GetObject(known.ref) == v) {
      known.used = tick_;
      return it->second;
    }
    retire(st, it->second);  // a dead object whose callback did not run (yet): never reuse its id
  }
  Entry e;
  e.address = v;
  e.used = tick_;
  if (PyType_SUPPORTS_WEAKREFS(Py_TYPE(v))) {
    if (callback_ == nullptr) {
      capsule_ = PyCapsule_New(&st, "pypto.JitState", nullptr);
      callback_ = capsule_ ? PyCFunction_New(&dead_callback_def, capsule_) : nullptr;
    }
    e.ref = callback_ ? PyWeakref_NewRef(v, callback_) : nullptr;
    e.weak = e.ref != nullptr;
  }
  if (!e.weak) {
    PyErr_Clear();
    Py_INCREF(v);
    e.ref = v;
    ++strong_;
  }
  const uint32_t id = next_id_++;
  by_address_.emplace(v, id);
  if (e.weak) by_weakref_.emplace(e.ref, id);
  entries_.emplace(id, std::move(e));
  return id;
}

uint32_t GuardIds::state_of(JitState& st, PyObject* const* values, size_t n) {
  std::vector<uint32_t> ids;
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) ids.push_back(id_of(st, values[i]));
  auto it = states_.find(ids);
  uint32_t state;
  if (it != states_.end()) {
    state = it->second;
  } else {
    state = next_state_++;
    states_.emplace(ids, state);
    state_ids_.emplace(state, ids);
  }
  trim(st, ids);
  return state;
}

void GuardIds::trim(JitState& st, const std::vector<uint32_t>& current) {
  while (strong_ > kMaxStrong && evict_oldest(st, current, false)) {
  }
  while (values_ > kMaxValues && evict_oldest(st, current, true)) {
  }
}

bool GuardIds::evict_oldest(JitState& st, const std::vector<uint32_t>& current, bool value_keyed) {
  uint32_t oldest = 0;
  uint64_t when = UINT64_MAX;
  for (const auto& [id, e] : entries_) {
    const bool is_value = e.ref == nullptr;
    if (e.weak || is_value != value_keyed || e.used >= when) continue;
    if (std::find(current.begin(), current.end(), id) != current.end()) continue;  // bound now: never evicted
    oldest = id;
    when = e.used;
  }
  if (oldest == 0) return false;
  retire(st, oldest);
  return true;
}

void GuardIds::retire(JitState& st, uint32_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (!e.encoding.empty()) by_encoding_.erase(e.encoding);
  if (e.address != nullptr) {
    auto a = by_address_.find(e.address);
    if (a != by_address_.end() && a->second == id) by_address_.erase(a);
  }
  if (e.weak) by_weakref_.erase(e.ref);
  if (e.ref == nullptr) --values_;
  else if (!e.weak) --strong_;
  if (e.ref != nullptr) dead_refs_.push_back(e.ref);  // released at reclaim: never inside a callback
  entries_.erase(it);
  // every guard state that used the id, and every specialization keyed by one of them
  std::vector<uint64_t> dead_states;
  for (auto s = states_.begin(); s != states_.end();) {
    if (std::find(s->first.begin(), s->first.end(), id) != s->first.end()) {
      dead_states.push_back(s->second);
      state_ids_.erase(s->second);
      s = states_.erase(s);
    } else {
      ++s;
    }
  }
  if (dead_states.empty()) return;
  auto removed = st.specs.remove_if([&](const Specialization& spec) {
    // the guard state is the last key word (jit_call.cpp keys guards last)
    return !spec.key.empty() &&
           std::find(dead_states.begin(), dead_states.end(), spec.key.back()) != dead_states.end();
  });
  for (auto& r : removed) dead_specs_.push_back(std::move(r));
}

void GuardIds::on_dead(JitState& st, PyObject* weakref) {
  auto it = by_weakref_.find(weakref);
  if (it != by_weakref_.end()) retire(st, it->second);
}

void GuardIds::reclaim(JitState& st) {
  if (st.launching != 0) return;
  // releasing may run arbitrary code (destructors, more weak-reference callbacks that retire more): work on a
  // local copy, until nothing is left
  for (int round = 0; round < 8 && (!dead_refs_.empty() || !dead_specs_.empty()); ++round) {
    std::vector<PyObject*> refs;
    std::vector<std::unique_ptr<Specialization>> specs;
    refs.swap(dead_refs_);
    specs.swap(dead_specs_);
    st.specs.free_retired();
    specs.clear();
    for (PyObject* r : refs) Py_DECREF(r);
  }
}

int GuardIds::traverse(visitproc visit, void* arg) const {
  for (const auto& [id, e] : entries_)
    if (!e.weak) Py_VISIT(e.ref);
  Py_VISIT(callback_);
  return 0;
}

void GuardIds::clear() {
  if (capsule_ != nullptr) PyCapsule_SetPointer(capsule_, &kGone);  // callbacks from now on do nothing
  std::unordered_map<uint32_t, Entry> entries;
  entries.swap(entries_);
  by_address_.clear();
  by_encoding_.clear();
  by_weakref_.clear();
  states_.clear();
  state_ids_.clear();
  strong_ = values_ = 0;
  std::vector<PyObject*> refs;
  refs.swap(dead_refs_);
  dead_specs_.clear();
  for (auto& [id, e] : entries) Py_XDECREF(e.ref);
  for (PyObject* r : refs) Py_DECREF(r);
  Py_CLEAR(callback_);
  Py_CLEAR(capsule_);
}

}  // namespace pypto::py
