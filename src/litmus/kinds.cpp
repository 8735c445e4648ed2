// herd's kinds files and the verdict of a run against them.
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "cohsim/litmus/report.hpp"

namespace cohsim::litmus {

Kinds read_kinds(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ParseError(path, 0, path, "expected a readable kinds file");
  Kinds kinds;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string name, word;
    if (!(words >> name)) continue;
    if (!(words >> word)) throw ParseError(path, n, name, "expected 'NAME KIND' (Allowed, Forbidden or Required)");
    Kind k;
    if (word == "Allowed" || word == "Allow") k = Kind::allowed;
    else if (word == "Forbidden" || word == "Forbid") k = Kind::forbidden;
    else if (word == "Required" || word == "Require") k = Kind::required;
    else throw ParseError(path, n, word, "expected Allowed, Forbidden or Required (or Allow, Forbid, Require)");
    if (!kinds.emplace(name, k).second) throw ParseError(path, n, name, "expected each test listed once");
  }
  return kinds;
}

Verdict judge(Kind kind, const TestResult& r) {
  switch (kind) {
    case Kind::allowed: return r.witnessed ? Verdict::ok : Verdict::not_seen;
    case Kind::forbidden: return r.positive > 0 ? Verdict::unsound : Verdict::ok;
    case Kind::required: return r.negative > 0 ? Verdict::unsound : Verdict::ok;
  }
  return Verdict::none;
}

std::string_view verdict_word(Verdict v) {
  switch (v) {
    case Verdict::none: return "";
    case Verdict::ok: return "ok";
    case Verdict::unsound: return "UNSOUND";
    case Verdict::not_seen: return "not-seen";
  }
  return "";
}

std::string_view kind_word(Kind k) {
  return k == Kind::allowed ? "Allowed" : k == Kind::forbidden ? "Forbidden" : "Required";
}

}  // namespace cohsim::litmus
