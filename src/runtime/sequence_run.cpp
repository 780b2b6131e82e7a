// sequence_run: Sequence::run — the caller's buffers checked against the captured ones, then every launch.
#include <cstring>

#include "core/dtype.h"
#include "core/launch.h"
#include "runtime/sequence.h"

namespace pypto::runtime {

using namespace detail;

namespace {

constexpr size_t kMaxBuffers = 1024;
constexpr size_t kMaxSlots = 64;

std::string head(const SequenceImpl& s) { return "sequence '" + s.name + "': "; }

std::string buffer_head(const SequenceImpl& s, size_t i) {
  return head(s) + "buffer " + std::to_string(i) + " (" + s.buffers[i].first_use + "): ";
}

std::string layout(int dtype, const int64_t* shape, int64_t ndim) {
  std::string out = std::string(dtype_name(dtype)) + "[";
  for (int64_t d = 0; d < ndim; ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
  return out + "]";
}

// The caller's buffer i as (data, dtype, shape, strides), checked against the captured layout.
[[gnu::always_inline]] inline Status check_buffer(const SequenceImpl& s, size_t i, const Arg& a, void** data) {
  const BufferInfo& b = s.buffers[i];
  int32_t dtype, ndim;
  const int64_t *shape, *strides;
  int device = kDLCPU;
  if (a.kind() == Arg::Kind::kDLTensor && a.dltensor() != nullptr) {
    const DLTensor& t = *a.dltensor();
    *data = t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr;
    dtype = dtype_from_dlpack(t.dtype);
    ndim = t.ndim;
    shape = t.shape;
    strides = t.strides;
    device = t.device.device_type;
  } else if (a.kind() == Arg::Kind::kTensorRef) {
    const TensorRef& r = a.tensor_ref();
    *data = r.data;
    dtype = r.dtype;
    ndim = r.ndim;
    shape = r.shape;
    strides = r.strides;
  } else [[unlikely]] {
    return fail(StatusCode::kTypeError, buffer_head(s, i) + "expected a tensor (DLTensor or TensorRef), got " +
                                            arg_type_name(a));
  }
  const int64_t rank = static_cast<int64_t>(b.shape.size());
  const bool same_shape = ndim == rank && (rank == 0 || (shape != nullptr &&
                                                         std::memcmp(shape, b.shape.data(), rank * 8) == 0));
  if (dtype != b.dtype) [[unlikely]]
    return fail(StatusCode::kTypeError, buffer_head(s, i) + "expected dtype " + dtype_name(b.dtype) + ", got " +
                                            (dtype >= 0 ? dtype_name(dtype) : "an unsupported dtype"));
  if (!same_shape) [[unlikely]]
    return fail(StatusCode::kValueError, buffer_head(s, i) + "expected " + layout(b.dtype, b.shape.data(), rank) +
                                             " (the captured shape; DYNAMIC sizes are frozen at capture), got " +
                                             (shape ? layout(dtype, shape, ndim) : "no shape"));
  if (device != kDLCPU) [[unlikely]]
    return fail(StatusCode::kValueError, buffer_head(s, i) + "expected a CPU tensor");
  if (strides != nullptr && rank > 0 && std::memcmp(strides, s.strides[i].data(), rank * 8) != 0) [[unlikely]]
    return fail(StatusCode::kValueError, buffer_head(s, i) + "must be contiguous (dense row-major)");
  int64_t n = 1;
  for (int64_t d : b.shape) n *= d;
  if (*data == nullptr && n != 0) [[unlikely]]
    return fail(StatusCode::kValueError, buffer_head(s, i) + "its data pointer is NULL");
  return Status();
}

int64_t buffer_bytes(const BufferInfo& b) {
  int64_t n = dtype_itemsize(b.dtype);
  for (int64_t d : b.shape) n *= d;
  return n;
}

}  // namespace

// 1. buffers (count, then each against its capture), 2. a written buffer overlapping another, 3. slots by name,
// 4. the launches in order, each with its recorded scalars and the slots given
Status SequenceImpl::run(const Arg* args, size_t n, const NamedArg* named, size_t n_named) const noexcept try {
  if (n != buffers.size()) [[unlikely]]
    return fail(StatusCode::kTypeError, head(*this) + "expected " + std::to_string(buffers.size()) +
                                            " buffers (one per captured tensor), got " + std::to_string(n));
  void* data[kMaxBuffers];
  for (size_t i = 0; i < n; ++i)
    if (Status st = check_buffer(*this, i, args[i], &data[i]); !st.ok()) [[unlikely]] return st;
  for (size_t i = 0; i < n; ++i) {
    if (!buffers[i].written) continue;
    const char* a0 = static_cast<const char*>(data[i]);
    const char* a1 = a0 + buffer_bytes(buffers[i]);
    for (size_t j = 0; j < n; ++j) {
      const char* b0 = static_cast<const char*>(data[j]);
      if (j == i || a0 == a1 || b0 == nullptr) continue;
      const char* b1 = b0 + buffer_bytes(buffers[j]);
      if (b0 < a1 && a0 < b1) [[unlikely]]
        return fail(StatusCode::kValueError, buffer_head(*this, i) + "is written by the sequence and overlaps "
                                                 "buffer " + std::to_string(j) + " (the capture's tensors were "
                                                 "distinct): pass distinct memory");
    }
  }
  const Arg* slot_arg[kMaxSlots] = {};  // per slot: the value given, or null
  if (n_named > 0) {
    if (slots.size() > kMaxSlots) return fail(StatusCode::kValueError, head(*this) + "too many slots");
    for (size_t k = 0; k < n_named; ++k) {
      const std::string_view name = named[k].name ? named[k].name : "";
      size_t idx = 0;
      while (idx < slots.size() && slots[idx] != name) ++idx;
      if (idx == slots.size()) {
        std::string have;
        for (const std::string& x : slots) have += (have.empty() ? "'" : ", '") + x + "'";
        return fail(StatusCode::kTypeError, head(*this) + "no scalar slot '" + std::string(name) + "'; its slots: " +
                                                (have.empty() ? "none" : have));
      }
      const Arg& v = named[k].value;
      if (v.kind() != Arg::Kind::kFloat && v.kind() != Arg::Kind::kInt && v.kind() != Arg::Kind::kBool)
        return fail(StatusCode::kTypeError, head(*this) + "scalar slot '" + slots[idx] + "': expected a number, got " +
                                                arg_type_name(v));
      slot_arg[idx] = &v;
      // an integer slot given a float is refused where it is bound (below, before any launch)
      for (const SequenceLaunch& l : launches)
        for (size_t b = 0; b < l.slots.size(); ++b)
          if (l.slots[b].second == static_cast<int>(idx) && !l.slot_is_float[b] && v.kind() == Arg::Kind::kFloat)
            return fail(StatusCode::kTypeError, head(*this) + "scalar slot '" + slots[idx] + "': kernel '" +
                                                    l.kernel->table.kernel + "' takes it as an integer, got a float");
    }
  }
  PyptoTensorArg targs[kMaxParams];
  PyptoScalarArg scalars[kMaxParams];
  for (size_t li = 0; li < launches.size(); ++li) {
    const SequenceLaunch& l = launches[li];
    const KernelImpl& k = *l.kernel;
    if (!k.backend_ok) [[unlikely]] return backend_error(k);
    for (size_t t = 0; t < l.buffers.size(); ++t) {
      const int b = l.buffers[t];
      targs[t] = PyptoTensorArg{data[b], buffers[b].shape.data(), static_cast<int64_t>(buffers[b].shape.size())};
    }
    const PyptoScalarArg* sc = l.scalars.data();
    if (n_named > 0 && !l.slots.empty()) {
      std::memcpy(scalars, l.scalars.data(), l.scalars.size() * sizeof(PyptoScalarArg));
      for (size_t b = 0; b < l.slots.size(); ++b) {
        const auto [s, idx] = l.slots[b];
        const Arg* v = slot_arg[idx];
        if (v == nullptr) continue;
        if (l.slot_is_float[b]) scalars[s].f = v->kind() == Arg::Kind::kFloat ? v->as_float() : double(v->as_int());
        else scalars[s].i = v->as_int();
      }
      sc = scalars;
    }
    KernelLaunch launch(k.num_threads, k.debug_mode);
    if (launch.run(l.spec->entry, targs, sc) != 0) [[unlikely]] {
      Status st = kernel_launch_error(k, launch.error);
      return fail(st.code(), st.message() + " (launch " + std::to_string(li) + " of " + head(*this) +
                                 "the launches after it did not run)");
    }
  }
  return Status();
} catch (const std::exception& e) {
  return exception_error(StatusCode::kValueError, e);
}

Status Sequence::run(const Arg* buffers, size_t n, const NamedArg* slots, size_t n_slots) const noexcept {
  return impl_->run(buffers, n, slots, n_slots);
}
const std::string& Sequence::name() const noexcept { return impl_->name; }
size_t Sequence::num_launches() const noexcept { return impl_->launches.size(); }
const std::vector<BufferInfo>& Sequence::buffers() const noexcept { return impl_->buffers; }
const std::vector<std::string>& Sequence::slots() const noexcept { return impl_->slots; }

const Sequence* Bundle::find_sequence(std::string_view name) const noexcept {
  if (!impl_) return nullptr;
  for (const auto& s : impl_->sequences)
    if (s->name == name) return &s->handle;
  return nullptr;
}

Status Bundle::sequence(std::string_view name, const Sequence** out) const {
  if (const Sequence* s = find_sequence(name)) {
    *out = s;
    return Status();
  }
  std::string have;
  for (const std::string& n : sequence_names()) have += (have.empty() ? "'" : ", '") + n + "'";
  return fail(StatusCode::kNotFound, "bundle '" + directory() + "' has no sequence '" + std::string(name) +
                                         "'; it has " + (have.empty() ? "none" : have));
}

const Sequence& Bundle::sequence(std::string_view name) const {
  const Sequence* s = nullptr;
  Status st = sequence(name, &s);
  if (!st.ok()) throw Error(std::move(st));
  return *s;
}

std::vector<std::string> Bundle::sequence_names() const {
  std::vector<std::string> r;
  if (impl_)
    for (const auto& s : impl_->sequences) r.push_back(s->name);
  return r;
}

}  // namespace pypto::runtime
