#include "validate_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "platform_pins.hpp"

namespace cohsim::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// The width report.md keeps to.
constexpr std::size_t kColumns = 80;
/// The widest row id that shares its line with the numbers; a longer one gets a line of its own.
constexpr std::size_t kIdColumn = 30;
/// The statuses in the order a platform's counts name them.
constexpr const char* kStatusOrder[] = {"ok", "known miss", "MISS", "NOW FITS", "MOVED", "ERROR"};

/// A platform file as the report shows it.
struct PlatformInfo {
  std::string name, shown_path;
  std::vector<PlatformParameter> parameters;
};

/// `file` relative to the working directory when it lies below it, else as an absolute path.
std::string shown_path(const std::string& file) {
  const fs::path absolute = fs::absolute(file).lexically_normal();
  const fs::path relative = absolute.lexically_relative(fs::current_path());
  return !relative.empty() && *relative.begin() != ".." ? relative.string() : absolute.string();
}

PlatformInfo load_platform_info(const std::string& file) {
  PlatformInfo info;
  info.shown_path = shown_path(file);
  const json doc = config::load_json_file(file);
  info.name = doc.contains("name") && doc["name"].is_string() ? doc["name"].get<std::string>() : info.shown_path;
  info.parameters = platform_parameters(file);
  return info;
}

/// `text` wrapped to kColumns: the first line starts with `first`, the others with `rest`.
std::string wrapped(const std::string& text, const std::string& first, const std::string& rest) {
  std::istringstream words(text);
  std::string out, line = first, word;
  bool empty_line = true;
  while (words >> word) {
    if (!empty_line && line.size() + 1 + word.size() > kColumns) {
      out += line + "\n";
      line = rest;
      empty_line = true;
    }
    line += (empty_line ? "" : " ") + word;
    empty_line = false;
  }
  return out + line + "\n";
}

/// The tolerance column: "3%", "8 ns", or a lower bound's ">=meas" / ">=-2%".
std::string tolerance_cell(const CalibrationRow& row) {
  if (!row.at_least) return tolerance_text(row);
  return row.tolerance() == 0 ? ">=meas" : ">=-" + tolerance_text(row);
}

std::string error_text(double error_pct) { return std::isnan(error_pct) ? "-" : fmt::format("{:+.1f}%", error_pct); }

/// The run behind a row, as one sentence: scenario, variant, settings and metric, or what it is derived from.
std::string run_text(const CalibrationRow& row) {
  if (row.op != 0) return fmt::format("derived: {} {} {}", row.part_a, row.op, row.part_b);
  std::string text = "run: " + row.scenario;
  if (!row.variant.empty()) text += ", variant " + row.variant;
  for (std::size_t i = 0; i < row.sets.size(); ++i)
    text += fmt::format("{}{}={}", i == 0 ? ", set " : " ", row.sets[i].key, row.sets[i].value);
  return text + "; metric " + row.metric;
}

/// The parameters of `platform` whose source names row `id`, as "path = value".
std::vector<std::string> pins_in(const PlatformInfo* platform, const std::string& id) {
  std::vector<std::string> pins;
  if (platform == nullptr) return pins;
  for (const auto& p : platform->parameters)
    if (std::find(p.rows.begin(), p.rows.end(), id) != p.rows.end()) pins.push_back(p.path + " = " + p.value);
  return pins;
}

/// The platforms of the report's rows, loaded once each, by file.
std::map<std::string, PlatformInfo> platforms_of(const ValidationReport& report) {
  std::map<std::string, PlatformInfo> out;
  for (const auto& r : report.rows)
    if (!r.platform_file.empty() && !out.count(r.platform_file))
      out.emplace(r.platform_file, load_platform_info(r.platform_file));
  return out;
}

/// The report's rows grouped by platform: platforms in the order of their first row, rows whose platform is
/// unknown last (file ""). Numbered from 1 in this order, as the plots key them.
std::vector<std::pair<std::string, std::vector<const ReportRow*>>> by_platform(const ValidationReport& report) {
  std::vector<std::pair<std::string, std::vector<const ReportRow*>>> groups;
  for (const auto& r : report.rows) {
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == r.platform_file; });
    if (group == groups.end()) group = groups.insert(groups.end(), {r.platform_file, {}});
    group->second.push_back(&r);
  }
  std::stable_partition(groups.begin(), groups.end(), [](const auto& g) { return !g.first.empty(); });
  return groups;
}

