// sha256 of a file (bundle integrity checks at load; not on any call path).
#pragma once

#include <string>

namespace pypto::runtime::detail {

// Lower-case hex digest of the file at `path`; false (and *error) when it cannot be read.
bool sha256_file(const std::string& path, std::string* hex, std::string* error);
std::string sha256_hex(const void* data, size_t n);

}  // namespace pypto::runtime::detail
