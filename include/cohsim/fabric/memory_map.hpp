// Placement: every object a model touches is allocated on a NUMA node, so
// every line has a home. Addresses encode the node: node n homes
// [n << 40, (n + 1) << 40). Allocations carry a symbol for reports.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cohsim::fabric {

using Addr = std::uint64_t;
inline constexpr Addr kLineBytes = 64;
inline constexpr int kNodeShift = 40;
/// The 64-byte line holding `a`.
constexpr Addr line_of(Addr a) { return a & ~(kLineBytes - 1); }
/// True when the byte ranges [a, a + na) and [b, b + nb) share a byte.
constexpr bool overlaps(Addr a, int na, Addr b, int nb) {
  return a < b + static_cast<Addr>(nb) && b < a + static_cast<Addr>(na);
}
/// The low `size` bytes of a word (size 1, 2, 4 or 8).
constexpr std::uint64_t size_mask(int size) { return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1; }

/// The allocator of simulated physical memory, by node.
class MemoryMap {
 public:
  /// `nodes` NUMA nodes of `node_capacity` bytes each.
  MemoryMap(int nodes, std::uint64_t node_capacity);

  /// Allocates `bytes` on `node`, aligned to `align` (a power of two), named
  /// `symbol` in reports. Throws std::invalid_argument on a bad node or size.
  Addr alloc(int node, std::uint64_t bytes, std::uint64_t align, const std::string& symbol);
  /// Home node of an address.
  int home_node(Addr a) const { return static_cast<int>(a >> kNodeShift); }
  int nodes() const { return static_cast<int>(next_.size()); }
  /// "symbol+0x10" for an address inside an allocation, else the hex address.
  std::string describe(Addr a) const;
  /// The symbol of the allocation containing `a` ("" if none).
  std::string symbol_of(Addr a) const;

 private:
  struct Allocation {
    std::uint64_t bytes;
    std::string symbol;
  };
  std::uint64_t capacity_;
  std::vector<std::uint64_t> next_;
  std::map<Addr, Allocation> allocations_;
};

}  // namespace cohsim::fabric
