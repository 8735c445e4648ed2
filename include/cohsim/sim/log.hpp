// Named loggers per component ("fabric", "gic", "smmu", "hpet"...): `-v` turns
// debug output on for all of them; by default only warnings are shown.
//
// Every logger (and spdlog's default one) writes through one stderr sink that
// shows a message of a given shape (its text with the numbers masked) at most
// a few times: a command that runs many points (sensitivity, compare,
// validate) would otherwise repeat one warning per run. The rest are counted
// and `repeated_log_summary()` names them; at debug level nothing is held back.
#pragma once

#include <memory>
#include <spdlog/spdlog.h>
#include <string>

namespace cohsim {

/// The sink every cohsim logger writes to (stderr, repeats limited).
std::shared_ptr<spdlog::sinks::sink> log_sink();

/// The logger of one component, created on first use (writes to log_sink()).
std::shared_ptr<spdlog::logger> log(const std::string& component);

/// Routes spdlog's default logger through log_sink() too.
void route_default_logger();

/// One line per message shape held back ("N more like: <first text>"), empty
/// if none; resets the counts.
std::string repeated_log_summary();

}  // namespace cohsim
