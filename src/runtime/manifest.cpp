// manifest: the bundle manifest parser — Bundle::open and one kernel's stages; each stage's work is in
// manifest_stages.cpp, the parameter table decoder in core/param_table_json (shared with the Python extension).
#include "runtime/manifest.h"

#include "core/param_table_json.h"
#include "runtime/sequence.h"

namespace pypto::runtime {

using namespace detail;

namespace {

std::unique_ptr<KernelImpl> parse_kernel(const json& jk, const BundleDir& dir) {
  auto k = std::make_unique<KernelImpl>();
  // 1. the parameter table and the defaults (the one decoder, shared with pypto._core.JitFunction)
  std::vector<std::optional<ConstValue>> defaults;
  k->table = decode_param_table(jk, &defaults);
  const std::string where = "kernel '" + k->table.kernel + "'";
  // 2. the parameters as callers see them; the defaults the call path fills in
  set_params(*k, defaults);
  // 3. run options: run_mode (and whether its backend runs here), threads, debug mode
  set_run_options(*k, jk);
  // 4. the values of the constants the specializations were exported with (they key the C++ call path)
  const json& jspecs = specializations_of(jk, where);
  const std::vector<std::vector<int>> const_index = collect_constants(*k, jspecs);
  // 5. the call path's flat copies of the table
  build_call_path(*k);
  // 6. per specialization: verify and load its library, check its key, insert it
  for (size_t i = 0; i < jspecs.size(); ++i) add_specialization(*k, jspecs[i], const_index[i], dir, i);
  return k;
}

}  // namespace

Status Bundle::open(const std::string& directory, Bundle* out) {
  const std::string path = join(directory, "manifest.json");
  try {
    // 1. the manifest's text (a regular file inside the bundle, size- and depth-limited), its header (format,
    // pypto version, kernel ABI), and the exact JSON type of every field the stages read
    BundleDir dir;
    std::string why = open_bundle_dir(directory, &dir);
    json m;
    if (why.empty()) why = read_manifest(dir, path, &m);
    if (why.empty()) why = header_mismatch(m, path, directory);
    if (!why.empty()) return fail(StatusCode::kLoadError, why);
    check_manifest_types(m, path);
    // 2. the kernels, by unique name
    auto impl = std::make_shared<BundleImpl>();
    impl->directory = directory;
    impl->pypto_version = m.at("pypto_version").get<std::string>();
    for (const json& jk : m.at("kernels")) {
      auto k = parse_kernel(jk, dir);
      for (const auto& other : impl->kernels)
        if (other->table.kernel == k->table.kernel)
          return fail(StatusCode::kLoadError, "bundle '" + directory + "' has two kernels named '" +
                                                  k->table.kernel + "'");
      impl->kernels.push_back(std::move(k));
    }
    // 3. the captured sequences, checked against the kernels' specializations (runtime/sequence.cpp)
    load_sequences(*impl, m);
    out->impl_ = std::move(impl);
    return Status();
  } catch (const LoadFailure& e) {
    return fail(StatusCode::kLoadError, "bundle '" + directory + "': " + e.message);
  } catch (const json::exception& e) {
    return fail(StatusCode::kLoadError, "malformed bundle manifest '" + path + "': " + e.what());
  } catch (const std::exception& e) {
    return fail(StatusCode::kLoadError, "cannot load bundle '" + directory + "': " + e.what());
  }
}

}  // namespace pypto::runtime
