// spec_table: inserts and growth (see spec_table.h).
#include "core/spec_table.h"

#include "core/overlap.h"

namespace pypto {

SpecializationTable::Slots* SpecializationTable::make_slots(size_t capacity) {
  Slots* s = new Slots;
  s->mask = capacity - 1;
  s->data = new std::atomic<const Specialization*>[capacity];
  for (size_t i = 0; i < capacity; ++i) s->data[i].store(nullptr, std::memory_order_relaxed);
  return s;
}

SpecializationTable::SpecializationTable() : slots_(make_slots(16)) {}

SpecializationTable::~SpecializationTable() {
  Slots* s = slots_.load();
  delete[] s->data;
  delete s;
  for (Slots* r : retired_) {
    delete[] r->data;
    delete r;
  }
}

void SpecializationTable::place(Slots* s, const Specialization* e) {
  size_t i = e->hash & s->mask;
  while (s->at(i).load(std::memory_order_relaxed) != nullptr) i = (i + 1) & s->mask;
  s->at(i).store(e, std::memory_order_release);
}

const Specialization* SpecializationTable::insert(std::unique_ptr<Specialization> spec) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const Specialization* existing = find(spec->key.data(), static_cast<int>(spec->key.size()), spec->hash))
    return existing;
  Slots* s = slots_.load(std::memory_order_relaxed);
  const size_t n = owned_.size() + 1;
  if (n * 2 > s->mask + 1) {  // keep the load factor <= 1/2 so probes stay short
    Slots* grown = make_slots((s->mask + 1) * 2);
    for (const auto& e : owned_) place(grown, e.get());
    slots_.store(grown, std::memory_order_release);
    retired_.push_back(s);  // readers may still be probing it
    s = grown;
  }
  const Specialization* e = spec.get();
  owned_.push_back(std::move(spec));
  place(s, e);
  count_.store(owned_.size(), std::memory_order_release);
  return e;
}

void SpecializationTable::free_retired() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Slots* r : retired_) {
    delete[] r->data;
    delete r;
  }
  retired_.clear();
}

std::vector<const Specialization*> SpecializationTable::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Specialization*> out;
  out.reserve(owned_.size());
  for (const auto& e : owned_) out.push_back(e.get());
  return out;
}

const Specialization* install_specialization(SpecializationTable& table, const ParamTable& params,
                                             const uint64_t* key, int n, uint64_t hash, const DLTensor* dl,
                                             LoadedLibrary lib) {
  auto spec = std::make_unique<Specialization>();
  spec->key.assign(key, key + n);
  spec->hash = hash;
  spec->entry = lib.module->entry();
  spec->module = std::move(lib.module);
  spec->written_mask = lib.written_mask;
  const int nt = params.n_tensors();
  if (params.all_dims_keyed) spec->elements = count_elements(dl, nt);
  const OverlapPlan plan = plan_overlap_check(dl, nt, lib.written_mask, params.all_dims_keyed);
  spec->overlap_window = plan.window;
  spec->overlap_tensor = plan.tensor;
  spec->library_path = std::move(lib.path);
  spec->compile_seconds = lib.compile_seconds;
  spec->user = std::move(lib.user);
  return table.insert(std::move(spec));
}

}  // namespace pypto
