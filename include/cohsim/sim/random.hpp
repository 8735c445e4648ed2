// Named sources of randomness. The run's seed reaches a model only through a
// named stream, so that turning a source off makes the seed irrelevant to it.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

namespace cohsim::sim {

/// A deterministic generator for one named source of variation.
class RandomStream {
 public:
  RandomStream(std::uint64_t seed, std::string_view name) : gen_(mix(seed, name)) {}
  /// Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : gen_() % n; }
  /// Uniform real in [0, 1).
  double unit() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  std::uint64_t next() { return gen_(); }

 private:
  static std::uint64_t mix(std::uint64_t seed, std::string_view name) {
    std::uint64_t h = 0xcbf29ce484222325ull ^ seed;  // FNV-1a over the name
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
  }
  std::mt19937_64 gen_;
};

}  // namespace cohsim::sim
