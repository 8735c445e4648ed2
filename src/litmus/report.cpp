// The text and JSON reports of litmus runs. The text follows litmus7's
// layout (herd's for the Observation line) so that it diffs against them:
//   Test MP Allowed
//   Histogram (3 states)
//   498   :>1:X0=0; 1:X2=0;
//   2     *>1:X0=1; 1:X2=0;        (* marks states satisfying the condition)
//   ...
//   Ok                            (Ok: the condition is validated, No: it is not)
//   Witnesses
//   Positive: 2, Negative: 998
//   Condition exists (1:X0=1 /\ 1:X2=0) is validated
//   Observation MP Sometimes 2 998
#include <fmt/format.h>

#include "cohsim/litmus/report.hpp"

namespace cohsim::litmus {

namespace {

std::string value_string(const Value& v, const std::vector<std::string>& names) {
  if (v.location < 0) return std::to_string(v.number);
  const std::string& n = names[static_cast<std::size_t>(v.location)];
  return v.number == 0 ? n : fmt::format("{}+{}", n, v.number);
}

std::string_view quantifier_kind(const std::string& condition) {
  if (condition.starts_with("~exists")) return "Forbidden";
  if (condition.starts_with("forall")) return "Required";
  return "Allowed";
}

bool validated(const Entry& e) {
  if (e.condition.starts_with("~exists")) return e.result.positive == 0;
  if (e.condition.starts_with("forall")) return e.result.negative == 0;
  return e.result.positive > 0;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

}  // namespace

std::string format_entry(const Entry& e) {
  if (e.status == Entry::Status::unsupported) return fmt::format("Test {} unsupported: {}\n\n", e.name, e.reason);
  if (e.status == Entry::Status::error) return fmt::format("Test {} error: {}\n\n", e.name, e.reason);
  const TestResult& r = e.result;
  std::string out = fmt::format("Test {} {}\nHistogram ({} states)\n", e.name, quantifier_kind(e.condition), r.outcomes.size());
  for (const Outcome& o : r.outcomes) {
    std::string state;
    for (std::size_t c = 0; c < o.state.size(); ++c) state += fmt::format("{}={}; ", e.cells[c], value_string(o.state[c], e.location_names));
    if (!state.empty()) state.pop_back();
    out += fmt::format("{:<6}{}>{}\n", o.count, o.satisfies ? '*' : ':', state);
  }
  const char* observation = r.positive == 0 ? "Never" : r.negative == 0 ? "Always" : "Sometimes";
  out += fmt::format("{}\nWitnesses\nPositive: {}, Negative: {}\n", validated(e) ? "Ok" : "No", r.positive, r.negative);
  out += fmt::format("Condition {} is {}validated\n", e.condition, validated(e) ? "" : "NOT ");
  out += fmt::format("Observation {} {} {} {}\n", e.name, observation, r.positive, r.negative);
  out += fmt::format(
      "Runs {} on {}, CPUs {} ({}), start offsets [0,{}), jitter [0,{}) per access (per thread [0,{}) to [0,{}) in "
      "half the runs), caches preloaded in {} of 8 runs\n",
      r.runs, r.platform, cpu_list(r.cpus), r.placed ? "--cpus" : "spread", sim::format_time(r.start_spread),
      sim::format_time(r.jitter), sim::format_time(r.jitter_low), sim::format_time(r.jitter_high), r.warm_runs_in_8);
  out += fmt::format("Condition witnessed: {}\n", r.witnessed ? "yes" : "no");
  if (e.kind) out += fmt::format("Verdict {} {} (kinds: {})\n", e.name, verdict_word(e.verdict), kind_word(*e.kind));
  return out + "\n";
}

Summary summarize(const std::vector<Entry>& entries) {
  Summary s;
  s.tests = static_cast<int>(entries.size());
  for (const Entry& e : entries) {
    if (e.status == Entry::Status::unsupported) ++s.unsupported;
    else if (e.status == Entry::Status::error) ++s.errors;
    else if (e.verdict == Verdict::ok) ++s.ok;
    else if (e.verdict == Verdict::unsound) ++s.unsound;
    else if (e.verdict == Verdict::not_seen) ++s.not_seen;
    else ++s.no_verdict;
    if (e.status == Entry::Status::ok && e.kind == Kind::allowed) {
      ++s.allowed_run;
      s.allowed_seen += e.result.witnessed;
    }
  }
  return s;
}

std::string format_summary(const std::vector<Entry>& entries) {
  const Summary s = summarize(entries);
  const int supported = s.supported();
  std::string out = fmt::format("Summary: tests {}, ok {}, UNSOUND {}, not-seen {}, unsupported {}, errors {}", s.tests,
                                s.ok, s.unsound, s.not_seen, s.unsupported, s.errors);
  if (s.no_verdict > 0) out += fmt::format(", no verdict {}", s.no_verdict);
  out += fmt::format("\nSupported: {} of {} ({:.1f} %)", supported, s.tests, s.tests > 0 ? 100.0 * supported / s.tests : 0.0);
  if (s.allowed_run > 0)
    out += fmt::format("; allowed outcomes witnessed: {} of {} ({:.1f} %)", s.allowed_seen, s.allowed_run,
                       100.0 * s.allowed_seen / s.allowed_run);
  return out + "\n";
}

nlohmann::json to_json(const std::vector<Entry>& entries) {
  nlohmann::json tests = nlohmann::json::array();
  for (const Entry& e : entries) {
    static constexpr const char* kStatus[] = {"ok", "unsupported", "error"};
    nlohmann::json t = {{"name", e.name}, {"file", e.file}, {"arch", e.arch},
                        {"runs", e.status == Entry::Status::ok ? e.result.runs : 0}, {"condition", e.condition},
                        {"witnessed", e.status == Entry::Status::ok && e.result.witnessed},
                        {"outcomes", nlohmann::json::array()}, {"status", kStatus[static_cast<int>(e.status)]}};
    t["verdict"] = e.verdict == Verdict::none ? nlohmann::json(nullptr) : nlohmann::json(verdict_word(e.verdict));
    t["kind"] = e.kind ? nlohmann::json(kind_word(*e.kind)) : nlohmann::json(nullptr);
    if (!e.reason.empty()) t["reason"] = e.reason;
    if (e.status == Entry::Status::ok) {
      for (const Outcome& o : e.result.outcomes) {
        nlohmann::json state = nlohmann::json::object();
        for (std::size_t c = 0; c < o.state.size(); ++c) {
          const Value& v = o.state[c];
          state[e.cells[c]] = v.location < 0 ? nlohmann::json(v.number) : nlohmann::json(value_string(v, e.location_names));
        }
        t["outcomes"].push_back({{"state", state}, {"count", o.count}, {"satisfies", o.satisfies}});
      }
      t["positive"] = e.result.positive;
      t["negative"] = e.result.negative;
      t["platform"] = e.result.platform;
      t["cpus"] = e.result.cpus;
    }
    tests.push_back(std::move(t));
  }
  return {{"tests", tests}};
}

}  // namespace cohsim::litmus
