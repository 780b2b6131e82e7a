// test_sequence: runs a captured sequence of a bundle (Bundle::sequence) on buffers read from files, for
// tests/ut/capture/test_export.py. One JSON case in, one JSON line out:
//   {"bundle": DIR, "sequence": NAME, "buffers": [{"path": P, "dtype": CODE, "shape": [..]}], "slots": {NAME: x},
//    "int_slots": [NAME...], "alias": [[i, j]], "rounds": R, "names": true}
// Each buffer's bytes are read from its file, the sequence runs (R rounds when R > 0: then "ns_per_run" is the
// median over 7 timed loops), and the buffers are written back. "alias" [i, j] makes buffer j point at buffer i's
// memory (the overlap check). Output: {"code", "message", "ns_per_run", "buffers": [first_use...], "slots"}.
#include <pypto/runtime.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace pypto::runtime;
using json = nlohmann::json;

namespace {

std::vector<char> read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

int run(const json& c) {
  json out;
  Bundle bundle;
  Status s = Bundle::open(c.at("bundle").get<std::string>(), &bundle);
  const Sequence* seq = nullptr;
  if (s.ok()) s = bundle.sequence(c.at("sequence").get<std::string>(), &seq);
  if (!s.ok()) {
    std::cout << json{{"code", status_code_name(s.code())}, {"message", s.message()}}.dump() << std::endl;
    return 0;
  }
  const json& jb = c.at("buffers");
  std::vector<std::vector<char>> mem(jb.size());
  std::vector<std::vector<int64_t>> shapes(jb.size());
  std::vector<TensorRef> refs(jb.size());
  std::vector<Arg> args;
  for (size_t i = 0; i < jb.size(); ++i) {
    mem[i] = read_file(jb[i].at("path").get<std::string>());
    shapes[i] = jb[i].at("shape").get<std::vector<int64_t>>();
    refs[i] = TensorRef{mem[i].data(), shapes[i].data(), static_cast<int32_t>(shapes[i].size()),
                        jb[i].at("dtype").get<int32_t>(), nullptr};
  }
  for (const json& a : c.value("alias", json::array())) refs[a[1].get<size_t>()].data = refs[a[0].get<size_t>()].data;
  for (const TensorRef& r : refs) args.emplace_back(r);
  std::vector<NamedArg> named;
  std::vector<std::string> names;
  const json slots = c.value("slots", json::object());
  const std::vector<std::string> int_slots = c.value("int_slots", std::vector<std::string>{});
  for (auto it = slots.begin(); it != slots.end(); ++it) names.push_back(it.key());
  for (const std::string& n : names) {
    const bool as_int = std::find(int_slots.begin(), int_slots.end(), n) != int_slots.end();
    named.push_back(as_int ? kw(n.c_str(), slots[n].get<long long>()) : kw(n.c_str(), slots[n].get<double>()));
  }
  s = seq->run(args.data(), args.size(), named.data(), named.size());
  const int rounds = c.value("rounds", 0);
  if (s.ok() && rounds > 0) {
    std::vector<double> loops;
    for (int l = 0; l < 7; ++l) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < rounds; ++r) (void)seq->run(args.data(), args.size(), named.data(), named.size());
      loops.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / rounds);
    }
    std::sort(loops.begin(), loops.end());
    out["ns_per_run"] = loops[loops.size() / 2];
  }
  for (size_t i = 0; i < jb.size(); ++i) {
    std::ofstream f(jb[i].at("path").get<std::string>(), std::ios::binary | std::ios::trunc);
    f.write(mem[i].data(), static_cast<std::streamsize>(mem[i].size()));
  }
  out["code"] = status_code_name(s.code());
  out["message"] = s.message();
  json firsts = json::array();
  for (const BufferInfo& b : seq->buffers()) firsts.push_back(b.first_use);
  out["buffers"] = firsts;
  out["slots"] = seq->slots();
  out["launches"] = seq->num_launches();
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CASE.json\n", argv[0]);
    return 2;
  }
  std::ifstream f(argv[1]);
  return run(json::parse(f));
}
