// Named loggers per component ("fabric", "gic", "smmu", "hpet"...): `-v` turns
// debug output on for all of them; by default only warnings are shown.
#pragma once

#include <memory>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <string>

namespace cohsim {

/// The logger of one component, created on first use (writes to stderr).
inline std::shared_ptr<spdlog::logger> log(const std::string& component) {
  auto l = spdlog::get(component);
  if (!l) {
    l = spdlog::stderr_color_mt(component);
    l->set_level(spdlog::get_level());
  }
  return l;
}

}  // namespace cohsim
