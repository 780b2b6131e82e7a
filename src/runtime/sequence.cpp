// sequence: captured sequences in a bundle — loading them against the bundle's kernels, and Sequence::run.
#include "runtime/sequence.h"

#include <cstring>

#include "core/binder.h"
#include "core/dtype.h"
#include "core/launch.h"
#include "runtime/manifest.h"

namespace pypto::runtime {

using namespace detail;

namespace {

constexpr size_t kMaxBuffers = 1024;
constexpr size_t kMaxSequenceLaunches = 1 << 16;

const json& field(const json& j, const char* key, json::value_t type, const std::string& where) {
  auto it = j.find(key);
  const bool number = type == json::value_t::number_integer;
  if (it == j.end() || !(it->type() == type || (number && it->is_number_unsigned())))
    load_fail(where + ": field '" + key + "' is missing or has the wrong type");
  return *it;
}

int64_t small_int(const json& j, int64_t lo, int64_t hi, const std::string& where) {
  if (!j.is_number_integer()) load_fail(where + ": expected an integer");
  const int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : j.get<int64_t>();
  if (v < lo || v > hi) load_fail(where + ": " + std::to_string(v) + " is out of range [" + std::to_string(lo) +
                                  ", " + std::to_string(hi) + "]");
  return v;
}

void load_buffers(SequenceImpl& s, const json& jb, const std::string& where) {
  if (!jb.is_array() || jb.size() > kMaxBuffers) load_fail(where + ": 'buffers' must be an array of at most 1024");
  for (size_t i = 0; i < jb.size(); ++i) {
    const std::string w = where + ": buffer " + std::to_string(i);
    if (!jb[i].is_object()) load_fail(w + ": expected an object");
    BufferInfo b;
    b.dtype = static_cast<int32_t>(small_int(field(jb[i], "dtype_code", json::value_t::number_integer, w), 0,
                                             PYPTO_DT_COUNT - 1, w + ": dtype_code"));
    if (dtype_itemsize(b.dtype) == 0) load_fail(w + ": dtype " + dtype_name(b.dtype) + " has no storage layout");
    const json& shape = field(jb[i], "shape", json::value_t::array, w);
    if (shape.size() > PYPTO_MAX_RANK) load_fail(w + ": rank above " + std::to_string(PYPTO_MAX_RANK));
    for (const json& d : shape) b.shape.push_back(small_int(d, 0, int64_t(1) << 40, w + ": shape"));
    b.first_use = field(jb[i], "first_use", json::value_t::string, w).get<std::string>();
    std::vector<int64_t> strides(b.shape.size());
    int64_t st = 1;
    for (size_t d = b.shape.size(); d-- > 0;) {
      strides[d] = st;
      st *= b.shape[d];
    }
    s.buffers.push_back(std::move(b));
    s.strides.push_back(std::move(strides));
  }
}

// The launch's buffers must be what its specialization was compiled for: the binder's checks and tensor key words
// over the captured layouts (a manifest that disagrees would hand a kernel buffers of another size).
void check_launch_key(const SequenceImpl& s, const SequenceLaunch& l, const std::string& where) {
  const ParamTable& table = l.kernel->table;
  DLTensor dl[kMaxParams];
  for (size_t t = 0; t < l.buffers.size(); ++t) {
    const BufferInfo& b = s.buffers[l.buffers[t]];
    dl[t] = DLTensor{};
    dl[t].data = reinterpret_cast<void*>(uintptr_t{64});  // a non-null placeholder: only the layout is checked
    dl[t].device = DLDevice{kDLCPU, 0};
    dl[t].ndim = static_cast<int32_t>(b.shape.size());
    dl[t].dtype = dtype_to_dlpack(b.dtype);
    dl[t].shape = const_cast<int64_t*>(b.shape.data());
  }
  uint64_t key[kMaxKeyWords];
  const int n = bind_tensors(table, dl, key);
  if (n < 0) load_fail(where + ": its buffers do not satisfy the kernel's annotations (" +
                       check_error(*l.kernel, dl).message() + ")");
  if (static_cast<size_t>(n) > l.spec->key.size() || std::memcmp(key, l.spec->key.data(), n * sizeof(uint64_t)) != 0)
    load_fail(where + ": its buffers' layouts are not the ones its specialization was compiled for");
}

SequenceLaunch load_launch(const BundleImpl& b, SequenceImpl& s, const json& jl, const std::string& where) {
  if (!jl.is_object()) load_fail(where + ": expected an object");
  SequenceLaunch l;
  const std::string kname = field(jl, "kernel", json::value_t::string, where).get<std::string>();
  for (const auto& k : b.kernels)
    if (k->table.kernel == kname) l.kernel = k.get();
  if (l.kernel == nullptr) load_fail(where + ": the bundle has no kernel '" + kname + "'");
  const std::vector<const Specialization*> specs = l.kernel->specs.entries();
  const int64_t si = small_int(field(jl, "specialization", json::value_t::number_integer, where), 0,
                               static_cast<int64_t>(specs.size()) - 1, where + ": specialization");
  l.spec = specs[si];
  const json& jt = field(jl, "tensors", json::value_t::array, where);
  if (jt.size() != static_cast<size_t>(l.kernel->n_tensors))
    load_fail(where + ": kernel '" + kname + "' takes " + std::to_string(l.kernel->n_tensors) + " tensors, the "
              "launch names " + std::to_string(jt.size()));
  for (const json& t : jt)
    l.buffers.push_back(static_cast<int>(small_int(t, 0, int64_t(s.buffers.size()) - 1, where + ": buffer")));
  const json& js = field(jl, "scalars", json::value_t::array, where);
  if (js.size() != static_cast<size_t>(l.kernel->n_scalars))
    load_fail(where + ": kernel '" + kname + "' takes " + std::to_string(l.kernel->n_scalars) + " runtime scalars");
  for (size_t i = 0; i < js.size(); ++i) {
    PyptoScalarArg v;
    const bool is_float = l.kernel->scalar_is_float[i];
    const json* x = js[i].is_object() ? (js[i].contains("float") ? &js[i]["float"] : js[i].contains("int") ?
                                                                                        &js[i]["int"] : nullptr)
                                      : nullptr;
    if (x == nullptr || !x->is_number() || (is_float ? false : !x->is_number_integer()))
      load_fail(where + ": scalar " + std::to_string(i) + " must be {\"float\": x} or {\"int\": n} as its dtype");
    if (is_float) v.f = x->get<double>();
    else v.i = small_int(*x, INT64_MIN, INT64_MAX, where + ": scalar");
    l.scalars.push_back(v);
  }
  for (const json& jsl : field(jl, "slots", json::value_t::array, where)) {
    if (!jsl.is_object()) load_fail(where + ": a slot binding must be an object");
    const int sc = static_cast<int>(small_int(field(jsl, "scalar", json::value_t::number_integer, where), 0,
                                              l.kernel->n_scalars - 1, where + ": slot scalar"));
    const std::string name = field(jsl, "slot", json::value_t::string, where).get<std::string>();
    int idx = -1;
    for (size_t i = 0; i < s.slots.size(); ++i)
      if (s.slots[i] == name) idx = static_cast<int>(i);
    if (idx < 0) load_fail(where + ": slot '" + name + "' is not among the sequence's slots");
    l.slots.push_back({sc, idx});
    l.slot_is_float.push_back(l.kernel->scalar_is_float[sc]);
  }
  check_launch_key(s, l, where);
  for (size_t t = 0; t < l.buffers.size(); ++t)  // what a launch writes comes from its library, not the manifest
    if (l.spec->written_mask >> t & 1) s.buffers[l.buffers[t]].written = true;
  return l;
}

}  // namespace

void detail::load_sequences(BundleImpl& b, const json& m) {
  auto it = m.find("sequences");
  if (it == m.end()) return;
  if (!it->is_array()) load_fail("'sequences' must be an array");
  for (const json& js : *it) {
    if (!js.is_object()) load_fail("a sequence must be an object");
    auto s = std::make_shared<SequenceImpl>();
    s->name = field(js, "name", json::value_t::string, "sequence").get<std::string>();
    const std::string where = "sequence '" + s->name + "'";
    for (const auto& other : b.sequences)
      if (other->name == s->name) load_fail("two sequences are named '" + s->name + "'");
    load_buffers(*s, field(js, "buffers", json::value_t::array, where), where);
    for (const json& n : field(js, "slots", json::value_t::array, where)) {
      if (!n.is_string()) load_fail(where + ": slot names must be strings");
      s->slots.push_back(n.get<std::string>());
    }
    const json& jl = field(js, "launches", json::value_t::array, where);
    if (jl.size() > kMaxSequenceLaunches) load_fail(where + ": too many launches");
    for (size_t i = 0; i < jl.size(); ++i) {
      s->launches.push_back(load_launch(b, *s, jl[i], where + ": launch " + std::to_string(i)));
      s->max_scalars = std::max(s->max_scalars, s->launches.back().kernel->n_scalars);
    }
    b.sequences.push_back(std::move(s));
  }
}

}  // namespace pypto::runtime
