// hostile_runtime: the C++ runtime's call path given overlapping tensors (tests/ut/security/test_bundle_loader.py).
// Prints one JSON line per case: {"case", "code", "message", "untouched" | "correct"}.
#include <cstdio>
#include <string>
#include <vector>

#include "pypto/runtime.h"

using namespace pypto::runtime;

namespace {

std::string quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n') { r += "\\n"; continue; }
    r += c;
  }
  return r + "\"";
}

void report(const char* name, const Status& s, const char* flag, bool value) {
  std::printf("{\"case\": \"%s\", \"code\": \"%s\", \"message\": %s, \"%s\": %s}\n", name, status_code_name(s.code()),
              quote(s.message()).c_str(), flag, value ? "true" : "false");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  Bundle bundle;
  Status s = Bundle::open(argv[1], &bundle);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }
  const Kernel& sa = bundle.kernel("scaled_add");  // out = a * alpha + b, [STATIC, STATIC] fp32, alpha = 1.0
  int64_t shape[2] = {4, 4};
  std::vector<float> buf(20), other(16, 1.0f), out(16, 0.0f);
  for (int i = 0; i < 20; ++i) buf[i] = static_cast<float>(i);
  const std::vector<float> before = buf;
  auto ref = [&](float* p) { return TensorRef{p, shape, 2, PYPTO_DT_FP32}; };

  s = sa.call({ref(buf.data()), ref(other.data()), ref(buf.data() + 4)});  // out = a shifted by 4 elements
  report("partial", s, "untouched", buf == before);

  s = sa.call({ref(other.data()), ref(buf.data() + 4), ref(buf.data())});  // out overlaps b's first 12 elements
  report("shifted_input", s, "untouched", buf == before);

  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  s = sa.call({ref(x.data()), ref(other.data()), ref(x.data())});  // in place: out is a
  bool correct = true;
  for (int i = 0; i < 16; ++i) correct &= x[i] == static_cast<float>(i) + 1.0f;
  report("in_place", s, "correct", correct);

  s = sa.call({ref(buf.data()), ref(other.data()), ref(out.data())});
  correct = true;
  for (int i = 0; i < 16; ++i) correct &= out[i] == buf[i] + 1.0f;
  report("separate", s, "correct", correct);

  const Kernel& axpy = bundle.kernel("axpy");  // out = x * s + y, named dim N: shapes not fixed by the key
  int64_t n = 5;
  TensorRef xa{buf.data(), &n, 1, PYPTO_DT_FP32}, ya{other.data(), &n, 1, PYPTO_DT_FP32},
      oa{buf.data() + 1, &n, 1, PYPTO_DT_FP32};
  s = axpy.call({xa, ya, oa, 2.0});
  report("dynamic", s, "untouched", buf == before);
  return 0;
}
