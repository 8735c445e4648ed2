// Simulated time: an integer count of picoseconds, and unit conversion.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cohsim::sim {

/// Simulated time in picoseconds. Never a floating-point number.
using Tick = std::uint64_t;

inline constexpr Tick kPs = 1;
inline constexpr Tick kNs = 1000;
inline constexpr Tick kUs = 1000 * kNs;
inline constexpr Tick kMs = 1000 * kUs;
inline constexpr Tick kSec = 1000 * kMs;
inline constexpr Tick kNever = ~Tick{0};

/// Picoseconds from nanoseconds given as a double (rounded to nearest).
constexpr Tick from_ns(double ns) { return static_cast<Tick>(ns * 1000.0 + 0.5); }
/// Nanoseconds as a double, for reporting only.
constexpr double to_ns(Tick t) { return static_cast<double>(t) / 1000.0; }

/// Parses "34ns", "1.5us", "2ms", "120ps", "0" into picoseconds; nullopt on
/// anything else (no unit, unknown unit, negative, overflow).
std::optional<Tick> parse_time(std::string_view text);
/// Parses "2.6GHz", "14.31818MHz", "1000Hz" into hertz; nullopt on error.
std::optional<double> parse_frequency(std::string_view text);
/// Parses "64KiB", "24MiB", "1GiB", "64B", "512" into bytes; nullopt on error.
std::optional<std::uint64_t> parse_size(std::string_view text);
/// Formats a tick count with a readable unit ("34.5ns", "1.319us").
std::string format_time(Tick t);

}  // namespace cohsim::sim
