// manifest: reading a bundle manifest — the parser (manifest.cpp, one page of numbered stages) and the stages'
// work (manifest_stages.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/const_value.h"
#include "core/module.h"
#include "core/param_table_json.h"
#include "runtime/bundle_files.h"
#include "runtime/kernel_impl.h"

namespace pypto::runtime::detail {

using json = nlohmann::json;

// A manifest that cannot be loaded: thrown by every stage (the same type as the parameter table decoder's).
using LoadFailure = DecodeError;
[[noreturn]] void load_fail(const std::string& message);

// Reads the bundle's manifest.json (a regular file inside it, size-limited; `path` names it in messages) and parses
// it with the nesting limit into *out: "" or why it cannot be read (manifest_check.cpp).
std::string read_manifest(const BundleDir& dir, const std::string& path, json* out);
// Parses JSON text, refusing arrays/objects nested deeper than kMaxManifestDepth before building them: "" or why.
std::string parse_json_limited(const std::string& text, json* out);
// Every field the runtime reads has its exact JSON type, else a LoadFailure naming the field (manifest_check.cpp).
void check_manifest_types(const json& m, const std::string& path);
// The format, pypto version and kernel ABI the manifest declares must be this runtime's: "" or why not.
std::string header_mismatch(const json& m, const std::string& path, const std::string& directory);
// The parameters as callers see them (Kernel::params()), and the defaults the call path fills in.
void set_params(KernelImpl& k, const std::vector<std::optional<ConstValue>>& defaults);
// run_mode, num_threads, debug_mode.
void set_run_options(KernelImpl& k, const json& jk);
// The kernel's specializations (a non-empty array).
const json& specializations_of(const json& jk, const std::string& where);
// Collects each constant's exported values; returns per specialization the index of its value of each constant.
std::vector<std::vector<int>> collect_constants(KernelImpl& k, const json& jspecs);
// The call path's flat copies of the table's counts, positions and constant values.
void build_call_path(KernelImpl& k);
// Verifies a specialization's library (inside the bundle, sha256 of the descriptor that is then loaded), loads it, checks its recorded key against the
// binder's and the library's own key (check_library_key), and inserts it. `index`: the entry's position, for errors.
void add_specialization(KernelImpl& k, const json& js, const std::vector<int>& const_index, const BundleDir& dir,
                        size_t index);
// The key a library says it was compiled for (pypto_spec_key(), python/pypto/vocab/speckey.py) must be the
// manifest entry's tensors and constants: else a load error naming the entry (`where`) and the library.
void check_library_key(const Module& module, const json& js, const std::string& where, const std::string& lib_rel);
std::string join(const std::string& dir, const std::string& rel);

}  // namespace pypto::runtime::detail
