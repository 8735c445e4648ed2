// Private to the fabric's translation units: the state of caches, home
// lines and transactions, and small byte helpers. Not part of the API.
#pragma once

#include <cstring>
#include <optional>
#include <fmt/format.h>

#include "cohsim/fabric/fabric.hpp"

namespace cohsim::fabric {

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

// ---------------------------------------------------------------- state ---
struct Fabric::CacheLine {
  CacheState state = CacheState::I;
  LineData data{};
  HomeLine* home = nullptr;  ///< the line's home line (this entry is one of its holders)
  std::size_t holder_index = 0;  ///< its place in home->holders
  sim::Signal mshr;  ///< waiters for the request in flight
  sim::Signal lost;  ///< CPUs spinning on this line
  Tick alu_busy = 0; ///< an L3 agent: when its atomic unit can start the next atomic on this line
  Tick alu_done = 0; ///< an L3 agent: when the atomics started on this line have written it
  // Made at a miss and dropped at an eviction or invalidation: from the frame pool.
  static void* operator new(std::size_t n) { return sim::detail::FramePool::allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { sim::detail::FramePool::release(p, n); }
};

struct Fabric::PrivateCache {
  /// The entry for `line`, or nullptr (state I).
  CacheLine* find(Addr line) {
    auto* e = lines.find(line);
    return e != nullptr ? e->get() : nullptr;
  }
  const CacheLine* find(Addr line) const { return const_cast<PrivateCache*>(this)->find(line); }
  /// The entry for `line`, made (in state I) if there was none; true if made.
  std::pair<CacheLine*, bool> entry(Addr line) {
    auto [e, made] = lines.try_emplace(line);
    if (made) *e = std::make_unique<CacheLine>();
    return {e->get(), made};
  }
  void erase(Addr line) { lines.erase(line); }
  /// Entries are heap objects: home lines and transactions point to them.
  LineMap<std::unique_ptr<CacheLine>> lines;
  TagArray l1, l2;
};

struct Fabric::HomeLine {
  DirState state = DirState::I;
  int owner = -1;
  CoreSet sharers;
  /// Cores with an entry for the line in any state, and that entry (exact; for the checker).
  std::vector<std::pair<int, CacheLine*>> holders;
  /// The checker's tallies over `holders`, kept up to date as entries change
  /// (Fabric::change_entry), so that a check costs the same however many cores
  /// hold the line: copies in E or M, copies in S, and readable copies whose
  /// data differ from `golden`.
  struct Tally {
    int writable = 0, shared = 0, stale = 0;
    int readable() const { return writable + shared; }
    /// Adds (`sign` 1) or removes (-1) entry `e`'s part, against `golden` (nullptr: no write yet).
    void count(const CacheLine& e, const LineData* golden, int sign) {
      if (!detail::readable(e.state)) return;  // (transient and I count nowhere)
      if (detail::writable(e.state)) writable += sign;
      else shared += sign;
      if (golden != nullptr && e.data != *golden) stale += sign;
    }
    bool operator==(const Tally&) const = default;
  };
  Tally tally;
  /// The tallies counted afresh from the holders.
  Tally counted() const {
    Tally t;
    for (const auto& [core, entry] : holders) t.count(*entry, golden.get(), 1);
    return t;
  }
  void add_holder(int core, CacheLine& e) {
    e.home = this;
    e.holder_index = holders.size();
    holders.emplace_back(core, &e);
  }
  /// The last holder takes the dropped one's place.
  void drop_holder(const CacheLine& e) {
    const std::size_t i = e.holder_index;
    holders[i] = holders.back();
    holders[i].second->holder_index = i;
    holders.pop_back();
  }
  LineData mem{};
  /// With checking on, the latest value in the line's coherence order once
  /// it was written (before that, `mem` is): what every read must return.
  std::unique_ptr<LineData> golden;
  LineStats* stats = nullptr;  ///< its entry in Fabric::line_stats_, once made
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
  /// A request (`gets`: a GetS) must wait for the shared fills in flight
  /// unless it is one more of them.
  bool waits_for_fills(bool gets) const { return shared_fills > 0 && !shared_fill_possible(gets); }
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
  /// Served by its die's L3 after another request for the line reached the
  /// directory while it waited: the L3 looks its tags up again when it takes
  /// it (llc.tag_latency).
  bool die_lookup_again = false;
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

inline Fabric::HomeLine& Fabric::home_line(Addr line) {
  auto* h = homes_.find(line);
  return h != nullptr ? **h : new_home_line(line);
}

inline bool Fabric::holds_writable(int agent, Addr line) const {
  const CacheLine* cl = cache(agent).find(line);
  return cl != nullptr && detail::writable(cl->state);
}

/// Adds (`sign` 1) or removes (-1) an entry's part of its home line's tallies.
inline void Fabric::tally(const CacheLine& e, int sign) {
  e.home->tally.count(e, e.home->golden.get(), sign);
}

template <class F>
void Fabric::change_entry(CacheLine& e, F&& change) {
  tally(e, -1);
  change();
  tally(e, 1);
}

inline LineStats& Fabric::stats_of(HomeLine& h, Addr line) {
  if (h.stats == nullptr) h.stats = &line_stats_[line];  // (an unordered_map's entries stay put)
  return *h.stats;
}

inline LineData& Fabric::golden_of(HomeLine& h) {
  if (!h.golden) h.golden = std::make_unique<LineData>(h.mem);
  return *h.golden;
}


}  // namespace cohsim::fabric