/// One line of a platform's table; an id wider than `id_width` goes on a line of its own above the numbers.
std::string table_line(const std::string& number, const std::string& id, std::size_t id_width,
                       const std::string& measured, const std::string& predicted, const std::string& error,
                       const std::string& tol, const std::string& status) {
  auto line = [&](const std::string& n, const std::string& shown_id) {
    return fmt::format("{:>2} {:<{}} {:>9} {:>9} {:>8} {:>6} {}\n", n, shown_id, id_width, measured, predicted, error,
                       tol, status);
  };
  if (id.size() <= id_width) return line(number, id);
  return fmt::format("{:>2} {}\n", number, id) + line("", "");
}

std::string row_details(int number, const ReportRow& r, const PlatformInfo* platform) {
  const CalibrationRow& row = *r.row;
  std::string out = wrapped(fmt::format("#{} {}: {}", number, row.id, r.verdict.status), "- ", "  ");
  out += wrapped(run_text(row), "  ", "    ");
  const auto pins = pins_in(platform, row.id);
  if (pins.empty())
    out += r.verdict.kind == "identity" ? "  pins nothing, but the fitted rows fix it between them: an identity\n"
                                        : "  pins nothing: a prediction\n";
  for (std::size_t i = 0; i < pins.size(); ++i) out += wrapped(pins[i], i == 0 ? "  pins " : "       ", "         ");
  if (!r.verdict.note.empty()) {
    const std::string label = r.verdict.status == "known miss" ? "why it misses: " : "";
    out += wrapped(label + r.verdict.note, "  ", "  ");
  }
  return out;
}

std::string platform_tail(const PlatformInfo& platform, const ValidationReport& report) {
  auto is_row = [&](const std::string& id) {
    return std::find(report.calibration_rows.begin(), report.calibration_rows.end(), id) !=
           report.calibration_rows.end();
  };
  std::vector<const PlatformParameter*> unpinned, stale;
  for (const auto& p : platform.parameters) {
    const bool pinned = std::any_of(p.rows.begin(), p.rows.end(), is_row);
    if (p.estimate && !pinned) unpinned.push_back(&p);
    if (std::any_of(p.rows.begin(), p.rows.end(), [&](const std::string& id) { return !is_row(id); }))
      stale.push_back(&p);
  }
  std::string out = wrapped(fmt::format("Estimated parameters of {} that no row of {} pins ({}):", platform.name,
                                        report.calibration_file, unpinned.size()),
                            "", "") +
                    "\n";
  for (const auto* p : unpinned)
    out += wrapped(fmt::format("{} = {}{}", p->path, p->value, p->range.empty() ? "" : " (range " + p->range + ")"),
                   "- ", "  ");
  if (unpinned.empty()) out += "- none\n";
  if (!stale.empty()) {
    out += "\n" +
           wrapped(fmt::format("Sources of {} naming rows {} does not have:", platform.name, report.calibration_file),
                   "", "") +
           "\n";
    for (const auto* p : stale) {
      std::string missing;
      for (const auto& id : p->rows)
        if (!is_row(id)) missing += (missing.empty() ? "" : ", ") + id;
      out += wrapped(fmt::format("{} = {} names {}", p->path, p->value, missing), "- ", "  ");
    }
  }
  return out;
}

}  // namespace

std::string row_platform_file(const std::string& id, const Predictor& predictor) {
  const CalibrationRow* row = predictor.find(id);
  for (int depth = 0; row != nullptr && row->op != 0 && depth < 64; ++depth) row = predictor.find(row->part_a);
  if (row == nullptr || row->op != 0) return {};
  try {
    return scenario::load_scenario(scenario_path(*row), row->variant, row->sets).platform.file;
  } catch (const std::exception&) {
    return {};  // the row is an ERROR, which says why
  }
}

std::string format_quantity(double value, const std::string& unit) {
  if (std::isnan(value)) return "-";
  // From 10^4 on (a 4-digit number needs none): 12.35k, 1.235M, 1.235G.
  static constexpr std::tuple<double, double, const char*> kScales[] = {
      {1e9, 1e9, "G"}, {1e6, 1e6, "M"}, {1e4, 1e3, "k"}};
  std::string prefix;
  for (const auto& [from, scale, name] : kScales)
    if (std::fabs(value) >= from) {
      value /= scale;
      prefix = name;
      break;
    }
  const std::string number = fmt::format("{:.4g}", value) + prefix;
  if (unit == "1/s") return number + "/s";
  if (unit == "%") return number + "%";
  if (unit == "ratio") return number + "x";
  return unit.empty() ? number : number + " " + unit;
}

