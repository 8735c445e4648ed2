#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace cohsim::config {

/// The SHA-256 digest (FIPS 180-4) of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);
/// The SHA-256 of the bytes of the file at `path`; nullopt when it cannot be read.
std::optional<std::string> file_sha256_hex(const std::string& path);

}  // namespace cohsim::config
