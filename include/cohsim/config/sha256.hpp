#pragma once
#include <string>
#include <string_view>

namespace cohsim::config {

/// The SHA-256 digest (FIPS 180-4) of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace cohsim::config
