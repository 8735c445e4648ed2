#include "cohsim/sim/time.hpp"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <string>

namespace cohsim::sim {
namespace {

/// Splits "2.6GHz" into 2.6 and "GHz"; nullopt when the number is malformed.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  std::string s(text);
  const char* begin = s.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v) || v < 0) return std::nullopt;
  std::size_t used = static_cast<std::size_t>(end - begin);
  std::string_view unit = text.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return std::make_pair(v, unit);
}

}  // namespace

std::optional<Tick> parse_time(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto [v, unit] = *parts;
  double scale;
  if (unit == "ps") scale = 1;
  else if (unit == "ns") scale = 1e3;
  else if (unit == "us") scale = 1e6;
  else if (unit == "ms") scale = 1e9;
  else if (unit == "s") scale = 1e12;
  else if (unit.empty() && v == 0) scale = 0;
  else return std::nullopt;
  double ps = v * scale;
  if (ps > 1e18) return std::nullopt;
  return static_cast<Tick>(std::llround(ps));
}

std::optional<double> parse_frequency(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto [v, unit] = *parts;
  if (unit == "Hz") return v;
  if (unit == "kHz") return v * 1e3;
  if (unit == "MHz") return v * 1e6;
  if (unit == "GHz") return v * 1e9;
  return std::nullopt;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto [v, unit] = *parts;
  double scale;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else return std::nullopt;
  double bytes = v * scale;
  if (bytes > 1e15 || bytes != std::floor(bytes)) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::string format_time(Tick t) {
  if (t < kNs) return fmt::format("{}ps", t);
  if (t < kUs) return fmt::format("{:.4g}ns", static_cast<double>(t) / kNs);
  if (t < kMs) return fmt::format("{:.4g}us", static_cast<double>(t) / kUs);
  if (t < kSec) return fmt::format("{:.4g}ms", static_cast<double>(t) / kMs);
  return fmt::format("{:.4g}s", static_cast<double>(t) / kSec);
}

}  // namespace cohsim::sim
