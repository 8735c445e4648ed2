// Private to the fabric's translation units: the state of caches, home
// lines and transactions, and small byte helpers. Not part of the API.
#pragma once

#include <cstring>
#include <optional>
#include <fmt/format.h>

#include "cohsim/fabric/fabric.hpp"

namespace cohsim::fabric {

// ---------------------------------------------------------------- state ---
struct Fabric::CacheLine {
  CacheState state = CacheState::I;
  LineData data{};
  sim::Signal mshr;  ///< waiters for the request in flight
  sim::Signal lost;  ///< CPUs spinning on this line
  Tick alu_busy = 0; ///< an L3 agent: when its atomics on this line are done
};

struct Fabric::PrivateCache {
  std::unordered_map<Addr, CacheLine> lines;
  TagArray l1, l2;
};

struct Fabric::HomeLine {
  DirState state = DirState::I;
  int owner = -1;
  CoreSet sharers;
  /// Cores with an entry for the line in any state, and that entry (exact; for the checker).
  std::vector<std::pair<int, CacheLine*>> holders;
  void drop_holder(int core) {
    for (auto& e : holders)
      if (e.first == core) {
        e = holders.back();
        holders.pop_back();
        return;
      }
  }
  LineData mem{};
  /// A request holds the home line: it is served one request at a time,
  /// except that a GetS of a line in S (a shared fill: data from the home,
  /// no owner, nobody invalidated) holds it only for its pipeline slot
  /// (`shared_fill_interval`).
  /// Shared fills may then overlap; any other request waits until every fill
  /// in flight has reached its requester, so no invalidation overtakes a fill.
  bool busy = false;
  int shared_fills = 0;
  /// The waiter the arbitration picked while it had to wait for fills: it
  /// goes next whatever arrives meanwhile (no re-pick, no overtaking).
  std::optional<std::uint64_t> picked_seq;
  /// A GetS that finds the line in S needs no exclusive hold.
  bool shared_fill_possible(bool gets) const { return gets && state == DirState::S; }
  struct Waiter {
    sim::Process* p;
    std::uint64_t id;
    Tick arrived;
    std::uint64_t seq;
    Tick distance;
    bool gets;
  };
  std::deque<Waiter> queue;  ///< in arrival order
};

struct Fabric::Txn {
  Fabric* fabric;
  Addr line;
  int core = -1;  ///< requesting core, -1 for a device
  int ep = 0;     ///< requester's endpoint
  int dir_ep = -1;  ///< where the directory step runs: the home's endpoint, or the requester die's L3
  DirEvent event = DirEvent::GetS;
  CacheEvent response = CacheEvent::Data;
  LineData data{};
  bool data_valid = false;
  Tick complete_at = 0;
  Tick home_done = 0;  ///< when the home may take the next request (non-core requesters)
  std::uint32_t actions = 0;
  // device write / far atomic
  Addr addr = 0;
  int size = 8;
  RmwOp op = RmwOp::swap;
  std::uint64_t operand = 0, compare = 0, result = 0;
};

namespace detail {
inline bool is_transient(CacheState s) { return s >= CacheState::IS_D; }
inline bool readable(CacheState s) { return s == CacheState::S || s == CacheState::E || s == CacheState::M; }
inline bool writable(CacheState s) { return s == CacheState::E || s == CacheState::M; }

inline std::uint64_t get_bytes(const LineData& d, Addr a, int size) {
  std::uint64_t v = 0;
  std::memcpy(&v, d.data() + (a & (kLineBytes - 1)), static_cast<std::size_t>(size));
  return v;
}
inline void put_bytes(LineData& d, Addr a, int size, std::uint64_t v) {
  std::memcpy(d.data() + (a & (kLineBytes - 1)), &v, static_cast<std::size_t>(size));
}
inline void check_access(Addr a, int size) {
  if ((size != 1 && size != 2 && size != 4 && size != 8) || (a & static_cast<Addr>(size - 1)) != 0)
    throw sim::SimError(fmt::format("unaligned or bad-sized access: {} bytes at {:#x}", size, a));
}
}  // namespace detail

}  // namespace cohsim::fabric
