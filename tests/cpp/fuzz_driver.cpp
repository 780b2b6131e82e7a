// fuzz_driver: a seeded random mutator that drives LLVMFuzzerTestOneInput (fuzz_manifest.cpp) where the compiler
// has no libFuzzer (g++). Byte-level mutations (flip, insert, delete, duplicate, splice) and JSON-aware ones (a
// number replaced by an edge value, a value by another JSON type, a value nested thousands deep) stacked 1-8 per
// input, starting from the seed manifests. Deterministic for a given --seed.
//
//   fuzz_driver [--seed S] [--runs N] [--seconds T] SEED_FILE...
//
// Each input is written to the bundle's manifest.json before it runs, so a crash leaves its input there. Prints
// "fuzz_driver: N inputs in T s, no finding" at the end.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Rng = std::mt19937_64;

const char* const kNumbers[] = {"0", "-1", "1.9", "1e999", "-0", "4294967297", "9223372036854775807",
                                "9223372036854775808", "18446744073709551616", "-9223372036854775809", "1e-400",
                                "2", "64", "65", "255", "256", "1024", "0.5"};
const char* const kValues[] = {"null", "true", "false", "[]", "{}", "\"\"", "\"x\"", "[[]]", "{\"type\":\"tuple\"}",
                               "{\"type\":\"tuple\",\"items\":{}}", "\"../x.so\"", "\"/etc/passwd\"", "\"lib/\"",
                               "\"lib//a.so\"", "\"lib/./a.so\"", "\"\\u0000\"", "\"DT_FP32\"", "\"float32\""};

size_t pick(Rng& r, size_t n) { return n == 0 ? 0 : static_cast<size_t>(r() % n); }

// The span of the JSON value starting at `i` (a rough scan: strings, brackets, scalars).
size_t value_end(const std::string& s, size_t i) {
  if (i >= s.size()) return i;
  if (s[i] == '"') {
    for (size_t j = i + 1; j < s.size(); ++j) {
      if (s[j] == '\\') ++j;
      else if (s[j] == '"') return j + 1;
    }
    return s.size();
  }
  if (s[i] == '[' || s[i] == '{') {
    int depth = 0;
    bool in_str = false;
    for (size_t j = i; j < s.size(); ++j) {
      const char c = s[j];
      if (in_str) {
        if (c == '\\') ++j;
        else if (c == '"') in_str = false;
      } else if (c == '"') {
        in_str = true;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if ((c == ']' || c == '}') && --depth == 0) {
        return j + 1;
      }
    }
    return s.size();
  }
  size_t j = i;
  while (j < s.size() && std::strchr(",]}\n\r\t ", s[j]) == nullptr) ++j;
  return j;
}

// A position where a JSON value starts (after ':' or '[' or ','), or npos.
size_t value_start(Rng& r, const std::string& s) {
  for (int tries = 0; tries < 16; ++tries) {
    size_t i = pick(r, s.size());
    while (i < s.size() && s[i] != ':' && s[i] != '[' && s[i] != ',') ++i;
    if (i >= s.size()) continue;
    ++i;
    while (i < s.size() && s[i] == ' ') ++i;
    if (i < s.size() && s[i] != ']' && s[i] != '}') return i;
  }
  return std::string::npos;
}

void mutate_once(Rng& r, std::string& s, const std::vector<std::string>& seeds) {
  switch (r() % 10) {
    case 0:  // flip a bit
      if (!s.empty()) s[pick(r, s.size())] ^= static_cast<char>(1u << (r() % 8));
      break;
    case 1:  // insert a random byte
      s.insert(s.begin() + static_cast<long>(pick(r, s.size() + 1)), static_cast<char>(r() & 0xFF));
      break;
    case 2: {  // delete a range
      if (s.empty()) break;
      const size_t at = pick(r, s.size());
      s.erase(at, 1 + pick(r, std::min<size_t>(64, s.size() - at)));
      break;
    }
    case 3: {  // duplicate a range
      if (s.empty()) break;
      const size_t at = pick(r, s.size());
      const std::string piece = s.substr(at, 1 + pick(r, 256));
      s.insert(pick(r, s.size() + 1), piece);
      break;
    }
    case 4: {  // splice: a range of another seed
      const std::string& o = seeds[pick(r, seeds.size())];
      if (o.empty()) break;
      const size_t at = pick(r, o.size());
      s.insert(pick(r, s.size() + 1), o.substr(at, 1 + pick(r, 512)));
      break;
    }
    case 5:
    case 6: {  // a value replaced by an edge number or another JSON type
      const size_t i = value_start(r, s);
      if (i == std::string::npos) break;
      const size_t e = value_end(s, i);
      const bool number = r() % 2 == 0;
      s.replace(i, e - i, number ? kNumbers[pick(r, std::size(kNumbers))] : kValues[pick(r, std::size(kValues))]);
      break;
    }
    case 7: {  // a value wrapped deeply: arrays or typed tuples
      const size_t i = value_start(r, s);
      if (i == std::string::npos) break;
      const size_t e = value_end(s, i);
      const size_t depth = 1 + pick(r, r() % 4 == 0 ? 60000 : 100);
      const bool tuple = r() % 2 == 0;
      std::string open, close;
      for (size_t d = 0; d < depth; ++d) {
        open += tuple ? "{\"type\":\"tuple\",\"items\":[" : "[";
        close += tuple ? "]}" : "]";
      }
      s = s.substr(0, i) + open + s.substr(i, e - i) + close + s.substr(e);
      break;
    }
    case 8: {  // a value duplicated in place of another
      const size_t i = value_start(r, s), j = value_start(r, s);
      if (i == std::string::npos || j == std::string::npos) break;
      const std::string v = s.substr(i, value_end(s, i) - i);
      s.replace(j, value_end(s, j) - j, v);
      break;
    }
    default: {  // truncate
      if (!s.empty()) s.resize(pick(r, s.size()));
      break;
    }
  }
}

std::string read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 1;
  long long runs = -1;
  double seconds = -1;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--runs" && i + 1 < argc) runs = std::strtoll(argv[++i], nullptr, 10);
    else if (a == "--seconds" && i + 1 < argc) seconds = std::strtod(argv[++i], nullptr);
    else seeds.push_back(read_file(argv[i]));
  }
  if (seeds.empty() || (runs < 0 && seconds < 0)) {
    std::fprintf(stderr, "usage: %s [--seed S] [--runs N] [--seconds T] SEED_FILE...\n", argv[0]);
    return 2;
  }
  Rng r(seed);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  long long n = 0;
  for (const std::string& s : seeds) {  // the seeds themselves first
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    ++n;
  }
  while ((runs < 0 || n < runs) && (seconds < 0 || elapsed() < seconds)) {
    std::string s = seeds[pick(r, seeds.size())];
    const int k = 1 + static_cast<int>(r() % 8);
    for (int m = 0; m < k; ++m) mutate_once(r, s, seeds);
    if (s.size() > (size_t{8} << 20)) s.resize(size_t{8} << 20);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    ++n;
  }
  std::printf("fuzz_driver: %lld inputs in %.1f s (seed %llu), no finding\n", n, elapsed(),
              static_cast<unsigned long long>(seed));
  return 0;
}
