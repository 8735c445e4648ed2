// What every `--report DIR` shares: the directory written all at once (files
// staged inside it, moved in on success, never half a report), and the one
// way to run the plotting script (scripts/report.py).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cohsim::cli {

/// A report directory being written: files go to a staging directory inside
/// it and move in on commit(); without commit() nothing of it is left.
class ReportStaging {
 public:
  /// Creates `dir` (and its parents) and the staging directory in it; bad input (a ConfigError, exit 2) when
  /// `dir` is a file or cannot be written.
  explicit ReportStaging(const std::string& dir);
  /// Removes the staging directory and whatever is still in it.
  ~ReportStaging();
  ReportStaging(const ReportStaging&) = delete;
  ReportStaging& operator=(const ReportStaging&) = delete;
  /// Where file `name` of the report is written before commit().
  std::string path(const std::string& name) const { return (staging_ / name).string(); }
  /// The staging directory (scripts write their files there).
  std::string staging_dir() const { return staging_.string(); }
  /// Moves every staged file into the report directory, each by rename (replacing an older one).
  void commit();

 private:
  std::filesystem::path dir_, staging_;
};

/// Bad input (a ConfigError, exit 2) when report directory `dir` could not be made or written: it is a
/// file, or its nearest existing ancestor is not a writable directory. An empty `dir` passes. Nothing is created.
void check_report_dir(const std::string& dir);

/// Runs scripts/report.py with `args` (each passed as one word); false when it failed (it said why on stderr).
bool run_report_script(const std::vector<std::string>& args);

}  // namespace cohsim::cli
