// Unit tests of src/core (no Python): the binder's checks, key layout and messages, the specialization table
// under concurrent readers, dtype mapping, constant values. Built from the source tree with ASan/UBSan and run by
// tests/ut/embed/test_core_cpp.py. Prints "ok <name>" per test; exits non-zero on the first failure.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/binder.h"
#include "core/const_value.h"
#include "core/dtype.h"
#include "core/param_table.h"
#include "core/spec_table.h"

using namespace pypto;

namespace {

int g_checks = 0;

#define CHECK(cond)                                                                           \
  do {                                                                                        \
    ++g_checks;                                                                               \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);           \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

#define CHECK_HAS(text, part)                                                                 \
  do {                                                                                        \
    ++g_checks;                                                                               \
    if (std::string(text).find(part) == std::string::npos) {                                 \
      std::fprintf(stderr, "%s:%d: expected '%s' in: %s\n", __FILE__, __LINE__, part,          \
                   std::string(text).c_str());                                                \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

void run(const char* name, const std::function<void()>& fn) {
  fn();
  std::printf("ok %s\n", name);
}

// A host tensor description (shape/strides owned here).
struct Host {
  std::vector<int64_t> shape, strides;
  DLTensor dl{};
  Host(std::vector<int64_t> s, int dtype, std::vector<int64_t> st = {}) : shape(std::move(s)), strides(std::move(st)) {
    dl.data = reinterpret_cast<void*>(0x1000);
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = dtype_to_dlpack(dtype);
    dl.shape = shape.data();
    dl.strides = strides.empty() ? nullptr : strides.data();
  }
};

Param tensor_param(const std::string& name, int dtype, std::vector<DimAnnotation> dims, bool any = false,
                       bool ellipsis = false) {
  Param p;
  p.name = name;
  p.kind = ParamKind::kTensor;
  p.tensor.dtype = dtype;
  p.tensor.dims = std::move(dims);
  p.tensor.any_shape = any;
  p.tensor.ellipsis = ellipsis;
  return p;
}

DimAnnotation fixed(int64_t v) { return {DimKind::kFixed, v}; }
DimAnnotation stat() { return {DimKind::kStatic, 0}; }
DimAnnotation dyn() { return {DimKind::kDynamic, 0}; }
DimAnnotation named(int64_t id) { return {DimKind::kNamed, id}; }

// a: [16, STATIC] fp32; b: [N, DYNAMIC] any dtype; c: [N, ...] int32; d: bare pypto.Tensor
ParamTable make_table() {
  ParamTable t;
  t.kernel = "k";
  t.dim_names = {"N"};
  t.params.push_back(tensor_param("a", PYPTO_DT_FP32, {fixed(16), stat()}));
  t.params.push_back(tensor_param("b", kAnyDType, {named(0), dyn()}));
  t.params.push_back(tensor_param("c", PYPTO_DT_INT32, {named(0)}, false, /*ellipsis=*/true));
  t.params.push_back(tensor_param("d", kAnyDType, {}, /*any=*/true));
  Param m;
  m.name = "m";
  m.kind = ParamKind::kConstexpr;
  t.params.push_back(m);
  CHECK(t.finalize().empty());
  return t;
}

void test_bind_key_layout() {
  ParamTable t = make_table();
  CHECK(t.n_tensors() == 4 && t.n_constexprs() == 1);
  CHECK(t.has_named_dims && !t.all_dims_keyed);
  Host a({16, 5}, PYPTO_DT_FP32), b({7, 3}, PYPTO_DT_BF16), c({7, 2, 4}, PYPTO_DT_INT32), d({9}, PYPTO_DT_INT64);
  DLTensor dl[4] = {a.dl, b.dl, c.dl, d.dl};
  uint64_t key[kMaxKeyWords];
  const int n = bind_tensors(t, dl, key);
  // a: STATIC dim 1 -> 5; b: dtype/rank word (any dtype); c: rank word (open rank) + dims 1, 2 (beyond the
  // annotated one); d: dtype/rank word + its one dim
  const std::vector<uint64_t> want = {5,
                                      uint64_t(PYPTO_DT_BF16) | (2u << 8),
                                      uint64_t(PYPTO_DT_INT32) | (3u << 8), 2, 4,
                                      uint64_t(PYPTO_DT_INT64) | (1u << 8), 9};
  CHECK(n == static_cast<int>(want.size()));
  for (int i = 0; i < n; ++i) CHECK(key[i] == want[i]);
  uint64_t key2[kMaxKeyWords];
  CHECK(!tensor_error(t, dl));
  // DYNAMIC sizes are not keyed: another size of b's dim 1 packs the same key
  Host b2({7, 11}, PYPTO_DT_BF16);
  dl[1] = b2.dl;
  CHECK(bind_tensors(t, dl, key2) == n && std::memcmp(key, key2, sizeof(uint64_t) * n) == 0);
  CHECK(hash_key(key, n) == hash_key(key2, n));
  key2[0] = 6;
  CHECK(hash_key(key, n) != hash_key(key2, n));
}

// Each violation: bind_tensors returns -1 and tensor_error names kernel, parameter, expected and got.
void test_bind_errors() {
  ParamTable t = make_table();
  Host a({16, 5}, PYPTO_DT_FP32), b({7, 3}, PYPTO_DT_BF16), c({7, 2, 4}, PYPTO_DT_INT32), d({9}, PYPTO_DT_INT64);
  auto expect = [&](DLTensor* dl, ErrorKind kind, std::initializer_list<const char*> parts) {
    uint64_t key[kMaxKeyWords];
    CHECK(bind_tensors(t, dl, key) == -1);
    BindError e = tensor_error(t, dl);
    CHECK(e.kind == kind);
    CHECK_HAS(e.message, "kernel 'k'");
    for (const char* p : parts) CHECK_HAS(e.message, p);
  };
  {
    Host bad({16, 5}, PYPTO_DT_FP16);
    DLTensor dl[4] = {bad.dl, b.dl, c.dl, d.dl};
    expect(dl, ErrorKind::kType, {"parameter 'a'", "expected dtype float32", "got float16"});
  }
  {
    Host bad({15, 5}, PYPTO_DT_FP32);
    DLTensor dl[4] = {bad.dl, b.dl, c.dl, d.dl};
    expect(dl, ErrorKind::kValue, {"parameter 'a'", "dimension 0 must be 16", "got 15"});
  }
  {
    Host bad({16}, PYPTO_DT_FP32);
    DLTensor dl[4] = {bad.dl, b.dl, c.dl, d.dl};
    expect(dl, ErrorKind::kValue, {"parameter 'a'", "expected 2 dimensions", "got 1"});
  }
  {
    Host bad({8, 2, 4}, PYPTO_DT_INT32);  // N = 7 from b, 8 here
    DLTensor dl[4] = {a.dl, b.dl, bad.dl, d.dl};
    expect(dl, ErrorKind::kValue, {"parameter 'c'", "named dimension 'N'", "expected 7", "got 8"});
  }
  {
    Host bad({16, 5}, PYPTO_DT_FP32, {1, 16});  // column-major
    DLTensor dl[4] = {bad.dl, b.dl, c.dl, d.dl};
    expect(dl, ErrorKind::kValue, {"parameter 'a'", "contiguous", "strides [1, 16]"});
  }
  {
    Host bad({16, 5}, PYPTO_DT_FP32);
    bad.dl.device = {kDLCUDA, 0};
    DLTensor dl[4] = {bad.dl, b.dl, c.dl, d.dl};
    expect(dl, ErrorKind::kValue, {"parameter 'a'", "expected a CPU tensor", "cuda"});
  }
  {
    Host bad({9}, PYPTO_DT_INT64);
    bad.dl.dtype = DLDataType{5 /* kDLComplex */, 64, 1};  // a dtype pypto has no code for (complex64), on an any-dtype parameter
    DLTensor dl[4] = {a.dl, b.dl, c.dl, bad.dl};
    expect(dl, ErrorKind::kType, {"parameter 'd'", "a dtype pypto supports"});
  }
  {
    Host bad({7}, PYPTO_DT_INT32);  // `...` needs at least the annotated dim: 1 is fine, 0 dims is not
    Host zero({}, PYPTO_DT_INT32);
    DLTensor ok[4] = {a.dl, b.dl, bad.dl, d.dl};
    uint64_t key[kMaxKeyWords];
    CHECK(bind_tensors(t, ok, key) >= 0);
    DLTensor dl[4] = {a.dl, b.dl, zero.dl, d.dl};
    expect(dl, ErrorKind::kValue, {"parameter 'c'", "at least 1"});
  }
}

void test_row_major() {
  Host compact({2, 3}, PYPTO_DT_FP32);
  CHECK(is_row_major(compact.dl));  // NULL strides
  Host explicit_rm({2, 3}, PYPTO_DT_FP32, {3, 1});
  CHECK(is_row_major(explicit_rm.dl));
  Host unit_dim({1, 3}, PYPTO_DT_FP32, {99, 1});  // a size-1 dim may carry any stride
  CHECK(is_row_major(unit_dim.dl));
  Host sliced({2, 3}, PYPTO_DT_FP32, {6, 1});
  CHECK(!is_row_major(sliced.dl));
  Host transposed({3, 2}, PYPTO_DT_FP32, {1, 3});
  CHECK(!is_row_major(transposed.dl));
  Host empty({2, 0}, PYPTO_DT_FP32, {1, 1});  // torch.zeros(2, 0): no elements, so any strides are contiguous
  CHECK(is_row_major(empty.dl));
}

void test_dtypes() {
  const int codes[] = {PYPTO_DT_BOOL, PYPTO_DT_INT8, PYPTO_DT_INT16, PYPTO_DT_INT32, PYPTO_DT_INT64,
                       PYPTO_DT_UINT8, PYPTO_DT_FP16, PYPTO_DT_BF16, PYPTO_DT_FP32, PYPTO_DT_FP64,
                       PYPTO_DT_UINT16, PYPTO_DT_UINT32, PYPTO_DT_UINT64, PYPTO_DT_FP8E4M3, PYPTO_DT_FP8E5M2,
                       PYPTO_DT_FP8E8M0};
  for (int c : codes) {
    CHECK(dtype_from_dlpack(dtype_to_dlpack(c)) == c);
    CHECK(dtype_itemsize(c) * 8 == dtype_to_dlpack(c).bits);
  }
  CHECK(dtype_from_dlpack(DLDataType{kDLFloat, 32, 4}) == -1);  // vector lanes
  CHECK(dtype_from_dlpack(DLDataType{kDLUInt, 16, 1}) == PYPTO_DT_UINT16);
  CHECK(dtype_from_dlpack(DLDataType{5 /* kDLComplex */, 64, 1}) == -1);
  CHECK(dtype_from_dlpack(DLDataType{kDLFloat4_e2m1fn, 4, 2}) == PYPTO_DT_FP4_E2M1X2);  // torch's packed pair
  CHECK(std::string(dtype_name(PYPTO_DT_BF16)) == "bfloat16");
  // the dtypes torch lacks travel as uint8 bytes: their layout is uint8's, and a uint8 tensor binds to them
  const DLDataType u8{kDLUInt, 8, 1}, f4x2{kDLFloat4_e2m1fn, 4, 2}, f32{kDLFloat, 32, 1};
  for (int c : {PYPTO_DT_HF8, PYPTO_DT_FP4_E2M1}) {
    CHECK(dtype_from_dlpack(dtype_to_dlpack(c)) == PYPTO_DT_UINT8);
    CHECK(dtype_itemsize(c) == 1);
    CHECK(dtype_accepts(c, u8) && !dtype_accepts(c, f32));
  }
  CHECK(std::string(dtype_name(PYPTO_DT_HF8)) == "hifloat8");
  CHECK(std::string(dtype_name(PYPTO_DT_FP4_E2M1)) == "fp4_e2m1");
  CHECK(dtype_accepts(PYPTO_DT_FP4_E2M1, f4x2) && !dtype_accepts(PYPTO_DT_HF8, f4x2));  // the same packed bytes
  CHECK(dtype_accepts(PYPTO_DT_FP4_E2M1X2, u8) && dtype_accepts(PYPTO_DT_FP4_E2M1X2, f4x2));
  CHECK(!dtype_accepts(PYPTO_DT_UINT8, f4x2) && dtype_accepts(kAnyDType, u8) && !dtype_accepts(PYPTO_DT_HF4, u8));
}

std::unique_ptr<Specialization> spec_with_key(uint64_t k) {
  auto s = std::make_unique<Specialization>();
  s->key = {k, k * 3 + 1};
  s->hash = hash_key(s->key.data(), 2);
  s->written_mask = k;
  return s;
}

// Readers probe while one writer inserts 5,000 entries (growing the table many times): every reader sees
// either nothing or the right entry for a key, never a wrong or torn one; afterwards all are found.
void test_spec_table_concurrent() {
  SpecializationTable table;
  constexpr uint64_t kN = 5000;
  std::atomic<uint64_t> published{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> found_total{0};
  std::atomic<int> readers_seen_all{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      uint64_t found = 0;
      bool counted = false;
      uint64_t i = static_cast<uint64_t>(r);
      while (!done.load(std::memory_order_acquire)) {
        const uint64_t limit = published.load(std::memory_order_acquire);
        const uint64_t k = limit ? (i++ * 7919) % limit : 0;
        const uint64_t key[2] = {k, k * 3 + 1};
        const Specialization* s = table.find(key, 2, hash_key(key, 2));
        if (limit) {
          CHECK(s != nullptr);  // published before the load above: must be visible
          CHECK(s->written_mask == k && s->key[0] == k);
          ++found;
          if (limit == kN && found >= 50 && !counted) {
            counted = true;
            readers_seen_all++;
          }
        }
        const uint64_t absent[2] = {kN + k, 0};
        CHECK(table.find(absent, 2, hash_key(absent, 2)) == nullptr);
      }
      found_total += found;
    });
  }
  for (uint64_t k = 0; k < kN; ++k) {
    const Specialization* placed = table.insert(spec_with_key(k));
    CHECK(placed->written_mask == k);
    published.store(k + 1, std::memory_order_release);
    if (k % 64 == 0) std::this_thread::yield();  // let the readers probe while the table grows
  }
  while (readers_seen_all.load() < 3) std::this_thread::yield();  // every reader probed the full table too
  done = true;
  for (auto& t : readers) t.join();
  CHECK(table.size() == kN);
  CHECK(found_total.load() > 0);
  for (uint64_t k = 0; k < kN; ++k) {
    const uint64_t key[2] = {k, k * 3 + 1};
    const Specialization* s = table.find(key, 2, hash_key(key, 2));
    CHECK(s != nullptr && s->written_mask == k);
  }
  // a second insert of an existing key returns the entry already there
  auto dup = spec_with_key(42);
  dup->written_mask = 999;
  CHECK(table.insert(std::move(dup))->written_mask == 42);
  CHECK(table.size() == kN);
  CHECK(table.entries().size() == kN && table.entries().front()->written_mask == 0);
}

void test_const_values() {
  ConstValue one_i, one_b, one_f, one_s;
  one_i.kind = ConstValue::Kind::kInt;
  one_i.i = 1;
  one_b.kind = ConstValue::Kind::kBool;
  one_b.i = 1;
  one_f = ConstValue::from_double(1.0);
  one_s.kind = ConstValue::Kind::kStr;
  one_s.s = "1";
  CHECK(one_i != one_b && one_i != one_f && one_i != one_s && one_b != one_f);
  CHECK(ConstValue::from_double(0.0) != ConstValue::from_double(-0.0));
  CHECK(ConstValue::from_double(std::nan("")) == ConstValue::from_double(std::nan("")));
  CHECK(ConstValue::from_double(2.0).repr() == "2.0" && ConstValue::from_double(-0.0).repr() == "-0.0");
  CHECK(one_s.repr() == "'1'" && one_b.repr() == "True");
  ConstValue tup;
  tup.kind = ConstValue::Kind::kTuple;
  tup.items = {one_i, one_s};
  CHECK(tup.repr() == "(1, '1')");
  ConstValue tup2 = tup;
  CHECK(tup == tup2);
  tup2.items[1] = one_f;
  CHECK(tup != tup2);
}

void test_table_limits() {
  ParamTable t;
  t.kernel = "big";
  for (int i = 0; i <= kMaxParams; ++i) t.params.push_back(tensor_param("p" + std::to_string(i), PYPTO_DT_FP32, {}));
  CHECK_HAS(t.finalize(), "at most 64 parameters");
  ParamTable r;
  r.kernel = "rank";
  r.params.push_back(tensor_param("x", PYPTO_DT_FP32, std::vector<DimAnnotation>(PYPTO_MAX_RANK + 1, stat())));
  CHECK_HAS(r.finalize(), "at most 8 dimensions");
}

}  // namespace

int main() {
  run("bind_key_layout", test_bind_key_layout);
  run("bind_errors", test_bind_errors);
  run("row_major", test_row_major);
  run("dtypes", test_dtypes);
  run("spec_table_concurrent", test_spec_table_concurrent);
  run("const_values", test_const_values);
  run("table_limits", test_table_limits);
  std::printf("all %d checks passed\n", g_checks);
  return 0;
}
