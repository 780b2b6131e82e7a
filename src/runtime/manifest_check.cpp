// manifest_check: the manifest's text read under limits and parsed without deep recursion, then every field the
// runtime reads checked for its exact JSON type (strict: 1.9 is not an integer, an object is not a list) before any
// stage decodes it — so that a hostile manifest is a LoadError naming the field, never a crash or a guess.
#include <string>

#include "runtime/bundle_files.h"
#include "runtime/manifest.h"

namespace pypto::runtime::detail {

namespace {

struct TooDeep {};

// Checks one manifest's types; every failure names the field by its path ("kernels[0].params[2].keyword_only").
class TypeCheck {
 public:
  explicit TypeCheck(const std::string& manifest) : manifest_(manifest) {}

  void manifest(const json& m) {
    object(m, "the manifest");
    string(m, "format", "");
    integer(m, "format_version", "");
    string(m, "pypto_version", "");
    integer(m, "kernel_abi_version", "");
    const json& ks = list(m, "kernels", "");
    for (size_t i = 0; i < ks.size(); ++i) kernel(ks[i], "kernels[" + std::to_string(i) + "]");
  }

 private:
  [[noreturn]] void bad(const std::string& path, const std::string& expected, const json& got) {
    std::string shown = got.dump();
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    load_fail("malformed bundle manifest '" + manifest_ + "': " + path + ": expected " + expected + ", got " + shown);
  }
  static std::string at(const std::string& path, const char* name) {
    return path.empty() ? std::string(name) : path + "." + name;
  }
  const json& field(const json& obj, const char* name, const std::string& path) {
    const auto it = obj.find(name);
    if (it == obj.end())
      load_fail("malformed bundle manifest '" + manifest_ + "': " + (path.empty() ? "the manifest" : path) +
                ": no field \"" + name + "\"");
    return *it;
  }
  void object(const json& v, const std::string& path) {
    if (!v.is_object()) bad(path, "an object", v);
  }
  const json& string(const json& obj, const char* name, const std::string& path) {
    const json& v = field(obj, name, path);
    if (!v.is_string()) bad(at(path, name), "a string", v);
    return v;
  }
  void integer(const json& obj, const char* name, const std::string& path) {
    const json& v = field(obj, name, path);
    if (!v.is_number_integer()) bad(at(path, name), "an integer", v);
  }
  void boolean(const json& obj, const char* name, const std::string& path) {
    const json& v = field(obj, name, path);
    if (!v.is_boolean()) bad(at(path, name), "true or false", v);
  }
  const json& list(const json& obj, const char* name, const std::string& path) {
    const json& v = field(obj, name, path);
    if (!v.is_array()) bad(at(path, name), "a list", v);
    return v;
  }
  const json& objects(const json& obj, const char* name, const std::string& path) {
    const json& v = list(obj, name, path);
    for (size_t i = 0; i < v.size(); ++i) object(v[i], at(path, name) + "[" + std::to_string(i) + "]");
    return v;
  }

  void kernel(const json& k, const std::string& path) {
    object(k, path);
    string(k, "name", path);
    const json& names = list(k, "dim_names", path);
    for (size_t i = 0; i < names.size(); ++i)
      if (!names[i].is_string()) bad(at(path, "dim_names") + "[" + std::to_string(i) + "]", "a string", names[i]);
    if (k.contains("run_mode")) string(k, "run_mode", path);
    integer(k, "num_threads", path);
    integer(k, "debug_mode", path);
    const json& ps = objects(k, "params", path);
    for (size_t i = 0; i < ps.size(); ++i) param(ps[i], at(path, "params") + "[" + std::to_string(i) + "]");
    const json& ss = objects(k, "specializations", path);
    for (size_t i = 0; i < ss.size(); ++i) spec(ss[i], at(path, "specializations") + "[" + std::to_string(i) + "]");
  }

