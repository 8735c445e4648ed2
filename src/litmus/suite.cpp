// Expanding PATH arguments and running one test file on its platform.
#include "cohsim/litmus/suite.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "cohsim/config/params.hpp"

namespace cohsim::litmus {

namespace fs = std::filesystem;

std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<std::string>& kinds_files,
                                      std::vector<std::string>* file_kinds) {
  std::vector<std::string> files;
  // The folder's kinds.txt judges the files just added (none there: "").
  auto note_kinds = [&](const fs::path& dir) {
    const fs::path k = (dir.empty() ? fs::path(".") : dir) / "kinds.txt";
    const bool there = fs::is_regular_file(k);
    if (there && std::find(kinds_files.begin(), kinds_files.end(), k.string()) == kinds_files.end())
      kinds_files.push_back(k.string());
    if (file_kinds) file_kinds->resize(files.size(), there ? k.string() : "");
  };
  for (const std::string& p : paths) {
    const fs::path path(p);
    if (fs::is_directory(path)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(path))
        if (e.is_regular_file() && e.path().extension() == ".litmus") found.push_back(e.path().string());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
      note_kinds(path);
    } else if (fs::is_regular_file(path) && path.filename().string().starts_with("@")) {
      std::ifstream in(path);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        line.erase(0, line.find_first_not_of(" \t\r"));
        line.erase(line.find_last_not_of(" \t\r") + 1);
        if (line.empty()) continue;
        const fs::path entry = path.parent_path() / line;
        if (!fs::is_regular_file(entry)) throw ParseError(p, n, line, "expected an existing test file (relative to the list)");
        files.push_back(entry.string());
      }
      note_kinds(path.parent_path());
    } else if (fs::is_regular_file(path)) {
      files.push_back(p);
      note_kinds(path.parent_path());
    } else {
      throw ParseError(p, 0, p, "expected an existing file, directory or @list");
    }
  }
  return files;
}

Entry run_file(const std::string& file, const SuiteOptions& options, std::map<std::string, scenario::PlatformDoc>& platforms) {
  Entry e;
  e.file = file;
  e.name = fs::path(file).stem().string();
  Test t;
  try {
    t = read_test(file);
  } catch (const ParseError& err) {
    e.status = Entry::Status::error;
    e.reason = err.what();
    return e;
  }
  e.name = t.name;
  e.arch = t.arch_word;
  e.condition = t.condition;
  // Some generated tests carry their file name as title ("NAME.litmus"); kinds list the bare name.
  std::string kinds_name = t.name;
  if (kinds_name.ends_with(".litmus") && !options.kinds.contains(kinds_name)) kinds_name.resize(kinds_name.size() - 7);
  if (auto k = options.kinds.find(kinds_name); k != options.kinds.end()) e.kind = k->second;
  if (!t.unsupported.empty()) {
    e.status = Entry::Status::unsupported;
    e.reason = t.unsupported;
    return e;
  }
  for (const Cell& c : t.cells) e.cells.push_back(c.name);
  for (const Location& l : t.locations) e.location_names.push_back(l.name);
  const std::string& platform =
      options.platform ? *options.platform : t.arch == Arch::aarch64 ? options.aarch64_platform : options.x86_platform;
  try {
    auto it = platforms.find(platform);
    if (it == platforms.end()) it = platforms.emplace(platform, scenario::load_platform(platform)).first;
    config::Registry registry;
    scenario::Machine machine(it->second, options.seed, registry);
    e.result = run_test(t, machine, options.runs, options.seed, options.cpus);
  } catch (const std::exception& err) {  // a platform that does not fit, a run that cannot finish
    e.status = Entry::Status::error;
    e.reason = err.what();
    return e;
  }
  if (e.kind) e.verdict = judge(*e.kind, e.result);
  return e;
}

}  // namespace cohsim::litmus
