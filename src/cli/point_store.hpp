// A folder of finished runs that a sensitivity study or a validation reads
// instead of running them, and the job list that fills it elsewhere (GNU
// parallel, a cluster): `cohsim sensitivity|validate ... --points DIR
// --emit-joblist FILE`, run the lines (`parallel < FILE`, or
// `scripts/sweep.py --joblist FILE --backend slurm`), then the same command
// with `--points DIR` collects.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli.hpp"

namespace cohsim::cli {

class PointStore {
 public:
  /// `dir` holds one DIR/<id>.json per run (cohsim run --json); with a `joblist` file, runs
  /// that are not there become job lines instead of running here.
  PointStore(std::string dir, std::string joblist);

  bool emitting() const { return !joblist_.empty(); }
  /// The run of `variant` with `overrides` and `seed` (nullopt: the scenario's) from the folder, when
  /// a complete one made by this build is there; else it runs here and is kept in the folder, or, when
  /// emitting, becomes a job line and `placeholder` stands in for it (its numbers are not used).
  RunOutput run(const std::string& scenario, const std::string& variant, const std::vector<scenario::Override>& overrides,
                std::optional<std::uint64_t> seed, const RunOutput& placeholder);
  /// Writes the job list (atomically); one line per run not in the folder.
  void write_joblist() const;
  /// What `command` (sensitivity, validate) says after writing the job list: how many, where, how to run them.
  std::string joblist_written(const std::string& command) const;
  /// What `command` says after a run with the folder: how many runs were read, how many ran here, how many stale.
  std::string summary(const std::string& command) const;

  int reused() const { return reused_; }
  int ran() const { return ran_; }
  int stale() const { return stale_; }
  std::size_t jobs() const { return jobs_.size(); }
  const std::string& dir() const { return dir_; }
  const std::string& joblist() const { return joblist_; }

 private:
  std::string dir_, joblist_;
  std::vector<std::string> jobs_;
  std::set<std::string> job_files_;
  int reused_ = 0, ran_ = 0, stale_ = 0;
};

}  // namespace cohsim::cli
