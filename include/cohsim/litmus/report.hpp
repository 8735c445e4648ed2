// Judging and reporting litmus results: herd's kinds files (the
// architecture's verdict per test), the verdict of a run against them, the
// herd/litmus7-style text block per test, and the JSON document.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cohsim/litmus/runner.hpp"
#include "cohsim/litmus/test.hpp"

namespace cohsim::litmus {

/// What the architecture says of a test's condition (herd's kinds words).
enum class Kind { allowed, forbidden, required };
/// Test name -> kind, as a kinds file lists them (`NAME Allowed|Forbidden|Required`,
/// or Allow / Forbid / Require; `#` comments).
using Kinds = std::map<std::string, Kind>;
/// Reads a kinds file (throws ParseError naming file, line and token).
Kinds read_kinds(const std::string& path);

/// A run judged against its kind. none: the test has no kind.
enum class Verdict { none, ok, unsound, not_seen };
/// ok, UNSOUND (a forbidden outcome seen, or a required one violated) or
/// not-seen (an allowed outcome never seen).
Verdict judge(Kind kind, const TestResult& r);
/// "ok", "UNSOUND", "not-seen" ("" for none).
std::string_view verdict_word(Verdict v);
/// "Allowed", "Forbidden", "Required".
std::string_view kind_word(Kind k);

/// One test of a litmus command: parsed, run and judged, or why not.
struct Entry {
  std::string file;
  std::string name;            ///< from the test (the file's stem when it could not be parsed)
  std::string arch;
  enum class Status { ok, unsupported, error } status = Status::ok;
  std::string reason;          ///< unsupported: what; error: the message
  std::string condition;
  std::vector<std::string> cells;  ///< the state's cell names
  std::vector<std::string> location_names;
  TestResult result;
  std::optional<Kind> kind;
  Verdict verdict = Verdict::none;
};

/// The herd/litmus7-style block of one entry (histogram, Positive/Negative,
/// Condition, Observation), with the run's placement and the verdict.
std::string format_entry(const Entry& e);
/// Counts over a list of entries (what the summary line prints).
struct Summary {
  int tests = 0, ok = 0, unsound = 0, not_seen = 0, unsupported = 0, errors = 0, no_verdict = 0;
  int allowed_run = 0;   ///< tests run whose kind is Allowed
  int allowed_seen = 0;  ///< of those, witnessed
  /// Tests that ran: neither unsupported nor an error (a file that failed to parse is an error).
  int supported() const { return tests - unsupported - errors; }
};
/// Counts the entries by verdict and status.
Summary summarize(const std::vector<Entry>& entries);
/// The summary line over all entries.
std::string format_summary(const std::vector<Entry>& entries);
/// {"tests": [...]} with one object per entry.
nlohmann::json to_json(const std::vector<Entry>& entries);

}  // namespace cohsim::litmus
