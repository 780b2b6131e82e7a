// manifest_stages: the work of the manifest parser's stages (manifest.cpp): reading the file, checking its header,
// the parameters' defaults and run options, the exported constant values, the call path's flat copies, and loading
// and cross-checking each specialization.
#include <algorithm>
#include <stdexcept>

#include "core/backend.h"
#include "core/binder.h"
#include "core/dtype.h"
#include "core/module.h"
#include "runtime/manifest.h"
#include "runtime/sha256.h"

#ifndef PYPTO_VERSION
#error "PYPTO_VERSION must be defined by the build"
#endif

namespace pypto::runtime::detail {

namespace {
constexpr int kBundleFormatVersion = 1;
constexpr const char* kBundleFormat = "pypto-bundle";
}  // namespace

void load_fail(const std::string& message) { throw LoadFailure{message}; }

std::string join(const std::string& dir, const std::string& rel) {
  return dir.empty() || dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

std::string header_mismatch(const json& m, const std::string& path, const std::string& directory) {
  if (!m.is_object() || m.value("format", std::string()) != kBundleFormat)
    return "'" + path + "' is not a pypto bundle manifest (no \"format\": \"" + kBundleFormat + "\")";
  const int64_t fv = decode_int(m.at("format_version"), "format_version");
  if (fv != kBundleFormatVersion)
    return "bundle '" + directory + "' has format version " + std::to_string(fv) + ", this runtime reads version " +
           std::to_string(kBundleFormatVersion) + "; export it again";
  if (!m.at("pypto_version").is_string()) load_fail("pypto_version: expected a string, got " + m.at("pypto_version").dump());
  const std::string pv = m.at("pypto_version").get<std::string>();
  if (pv != PYPTO_VERSION)
    return "bundle '" + directory + "' was exported by pypto " + pv + ", this runtime is pypto " + PYPTO_VERSION +
           "; export it again with this version";
  const int64_t abi = decode_int(m.at("kernel_abi_version"), "kernel_abi_version");
  if (abi != PYPTO_KERNEL_ABI_VERSION)
    return "bundle '" + directory + "' was built for kernel ABI " + std::to_string(abi) +
           ", this runtime implements ABI " + std::to_string(PYPTO_KERNEL_ABI_VERSION) + "; export it again";
  return "";
}

void set_params(KernelImpl& k, const std::vector<std::optional<ConstValue>>& defaults) {
  const ParamTable& t = k.table;
  const std::string where = "kernel '" + t.kernel + "'";
  for (size_t i = 0; i < t.params.size(); ++i) {
    k.has_default.push_back(defaults[i].has_value());
    k.defaults.push_back(defaults[i].value_or(ConstValue{}));
    if (!t.params[i].keyword_only) k.n_positional++;
  }
  for (size_t i = 0; i < t.params.size(); ++i) {
    const Param& p = t.params[i];
    ParamInfo info{p.name, static_cast<ParamKind>(p.kind), p.keyword_only, k.has_default[i], ""};
    if (p.kind == pypto::ParamKind::kTensor) {
      if (k.has_default[i]) load_fail(where + ": tensor parameter '" + p.name + "' has a default");
      info.annotation = t.describe_tensor(p.kind_index);
    } else if (p.kind == pypto::ParamKind::kScalar) {
      info.annotation = std::string("pypto.Scalar[") + dtype_name(p.scalar_dtype) + "]";
    } else {
      info.annotation = "constant";
    }
    k.info.push_back(std::move(info));
  }
  // scalar defaults
  // scalar defaults
  k.default_scalars.resize(t.n_scalars());
  for (int s = 0; s < t.n_scalars(); ++s) {
    const int pos = t.scalar_pos[s];
    if (!k.has_default[pos]) continue;
    const ConstValue& d = k.defaults[pos];
    const bool f = is_float_dtype(t.params[pos].scalar_dtype);
    if (d.kind == ConstValue::Kind::kFloat && f) k.default_scalars[s].f = d.as_double();
    else if (d.kind == ConstValue::Kind::kInt || d.kind == ConstValue::Kind::kBool) {
      if (f) k.default_scalars[s].f = static_cast<double>(d.i);
      else k.default_scalars[s].i = d.i;
    } else {
      load_fail(where + ": parameter '" + t.params[pos].name + "': default " + d.repr() + " is not a " +
                dtype_name(t.params[pos].scalar_dtype) + " scalar");
    }
  }
}

void set_run_options(KernelImpl& k, const json& jk) {
  const std::string where = "kernel '" + k.table.kernel + "'";
  const std::string run_mode = jk.value("run_mode", std::string("SIM"));
  if (run_mode != "SIM" && run_mode != "NPU") load_fail(where + ": unknown run_mode '" + run_mode + "'");
  k.backend_reason = backend_unavailable_reason(run_mode == "SIM" ? RunMode::kSim : RunMode::kNpu);
  k.num_threads = static_cast<int32_t>(decode_int(jk.at("num_threads"), where + ": num_threads", 1, 1 << 16));
  k.debug_mode = static_cast<int32_t>(decode_int(jk.at("debug_mode"), where + ": debug_mode", 0, 64));
}

const json& specializations_of(const json& jk, const std::string& where) {
  const json& jspecs = jk.at("specializations");
  if (!jspecs.is_array() || jspecs.empty()) load_fail(where + ": the bundle has no specializations for it");
  return jspecs;
}

std::vector<std::vector<int>> collect_constants(KernelImpl& k, const json& jspecs) {
  const ParamTable& t = k.table;
  const std::string where = "kernel '" + t.kernel + "'";
  k.const_values.resize(t.n_constexprs());
  std::vector<std::vector<int>> const_index;
  for (const json& js : jspecs) {
    std::vector<int> index;
    const json& jc = js.at("constants");
    for (int c = 0; c < t.n_constexprs(); ++c) {
      const std::string& name = t.params[t.constexpr_pos[c]].name;
      if (!jc.contains(name)) load_fail(where + ": a specialization has no value for constant '" + name + "'");
      ConstValue v = decode_value(jc.at(name), where + ": constant '" + name + "'");
      std::vector<ConstValue>& vals = k.const_values[c];
      size_t idx = 0;
      while (idx < vals.size() && vals[idx] != v) ++idx;
      if (idx == vals.size()) vals.push_back(std::move(v));
      index.push_back(static_cast<int>(idx));
    }
    const_index.push_back(std::move(index));
  }
  k.default_const_index.assign(t.n_constexprs(), -1);
  for (int c = 0; c < t.n_constexprs(); ++c) {
    const int pos = t.constexpr_pos[c];
    if (!k.has_default[pos]) continue;
    const std::vector<ConstValue>& vals = k.const_values[c];
    for (size_t v = 0; v < vals.size(); ++v)
      if (vals[v] == k.defaults[pos]) k.default_const_index[c] = static_cast<int>(v);
  }
  return const_index;
}

void build_call_path(KernelImpl& k) {
  const ParamTable& t = k.table;
  const std::string where = "kernel '" + t.kernel + "'";
  k.n_params = static_cast<int>(t.params.size());
  k.n_tensors = t.n_tensors();
  k.n_scalars = t.n_scalars();
  k.n_constexprs = t.n_constexprs();
  for (int i = 0; i < k.n_tensors; ++i)
    if (t.tensor_pos[i] != i) load_fail(where + ": tensor parameters must come first");
  for (int i = 0; i < k.n_scalars; ++i) {
    k.scalar_pos[i] = t.scalar_pos[i];
    k.scalar_is_float[i] = is_float_dtype(t.params[t.scalar_pos[i]].scalar_dtype);
  }
  k.backend_ok = k.backend_reason.empty();
  for (int i = 0; i < k.n_constexprs; ++i) k.constexpr_pos[i] = t.constexpr_pos[i];
  for (int c = 0; c < k.n_constexprs; ++c) {
    k.const_begin.push_back(static_cast<int>(k.const_fast.size()));
    for (const ConstValue& v : k.const_values[c]) {
      using CK = ConstValue::Kind;
      ConstFast f{kSlowMatch, 0};
      if (v.kind == CK::kInt) f = {static_cast<uint8_t>(Arg::Kind::kInt), static_cast<uint64_t>(v.i)};
      else if (v.kind == CK::kBool) f = {static_cast<uint8_t>(Arg::Kind::kBool), static_cast<uint64_t>(v.i)};
      else if (v.kind == CK::kFloat) f = {static_cast<uint8_t>(Arg::Kind::kFloat), v.float_bits};
      else if (v.kind == CK::kNone) f = {static_cast<uint8_t>(Arg::Kind::kNone), Arg(none).bits()};
      k.const_fast.push_back(f);
    }
  }
  k.const_begin.push_back(static_cast<int>(k.const_fast.size()));
}

namespace {

// A library's key (its pypto_spec_key() JSON) in words: "x: fp32[16, DYNAMIC], m=2".
std::string describe_key(const json& key) {
  std::string out;
  for (const json& tj : key.at("tensors")) {
    std::string dims;
    for (const json& d : tj.at("shape"))
      dims += (dims.empty() ? "" : ", ") + (d.is_null() ? std::string("DYNAMIC") : d.is_string() ? d.get<std::string>()
                                                                                              : d.dump());
    out += (out.empty() ? "" : ", ") + tj.at("param").get<std::string>() + ": " + tj.at("dtype").get<std::string>() +
           "[" + dims + "]";
  }
  for (const auto& [name, v] : key.at("constants").items()) {
    const std::string type = v.value("type", std::string());
    std::string value = type == "float" ? v.value("repr", std::string("?"))
                        : v.contains("value")  ? v.at("value").dump()
                        : type == "none"       ? std::string("None")
                                               : v.dump();
    out += (out.empty() ? "" : ", ") + name + "=" + value;
  }
  return out;
}

}  // namespace

void check_library_key(const Module& module, const json& js, const std::string& where, const std::string& lib_rel) {
  const char* text = module.spec_key();
  if (text == nullptr)
    load_fail(where + ": library '" + lib_rel + "' carries no specialization key (" PYPTO_SPEC_KEY_SYMBOL
              "); refusing to load it");
  json key;
  try {
    if (!parse_json_limited(text, &key).empty()) throw std::runtime_error("not JSON");
    if (!key.is_object() || !key.at("tensors").is_array() || !key.at("constants").is_object())
      throw std::runtime_error("not a key");
    describe_key(key);
  } catch (const std::exception&) {
    load_fail(where + ": library '" + lib_rel + "' carries a malformed specialization key; refusing to load it");
  }
  if (key.at("tensors") != js.at("tensors") || key.at("constants") != js.at("constants"))
    load_fail(where + ": library '" + lib_rel + "' was compiled for a different specialization (" +
              describe_key(key) + "): the manifest pairs it with the wrong key; refusing to load it");
}

namespace {

// The library of one specialization, opened inside the bundle without following links through one descriptor:
// hashed, checked against the manifest's sha256, then loaded from that same descriptor.
std::shared_ptr<Module> load_verified_library(const BundleDir& dir, const std::string& lib_rel, const std::string& sha,
                                              const std::string& where) {
  const std::string lib = join(dir.path, lib_rel);
  uint64_t size = 0;
  std::string why;
  const Fd fd(open_inside(dir, lib_rel, kMaxLibraryBytes, &size, &why));
  if (fd.get() < 0)
    load_fail(where + ": library '" + lib + "' " + why +
              (why == "is missing" ? ": the bundle is incomplete; export it again" : "; refusing to load it"));
  std::string got;
  if (!sha256_fd(fd.get(), &got)) load_fail(where + ": cannot read library '" + lib + "'");
  if (got != sha)
    load_fail(where + ": library '" + lib + "' does not match the manifest (sha256 " + got + ", expected " + sha +
              "): the bundle was modified or corrupted; refusing to load it");
  std::string err;
  auto module = load_library_fd(fd.get(), sha, lib, &err);
  if (!module) load_fail(where + ": " + err);
  return module;
}

// The recorded argument tensors of one specialization as DLTensors (`shapes` holds their dims; a DYNAMIC or named dim
// is 1: not keyed), and their description ("x: float32[16, DYNAMIC]") in `desc`.
std::vector<DLTensor> recorded_tensors(const ParamTable& t, const json& jt, const std::string& where,
                                       std::vector<std::vector<int64_t>>& shapes, std::string* desc) {
  if (!jt.is_array() || jt.size() != static_cast<size_t>(t.n_tensors()))
    load_fail(where + ": a specialization describes " + std::to_string(jt.size()) + " tensors, the kernel has " +
              std::to_string(t.n_tensors()));
  shapes.assign(t.n_tensors(), {});
  std::vector<DLTensor> dl(t.n_tensors());
  for (int i = 0; i < t.n_tensors(); ++i) {
    const json& ji = jt[i];
    const int dt = decode_dtype(ji.at("dtype"), where);
    if (dt == kAnyDType) load_fail(where + ": a specialization has no tensor dtype");
    std::string dims;
    if (!ji.at("shape").is_array() || ji.at("shape").size() > PYPTO_MAX_RANK)
      load_fail(where + ": a specialization's tensor shape is not a list of at most " +
                std::to_string(PYPTO_MAX_RANK) + " dims");
    for (const json& d : ji.at("shape")) {
      if (d.is_null()) {
        shapes[i].push_back(1);  // any size: dynamic dims are not keyed
        dims += std::string(dims.empty() ? "" : ", ") + "DYNAMIC";
      } else if (d.is_string()) {
        shapes[i].push_back(1);  // a named dim: the same size everywhere, not keyed
        dims += std::string(dims.empty() ? "" : ", ") + d.get<std::string>();
      } else {
        shapes[i].push_back(decode_int(d, where + ": a specialization's tensor shape", 0));
        dims += (dims.empty() ? "" : ", ") + std::to_string(shapes[i].back());
      }
    }
    dl[i] = DLTensor{nullptr, DLDevice{kDLCPU, 0}, static_cast<int32_t>(shapes[i].size()), dtype_to_dlpack(dt),
                     shapes[i].data(), nullptr, 0};
    *desc += (desc->empty() ? "" : ", ") + t.tensor(i).name + ": " + dtype_name(dt) + "[" + dims + "]";
  }
  return dl;
}

}  // namespace

// One manifest entry: (1) its library, verified and loaded; (2) its recorded tensors and tensor key, checked
// against the parameter table and each other; (3) the constants' key words; (4) the library's own key; (5) the
// written mask; (6) installed (core/spec_table.h install_specialization, as the Python miss does).
void add_specialization(KernelImpl& k, const json& js, const std::vector<int>& const_index, const BundleDir& dir,
                        size_t index) {
  const ParamTable& t = k.table;
  const std::string where = "kernel '" + t.kernel + "'";
  const std::string lib_rel = js.at("library").get<std::string>();
  const std::string lib = join(dir.path, lib_rel);
  auto module = load_verified_library(dir, lib_rel, js.at("sha256").get<std::string>(), where);

  std::vector<uint64_t> key;
  for (const json& w : js.at("tensor_key")) key.push_back(decode_word(w, where + ": tensor_key"));
  std::vector<std::vector<int64_t>> shapes;
  std::string desc;
  const std::vector<DLTensor> dl = recorded_tensors(t, js.at("tensors"), where, shapes, &desc);
  // the recorded tensors must satisfy the parameter table (dtype, rank, fixed dims: the binder's checks), and
  // the recorded key must be the one the binder computes for them
  std::vector<uint64_t> expect(kMaxKeyWords);
  const int nw = bind_tensors(t, dl.data(), expect.data());
  if (nw < 0)
    load_fail(where + ": a specialization's tensors (" + desc + ") do not satisfy the parameter table: " +
              tensor_error(t, dl.data()).message + "; the manifest is inconsistent");
  if (static_cast<int>(key.size()) != nw || !std::equal(key.begin(), key.end(), expect.begin()))
    load_fail(where + ": a specialization's tensor_key does not match its tensor shapes: the manifest is "
                      "inconsistent");
  for (int c = 0; c < t.n_constexprs(); ++c) {
    key.push_back(static_cast<uint64_t>(const_index[c]) + 1);
    desc += ", " + t.params[t.constexpr_pos[c]].name + "=" + k.const_values[c][const_index[c]].repr();
  }
  check_library_key(*module, js, where + ": specialization #" + std::to_string(index) + " (" + desc + ")", lib_rel);
  const uint64_t written = decode_word(js.at("written_mask"), where + ": written_mask");
  if (t.n_tensors() < 64 && written >> t.n_tensors() != 0)
    load_fail(where + ": written_mask " + std::to_string(written) + " names tensors the kernel does not have");
  const int n = static_cast<int>(key.size());
  const Specialization* placed = install_specialization(k.specs, t, key.data(), n, hash_key(key.data(), n), dl.data(),
                                                        LoadedLibrary{std::move(module), lib, written, 0.0, nullptr});
  if (placed->library_path != lib) load_fail(where + ": two specializations have the same key (" + desc + ")");
  k.spec_descriptions.push_back(desc);
}

}  // namespace pypto::runtime::detail
