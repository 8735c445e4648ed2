// What a results document records so that it can be traced and rerun
// (docs/reports.md, "Provenance").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cohsim::cli {

/// `word` as one POSIX shell word (quoted only when it needs to be).
std::string shell_quoted(const std::string& word);
/// Remembers the process's command line (main_entry does it) for add_provenance.
void record_command_line(int argc, char** argv);
/// What identifies this binary: version, git_commit, git_dirty and build_id
/// (COHSIM_BUILD_ID in the environment replaces the built-in id).
nlohmann::json build_info();
/// Adds to a results document: command (the command line, shell-quoted), the
/// build_info() keys and inputs (each file read so far -> its SHA-256).
void add_provenance(nlohmann::json& doc);
/// cohsim rerun RESULTS.json (src/cli/rerun.cpp).
int cmd_rerun(const std::vector<std::string>& args);

}  // namespace cohsim::cli