  void param(const json& p, const std::string& path) {
    string(p, "name", path);
    const std::string kind = string(p, "kind", path).get<std::string>();
    boolean(p, "keyword_only", path);
    if (p.contains("default")) value(p.at("default"), at(path, "default"));
    if (kind == "tensor") {
      const json& dt = field(p, "dtype", path);
      if (!dt.is_null() && !dt.is_string()) bad(at(path, "dtype"), "a dtype name or null", dt);
      boolean(p, "any_shape", path);
      boolean(p, "ellipsis", path);
      integer(p, "format", path);
      const json& dims = objects(p, "dims", path);
      for (size_t i = 0; i < dims.size(); ++i) {
        const std::string dp = at(path, "dims") + "[" + std::to_string(i) + "]";
        const std::string dk = string(dims[i], "kind", dp).get<std::string>();
        if (dk == "FIXED") integer(dims[i], "value", dp);
        if (dk == "NAMED") string(dims[i], "name", dp);
      }
    } else if (kind == "scalar") {
      string(p, "dtype", path);
    }
  }

  // A typed value ({"type": "int", "value": 3}, ...). An unknown type is left to the decoder's own message.
  void value(const json& v, const std::string& path) {
    object(v, path);
    const std::string type = string(v, "type", path).get<std::string>();
    if (type == "bool") boolean(v, "value", path);
    else if (type == "int") {
      const json& x = field(v, "value", path);
      if (!x.is_number_integer()) bad(path + ": int constant", "an integer", x);
    }
    else if (type == "float") string(v, "bits", path);
    else if (type == "str") string(v, "value", path);
    else if (type == "enum") string(v, "name", path), integer(v, "value", path);
    else if (type == "tuple" || type == "list") {
      const json& items = list(v, "items", path);  // nesting is bounded by the parser's depth limit
      for (size_t i = 0; i < items.size(); ++i) value(items[i], at(path, "items") + "[" + std::to_string(i) + "]");
    }
  }

  void spec(const json& s, const std::string& path) {
    const json& key = list(s, "tensor_key", path);
    for (size_t i = 0; i < key.size(); ++i)
      if (!key[i].is_number_integer())
        bad(at(path, "tensor_key") + "[" + std::to_string(i) + "]", "an integer", key[i]);
    const json& cs = field(s, "constants", path);
    if (!cs.is_object()) bad(at(path, "constants"), "an object", cs);
    for (const auto& [name, v] : cs.items()) value(v, at(path, "constants") + "." + name);
    integer(s, "written_mask", path);
    const json& ts = objects(s, "tensors", path);
    for (size_t i = 0; i < ts.size(); ++i) {
      const std::string tp = at(path, "tensors") + "[" + std::to_string(i) + "]";
      string(ts[i], "dtype", tp);
      const json& shape = list(ts[i], "shape", tp);
      for (size_t d = 0; d < shape.size(); ++d)
        if (!shape[d].is_number_integer() && !shape[d].is_null() && !shape[d].is_string())
          bad(at(tp, "shape") + "[" + std::to_string(d) + "]", "an integer, null or a name", shape[d]);
    }
    string(s, "library", path);
    const std::string sha = string(s, "sha256", path).get<std::string>();
    if (sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos)
      bad(at(path, "sha256"), "64 lower-case hex digits", s.at("sha256"));
  }

  const std::string& manifest_;
};

}  // namespace

std::string parse_json_limited(const std::string& text, json* out) {
  // The parser itself keeps its own stack, but everything that walks the result (the decoders, comparisons,
  // dump) recurses: the callback refuses a nested array or object before it is built.
  const json::parser_callback_t limit = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxManifestDepth)
      throw TooDeep{};
    return true;
  };
  try {
    *out = json::parse(text, limit);
  } catch (const TooDeep&) {
    return "arrays and objects nest more than " + std::to_string(kMaxManifestDepth) + " deep";
  } catch (const json::parse_error& e) {
    return e.what();
  }
  return "";
}

std::string read_manifest(const BundleDir& dir, const std::string& path, json* out) {
  uint64_t size = 0;
  std::string why;
  Fd fd(open_inside(dir, "manifest.json", kMaxManifestBytes, &size, &why));
  if (fd.get() < 0) return "cannot open bundle manifest '" + path + "': it " + why;
  std::string text;
  why = read_all(fd.get(), size, &text);
  if (!why.empty()) return "cannot read bundle manifest '" + path + "': " + why;
  why = parse_json_limited(text, out);
  if (!why.empty()) return "malformed bundle manifest '" + path + "': " + why;
  return "";
}

void check_manifest_types(const json& m, const std::string& path) { TypeCheck(path).manifest(m); }

}  // namespace pypto::runtime::detail
