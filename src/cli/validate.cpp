#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <sstream>

#include "cli.hpp"

namespace cohsim::cli {

namespace po = boost::program_options;
using nlohmann::json;

namespace {

struct RowResult {
  std::string id;
  std::string status;  // ok | MISS | skipped | error
  double predicted = NAN, measured = NAN, error_pct = NAN, tolerance = NAN;
  std::string unit, source, note;
};

std::string row_command(const json& row) {
  std::string cmd = "cohsim run " + row["scenario"].get<std::string>();
  if (row.contains("variant") && row["variant"].is_string()) cmd += " --variant " + row["variant"].get<std::string>();
  for (auto it = row["set"].begin(); it != row["set"].end(); ++it)
    cmd += fmt::format(" --set {}={}", it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  return cmd;
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
  std::string only, json_out, calibration = source_dir() + "/data/calibration.json";
  bool quiet = false;
  po::options_description d("cohsim validate [options]");
  d.add_options()("help,h", "this help")("only", po::value(&only), "run only rows whose id starts with PREFIX")(
      "json", po::value(&json_out), "write the table as JSON to FILE")(
      "calibration", po::value(&calibration), "calibration rows (default: data/calibration.json)")(
      "quiet,q", po::bool_switch(&quiet), "print only the summary line");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "Runs every calibration row whose scenario exists and prints predicted vs measured.\n"
                 "Exit 1 if any row misses its tolerance.\n\n"
              << d << "\n";
    return kOk;
  }
  json cal = config::load_json_file(calibration);
  if (!cal.contains("rows") || !cal["rows"].is_array()) throw config::ConfigError(calibration, "rows", "expected an array");
  const std::string root = source_dir();
  std::map<std::string, double> predicted;
  std::vector<RowResult> results;
  for (const auto& row : cal["rows"]) {
    RowResult rr;
    rr.id = row.at("id").get<std::string>();
    if (!only.empty() && rr.id.rfind(only, 0) != 0) continue;
    rr.measured = row.at("measured").get<double>();
    rr.tolerance = row.at("tolerance_pct").get<double>();
    rr.unit = row.value("unit", "");
    rr.source = row.value("source", "");
    if (row.contains("derived")) {
      std::istringstream ss(row["derived"].get<std::string>());
      std::string a, op, b;
      ss >> a >> op >> b;
      if (!predicted.count(a) || !predicted.count(b) || (op != "-" && op != "/")) {
        rr.status = "skipped";
        rr.note = "its parts were not run";
      } else {
        rr.predicted = op == "-" ? predicted[a] - predicted[b] : predicted[a] / predicted[b];
      }
    } else {
      std::string scen = row.at("scenario").get<std::string>();
      std::string path = std::filesystem::exists(scen) ? scen : root + "/" + scen;
      if (!std::filesystem::exists(path)) {
        rr.status = "skipped";
        rr.note = "scenario not present: " + scen;
      } else {
        std::vector<scenario::Override> sets;
        for (auto it = row["set"].begin(); it != row["set"].end(); ++it)
          sets.push_back({it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump()});
        std::string variant = row.contains("variant") && row["variant"].is_string() ? row["variant"].get<std::string>() : "";
        try {
          RunOutput out = run_scenario(path, variant, sets, std::nullopt, false);
          rr.predicted = out.results.get(row.at("metric").get<std::string>());
          predicted[rr.id] = rr.predicted;
        } catch (const std::exception& e) {
          rr.status = "error";
          rr.note = fmt::format("{} ({})", e.what(), row_command(row));
        }
      }
    }
    if (rr.status.empty()) {
      rr.error_pct = 100.0 * (rr.predicted - rr.measured) / rr.measured;
      rr.status = std::fabs(rr.error_pct) <= rr.tolerance ? "ok" : "MISS";
    }
    results.push_back(rr);
    if (!quiet) {
      if (std::isnan(rr.predicted))
        std::cout << fmt::format("{:<34} {:>8}  {}\n", rr.id, rr.status, rr.note);
      else
        std::cout << fmt::format("{:<34} {:>8}  predicted {:>10.4g}  measured {:>10.4g} {:<5} error {:>+7.1f}%  (tol {:g}%)\n",
                                 rr.id, rr.status, rr.predicted, rr.measured, rr.unit, rr.error_pct, rr.tolerance);
      std::cout.flush();
    }
  }
  int ok = 0, miss = 0, skipped = 0, errors = 0;
  json out = json::array();
  for (const auto& r : results) {
    ok += r.status == "ok";
    miss += r.status == "MISS";
    skipped += r.status == "skipped";
    errors += r.status == "error";
    json j = {{"id", r.id}, {"status", r.status}, {"measured", r.measured}, {"tolerance_pct", r.tolerance},
              {"unit", r.unit}, {"source", r.source}};
    if (!std::isnan(r.predicted)) {
      j["predicted"] = r.predicted;
      j["error_pct"] = r.error_pct;
    }
    if (!r.note.empty()) j["note"] = r.note;
    out.push_back(j);
  }
  std::cout << fmt::format("validate: {} ok, {} missed, {} errors, {} skipped\n", ok, miss, errors, skipped);
  if (!json_out.empty()) write_file_atomically(json_out, json{{"rows", out}}.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return (miss > 0 || errors > 0) ? kCheckFailed : kOk;
}

}  // namespace cohsim::cli
