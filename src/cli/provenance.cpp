// Provenance of a results document: the command line, the source tree's
// commit and build id (cmake/build_info.cmake writes them at build time) and
// the SHA-256 of every input file read (config::inputs_read()).
#include <cstdlib>
#include <filesystem>

#include "cli.hpp"
#include "provenance.hpp"
#include "cohsim/build_info.hpp"
#include "cohsim/config/inputs_read.hpp"

namespace cohsim::cli {

namespace {
std::string& recorded_command() {
  static std::string c;
  return c;
}
}  // namespace

std::string shell_quoted(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789-_./=:,+@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void record_command_line(int argc, char** argv) {
  std::string c;
  for (int i = 0; i < argc; ++i) c += (i ? " " : "") + shell_quoted(argv[i]);
  recorded_command() = c;
}

nlohmann::json build_info() {
  const char* env = std::getenv("COHSIM_BUILD_ID");
  return {{"version", COHSIM_VERSION},
          {"git_commit", COHSIM_GIT_COMMIT},
          {"git_dirty", COHSIM_GIT_DIRTY != 0},
          {"build_id", env != nullptr && *env != '\0' ? std::string(env) : std::string(COHSIM_BUILD_ID)}};
}

void add_provenance(nlohmann::json& doc) {
  doc["command"] = recorded_command();
  std::error_code ec;
  doc["cwd"] = std::filesystem::current_path(ec).string();  // where the command's relative paths start
  doc.update(build_info());
  doc["inputs"] = config::inputs_read();
}

}  // namespace cohsim::cli
