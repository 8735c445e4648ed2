// A latency histogram of fixed memory: exact count and mean, percentiles to
// within 1/256 of the value. For statistics sampled on every call of a hot
// path (a clock read), where keeping each sample would grow with run length.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

#include "cohsim/sim/time.hpp"

namespace cohsim::sim {

/// Durations in log-linear bins: exact below 128 ps, then 128 bins per power of two.
class LatencyHistogram {
 public:
  /// Adds one duration.
  void add(Tick t) {
    ++bins_[bin_of(t)];
    min_ = std::min(min_, t);
    max_ = std::max(max_, t);
    ++count_;
    sum_ += static_cast<unsigned __int128>(t);
  }
  /// Number of durations added.
  std::uint64_t count() const { return count_; }
  /// Exact mean in nanoseconds; 0 when empty.
  double mean_ns() const {
    return count_ == 0 ? 0 : to_ns(static_cast<Tick>(sum_ / count_)) +
                                 static_cast<double>(sum_ % count_) / static_cast<double>(count_) / 1000.0;
  }
  /// The p-th percentile (0..100) by nearest rank, in nanoseconds, as the middle
  /// of its bin (within 1/256 of the sample) kept inside [min, max], so p0,
  /// p100 and a constant series are exact; 0 when empty.
  double percentile_ns(double p) const {
    if (count_ == 0) return 0;
    p = std::clamp(p, 0.0, 100.0);
    const auto rank = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(count_ - 1) + 0.5);
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < bins_.size(); ++b) {
      seen += bins_[b];
      if (seen > rank) return std::clamp(to_ns(low_of(b)) + to_ns(width_of(b) - 1) / 2, to_ns(min_), to_ns(max_));
    }
    return 0;  // not reached: the bins hold count_ samples
  }

 private:
  static constexpr unsigned kSubBits = 7;  // 128 bins per power of two
  static constexpr std::size_t kSub = std::size_t{1} << kSubBits;
  static constexpr std::size_t kBins = kSub * (64 - kSubBits + 1);

  static std::size_t bin_of(Tick t) {
    if (t < kSub) return static_cast<std::size_t>(t);
    const unsigned shift = static_cast<unsigned>(std::bit_width(t)) - kSubBits - 1;
    return kSub * (shift + 1) + static_cast<std::size_t>((t >> shift) - kSub);
  }
  static Tick low_of(std::size_t b) {
    if (b < kSub) return b;
    const std::size_t shift = b / kSub - 1;
    return static_cast<Tick>(kSub + b % kSub) << shift;
  }
  static Tick width_of(std::size_t b) { return b < kSub ? 1 : Tick{1} << (b / kSub - 1); }

  std::array<std::uint64_t, kBins> bins_{};
  std::uint64_t count_ = 0;
  Tick min_ = kNever, max_ = 0;
  unsigned __int128 sum_ = 0;
};

}  // namespace cohsim::sim
