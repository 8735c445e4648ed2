#include "cohsim/fabric/memory_map.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace cohsim::fabric {

MemoryMap::MemoryMap(int nodes, std::uint64_t node_capacity)
    : capacity_(node_capacity), next_(static_cast<std::size_t>(nodes), kLineBytes) {}

Addr MemoryMap::alloc(int node, std::uint64_t bytes, std::uint64_t align, const std::string& symbol) {
  if (node < 0 || node >= nodes())
    throw std::invalid_argument(fmt::format("alloc '{}': node {} does not exist (nodes 0-{})", symbol, node, nodes() - 1));
  if (bytes == 0 || align == 0 || (align & (align - 1)) != 0)
    throw std::invalid_argument(fmt::format("alloc '{}': bad size {} or alignment {}", symbol, bytes, align));
  std::uint64_t& next = next_[static_cast<std::size_t>(node)];
  std::uint64_t offset = (next + align - 1) & ~(align - 1);
  if (offset + bytes > capacity_)
    throw std::invalid_argument(fmt::format("alloc '{}': node {} is out of memory", symbol, node));
  next = offset + bytes;
  Addr a = (static_cast<Addr>(node) << kNodeShift) + offset;
  allocations_[a] = Allocation{bytes, symbol};
  return a;
}

std::string MemoryMap::symbol_of(Addr a) const {
  auto it = allocations_.upper_bound(a);
  if (it == allocations_.begin()) return {};
  --it;
  if (a >= it->first + it->second.bytes) return {};
  return it->second.symbol;
}

std::string MemoryMap::describe(Addr a) const {
  auto it = allocations_.upper_bound(a);
  if (it != allocations_.begin()) {
    --it;
    if (a < it->first + it->second.bytes) {
      Addr off = a - it->first;
      return off == 0 ? it->second.symbol : fmt::format("{}+{:#x}", it->second.symbol, off);
    }
  }
  return fmt::format("{:#x}", a);
}

}  // namespace cohsim::fabric
