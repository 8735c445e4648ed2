// Small statistics helpers for workloads (median, percentiles, mean).
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

namespace cohsim::models {

/// The p-th percentile (0..100) by nearest rank; 0 for an empty set.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(rank, v.size() - 1)];
}
inline double median(const std::vector<double>& v) { return percentile(v, 50); }
inline double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace cohsim::models
