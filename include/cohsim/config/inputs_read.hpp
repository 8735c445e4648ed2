#pragma once
#include <map>
#include <string>

namespace cohsim::config {

/// Every file config::load_json_file read in this process (an include too):
/// its path as given, lexically normalised, -> the SHA-256 of the bytes read.
std::map<std::string, std::string> inputs_read();

}  // namespace cohsim::config
