// The MESI protocol as data: (state, event) -> (next state, named actions)
// for the private caches and for the home directory, with transient states
// for requests in flight. Tables are checked at start-up (no duplicate row);
// an unhandled pair is a loud error naming time, agent, address, state, event.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cohsim::fabric {

// ---------------------------------------------------------------- caches ---
enum class CacheState : std::uint8_t {
  I, S, E, M,
  IS_D,  ///< GetS sent, waiting for data
  IM_D,  ///< GetM sent, waiting for data and acks
  SM_D,  ///< Upgrade sent from S, waiting for the grant
  MI_A,  ///< dirty eviction sent, waiting for PutAck (data in the writeback buffer)
  EI_A,  ///< clean exclusive eviction sent, waiting for PutAck
  II_A,  ///< eviction raced a forward: data already given away, waiting for PutAck
  count
};
enum class CacheEvent : std::uint8_t {
  Load, Store, Replacement,      // from the core / capacity
  FwdGetS, FwdGetM, FwdReadOnce, FwdInv, Inv,  // from the home
  Data, DataExcl, PutAck,        // responses
  count
};

/// Named actions of a cache row, executed in declaration order.
enum CacheAction : std::uint32_t {
  ca_none = 0,
  ca_hit = 1u << 0,            ///< serve the access from this cache
  ca_issue_gets = 1u << 1,     ///< send GetS to the home
  ca_issue_getm = 1u << 2,     ///< send GetM to the home
  ca_issue_upgrade = 1u << 3,  ///< send Upgrade to the home
  ca_send_put = 1u << 4,       ///< send PutE/PutM (with data if dirty) to the home
  ca_send_inv_ack = 1u << 5,   ///< acknowledge an invalidation to the requester
  ca_data_to_requester = 1u << 6,  ///< forward the line to the requesting cache
  ca_data_to_home = 1u << 7,   ///< write the line back to the home
  ca_data_to_device = 1u << 8, ///< supply the line to a non-caching agent
  ca_fill = 1u << 9,           ///< install the data that arrived
  ca_complete = 1u << 10,      ///< the request in flight is done: wake waiters
  ca_drop = 1u << 11,          ///< remove the line from this cache
  ca_notify = 1u << 12,        ///< wake CPUs spinning on this line (monitor cleared)
};

struct CacheRow {
  CacheState state;
  CacheEvent event;
  CacheState next;
  std::uint32_t actions;
};

// ------------------------------------------------------------- directory ---
enum class DirState : std::uint8_t {
  I,   ///< no cached copy
  S,   ///< read-only copies at the sharers
  EM,  ///< one owner in E or M
  count
};
enum class DirEvent : std::uint8_t {
  GetS, GetM, Upgrade, PutE, PutM, PutStale, DevRead, DevWrite, AtomicFar,
  count
};

/// Named actions of a directory row, executed in declaration order.
enum DirAction : std::uint32_t {
  da_none = 0,
  da_inv_sharers = 1u << 0,        ///< invalidate other sharers; acks to the requester
  da_inv_sharers_home = 1u << 1,   ///< invalidate all sharers; acks to the home
  da_fwd_gets = 1u << 2,           ///< owner sends data to requester and home, keeps S
  da_fwd_getm = 1u << 3,           ///< owner sends data to requester, invalidates
  da_fwd_read_once = 1u << 4,      ///< owner sends data to a device, keeps its state
  da_fwd_inv = 1u << 5,            ///< owner writes back and invalidates
  da_read_memory = 1u << 6,        ///< read the line from the LLC or DRAM
  da_write_back = 1u << 7,         ///< take the evicted data into memory
  da_send_data = 1u << 8,          ///< data to the requester (shared)
  da_send_data_excl = 1u << 9,     ///< data to the requester (exclusive)
  da_send_grant = 1u << 10,        ///< upgrade grant (no data) to the requester
  da_send_data_device = 1u << 11,  ///< data to a device
  da_write_memory = 1u << 12,      ///< a device's write into memory
  da_atomic_at_home = 1u << 13,    ///< perform a far atomic at the home, reply with the old value
  da_send_put_ack = 1u << 14,      ///< acknowledge an eviction
  da_owner_to_sharer = 1u << 15,   ///< the old owner joins the sharers
  da_add_sharer = 1u << 16,        ///< the requester joins the sharers
  da_clear_sharers = 1u << 17,
  da_set_owner = 1u << 18,         ///< the requester becomes the owner
  da_clear_owner = 1u << 19,
};

struct DirRow {
  DirState state;
  DirEvent event;
  DirState next;
  std::uint32_t actions;
};

std::string_view name(CacheState s);
std::string_view name(CacheEvent e);
std::string_view name(DirState s);
std::string_view name(DirEvent e);

/// A protocol table indexed by (state, event), built from rows; rejects
/// duplicates and counts each transition.
template <class Row, class State, class Event>
class ProtocolTable {
 public:
  static constexpr std::size_t kStates = static_cast<std::size_t>(State::count);
  static constexpr std::size_t kEvents = static_cast<std::size_t>(Event::count);
  /// Builds from rows; throws std::logic_error on a duplicate row.
  template <std::size_t N>
  explicit ProtocolTable(const std::array<Row, N>& rows) {
    for (const Row& r : rows) add(r);
  }
  /// Adds one row; throws std::logic_error if (state, event) is already defined.
  void add(const Row& r);
  /// The row for (s, e), or nullptr when the pair is unhandled.
  const Row* find(State s, Event e) const {
    return slots_[index(s, e)].defined ? &slots_[index(s, e)].row : nullptr;
  }
  void count(State s, Event e) { ++slots_[index(s, e)].taken; }
  std::uint64_t taken(State s, Event e) const { return slots_[index(s, e)].taken; }
  std::size_t defined_rows() const { return defined_; }

 private:
  static std::size_t index(State s, Event e) {
    return static_cast<std::size_t>(s) * kEvents + static_cast<std::size_t>(e);
  }
  struct Slot {
    Row row{};
    bool defined = false;
    std::uint64_t taken = 0;
  };
  std::array<Slot, kStates * kEvents> slots_{};
  std::size_t defined_ = 0;
};

template <class Row, class State, class Event>
void ProtocolTable<Row, State, Event>::add(const Row& r) {
  Slot& s = slots_[index(r.state, r.event)];
  if (s.defined)
    throw std::logic_error("duplicate protocol row (" + std::string(name(r.state)) + ", " +
                           std::string(name(r.event)) + ")");
  s.row = r;
  s.defined = true;
  ++defined_;
}

using CacheTable = ProtocolTable<CacheRow, CacheState, CacheEvent>;
using DirTable = ProtocolTable<DirRow, DirState, DirEvent>;

/// The MESI rows of cohsim's private caches.
extern const std::array<CacheRow, 40> kCacheRows;
/// The MESI rows of cohsim's home directory.
extern const std::array<DirRow, 21> kDirRows;

}  // namespace cohsim::fabric
