#include "report_output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <vector>

#include "cli.hpp"
#include "provenance.hpp"

namespace cohsim::cli {

namespace fs = std::filesystem;

ReportStaging::ReportStaging(const std::string& dir) : dir_(dir) {
  check_report_dir(dir);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    throw config::ConfigError(dir, "", fmt::format("--report: cannot create the report directory ({})", ec.message()));
  std::string tmpl = (dir_ / ".report.tmp.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw config::ConfigError(dir, "", "--report: cannot write in the report directory (no permission?)");
  staging_ = tmpl;
}

void check_report_dir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::path p(dir);
  if (fs::exists(p, ec) && !fs::is_directory(p, ec))
    throw config::ConfigError(dir, "", "--report: this is a file, not a directory: name a directory for the report");
  while (!p.empty() && !fs::exists(p, ec)) p = p.has_parent_path() && p.parent_path() != p ? p.parent_path() : fs::path();
  if (p.empty()) p = ".";
  if (!fs::is_directory(p, ec) || ::access(p.c_str(), W_OK) != 0)
    throw config::ConfigError(dir, "", p == fs::path(dir) ? "--report: cannot write in this directory (no permission)"
                                                          : fmt::format("--report: cannot create the report directory in {}", p.string()));
}

ReportStaging::~ReportStaging() {
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void ReportStaging::commit() {
  std::set<std::string> written;
  for (const auto& entry : fs::directory_iterator(staging_)) {
    written.insert(entry.path().filename().string());
    fs::rename(entry.path(), dir_ / entry.path().filename());
  }
  // Files of an earlier report left beside this one would read as part of it: say so (they are not removed).
  std::vector<std::string> others;
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.is_regular_file() && !written.count(entry.path().filename().string()))
      others.push_back(entry.path().filename().string());
  if (others.empty()) return;
  std::sort(others.begin(), others.end());
  std::string names;
  for (std::size_t i = 0; i < others.size() && i < 5; ++i) names += (i ? ", " : "") + others[i];
  std::cerr << fmt::format("cohsim: {} also holds {} file(s) this report did not write ({}{}), from an earlier report "
                           "or another tool; they are left there: use a new directory to keep reports apart\n",
                           dir_.string(), others.size(), names, others.size() > 5 ? ", ..." : "");
}

bool run_report_script(const std::vector<std::string>& args) {
  std::string cmd = "/usr/bin/python3 " + shell_quoted(source_dir() + "/scripts/report.py");
  for (const auto& a : args) cmd += " " + shell_quoted(a);
  if (std::system(cmd.c_str()) == 0) return true;
  std::cerr << "cohsim: the report script failed (" << cmd << ")\n";
  return false;
}

}  // namespace cohsim::cli