std::string validation_report_markdown(const ValidationReport& report) {
  const auto platforms = platforms_of(report);
  std::string md = "# cohsim validate: predicted vs measured\n\n";
  md += wrapped(report.summary, "", "");
  md += wrapped(fmt::format("Exit status {}. Rows of {}{}: {} run.", report.exit_code, report.calibration_file,
                            report.selection.empty() ? "" : " (" + report.selection + ")", report.rows.size()),
                "", "");
  md += "\n" + wrapped(
                   "error = (predicted - measured) / measured. A row holds when |error| <= tol; a lower bound "
                   "(tol \">=-T%\", \">=meas\" for T = 0) holds when error >= -T%. Status: ok, MISS, known miss "
                   "(data/known-misses.json says why), NOW FITS, MOVED (more than 1 % from its expected "
                   "prediction), ERROR (no prediction). A row is fitted when the parameters it pins are listed, "
                   "an identity when the fitted rows fix it between them, else a prediction. report.html shows the parity plot and each row's error against its "
                   "tolerance; docs/validation.md explains them.",
                   "", "");
  int number = 0;
  for (const auto& [file, rows] : by_platform(report)) {
    const PlatformInfo* platform = file.empty() ? nullptr : &platforms.at(file);
    std::string counts;
    for (const char* status : kStatusOrder)
      if (const auto n =
              std::count_if(rows.begin(), rows.end(), [&](const auto* r) { return r->verdict.status == status; }))
        counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, status);
    md +=
        "\n" + wrapped(platform != nullptr ? fmt::format("## {} ({}): {}", platform->name, platform->shown_path, counts)
                                           : "## rows whose scenario cannot be loaded: " + counts,
                       "", "   ");
    std::size_t id_width = 3;
    for (const auto* r : rows) id_width = std::max(id_width, std::min(r->row->id.size(), kIdColumn));
    md += "\n```text\n" + table_line("#", "row", id_width, "measured", "predicted", "error", "tol", "status");
    for (const auto* r : rows)
      md += table_line(std::to_string(++number), r->row->id, id_width, format_quantity(r->row->measured, r->row->unit),
                       format_quantity(r->verdict.predicted, r->row->unit), error_text(r->verdict.error_pct),
                       tolerance_cell(*r->row), r->verdict.status);
    md += "```\n\n";
    number -= static_cast<int>(rows.size());
    for (const auto* r : rows) md += row_details(++number, *r, platform);
    if (platform != nullptr) md += "\n" + platform_tail(*platform, report);
  }
  return md;
}

json validation_report_json(const ValidationReport& report) {
  const auto platforms = platforms_of(report);
  json rows = json::array();
  for (const auto& [file, group] : by_platform(report))
    for (const ReportRow* row : group) {
      const ReportRow& r = *row;
      const PlatformInfo* platform = file.empty() ? nullptr : &platforms.at(file);
      json j = {{"id", r.row->id},
                {"platform", platform != nullptr ? platform->name : ""},
                {"status", r.verdict.status},
                {"measured", r.row->measured},
                {"bound", r.row->at_least ? "at_least" : ""},
                {"unit", r.row->unit},
                {"kind", r.verdict.kind},
                {"pins", pins_in(platform, r.row->id)},
                {"note", r.verdict.note}};
      add_tolerance(j, *r.row);
      j["predicted"] = std::isnan(r.verdict.predicted) ? json() : json(r.verdict.predicted);
      j["error_pct"] = std::isnan(r.verdict.error_pct) ? json() : json(r.verdict.error_pct);
      rows.push_back(std::move(j));
    }
  return {{"summary", report.summary}, {"exit_code", report.exit_code}, {"rows", rows}};
}

bool write_validation_report(ReportStaging& staging, const ValidationReport& report) {
  write_file_atomically(staging.path("report.md"), validation_report_markdown(report));
  write_file_atomically(staging.path("validate.json"),
                        validation_report_json(report).dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  if (!run_report_script({"--quiet", "--from-validate", staging.path("validate.json"), "--out", staging.staging_dir()}))
    return false;
  staging.commit();
  return true;
}

}  // namespace cohsim::cli
