// sha256 of a file (bundle integrity checks at load; not on any call path).
#pragma once

#include <string>

namespace pypto::runtime::detail {

// Lower-case hex digest of the file open at `fd` (read with pread from offset 0); false when it cannot be read.
bool sha256_fd(int fd, std::string* hex);
std::string sha256_hex(const void* data, size_t n);

}  // namespace pypto::runtime::detail
