#include "cohsim/fabric/protocol.hpp"

#include <stdexcept>
#include <string>

namespace cohsim::fabric {

using CS = CacheState;
using CE = CacheEvent;
using DS = DirState;
using DE = DirEvent;

// clang-format off
const std::array<CacheRow, 40> kCacheRows = {{
  // stable states: accesses from the core
  {.state = CS::I, .event = CE::Load,  .next = CS::IS_D, .actions = ca_issue_gets},
  {.state = CS::I, .event = CE::Store, .next = CS::IM_D, .actions = ca_issue_getm},
  {.state = CS::S, .event = CE::Load,  .next = CS::S,    .actions = ca_hit},
  {.state = CS::S, .event = CE::Store, .next = CS::SM_D, .actions = ca_issue_upgrade},
  {.state = CS::E, .event = CE::Load,  .next = CS::E,    .actions = ca_hit},
  {.state = CS::E, .event = CE::Store, .next = CS::M,    .actions = ca_hit},
  {.state = CS::M, .event = CE::Load,  .next = CS::M,    .actions = ca_hit},
  {.state = CS::M, .event = CE::Store, .next = CS::M,    .actions = ca_hit},
  // capacity evictions: S is dropped silently, E and M tell the home
  {.state = CS::S, .event = CE::Replacement, .next = CS::I,    .actions = ca_notify | ca_drop},
  {.state = CS::E, .event = CE::Replacement, .next = CS::EI_A, .actions = ca_notify | ca_send_put},
  {.state = CS::M, .event = CE::Replacement, .next = CS::MI_A, .actions = ca_notify | ca_send_put},
  // invalidations (a silently evicted S is still listed: ack from I)
  {.state = CS::I,    .event = CE::Inv, .next = CS::I,    .actions = ca_send_inv_ack},
  {.state = CS::S,    .event = CE::Inv, .next = CS::I,    .actions = ca_send_inv_ack | ca_notify | ca_drop},
  {.state = CS::IS_D, .event = CE::Inv, .next = CS::IS_D, .actions = ca_send_inv_ack},
  {.state = CS::IM_D, .event = CE::Inv, .next = CS::IM_D, .actions = ca_send_inv_ack},
  {.state = CS::SM_D, .event = CE::Inv, .next = CS::IM_D, .actions = ca_send_inv_ack | ca_notify},  // upgrade lost the race
  {.state = CS::II_A, .event = CE::Inv, .next = CS::II_A, .actions = ca_send_inv_ack},
  // forwards to the owner
  {.state = CS::E, .event = CE::FwdGetS,     .next = CS::S, .actions = ca_data_to_requester},
  {.state = CS::E, .event = CE::FwdGetM,     .next = CS::I, .actions = ca_data_to_requester | ca_notify | ca_drop},
  {.state = CS::E, .event = CE::FwdReadOnce, .next = CS::E, .actions = ca_data_to_device},
  {.state = CS::E, .event = CE::FwdInv,      .next = CS::I, .actions = ca_data_to_home | ca_notify | ca_drop},
  {.state = CS::M, .event = CE::FwdGetS,     .next = CS::S, .actions = ca_data_to_requester | ca_data_to_home},
  {.state = CS::M, .event = CE::FwdGetM,     .next = CS::I, .actions = ca_data_to_requester | ca_notify | ca_drop},
  {.state = CS::M, .event = CE::FwdReadOnce, .next = CS::M, .actions = ca_data_to_device},
  {.state = CS::M, .event = CE::FwdInv,      .next = CS::I, .actions = ca_data_to_home | ca_notify | ca_drop},
  // forwards racing an eviction: answer from the writeback buffer
  {.state = CS::MI_A, .event = CE::FwdGetS,     .next = CS::II_A, .actions = ca_data_to_requester | ca_data_to_home},
  {.state = CS::MI_A, .event = CE::FwdGetM,     .next = CS::II_A, .actions = ca_data_to_requester},
  {.state = CS::MI_A, .event = CE::FwdReadOnce, .next = CS::MI_A, .actions = ca_data_to_device},
  {.state = CS::MI_A, .event = CE::FwdInv,      .next = CS::II_A, .actions = ca_data_to_home},
  {.state = CS::EI_A, .event = CE::FwdGetS,     .next = CS::II_A, .actions = ca_data_to_requester},
  {.state = CS::EI_A, .event = CE::FwdGetM,     .next = CS::II_A, .actions = ca_data_to_requester},
  {.state = CS::EI_A, .event = CE::FwdReadOnce, .next = CS::EI_A, .actions = ca_data_to_device},
  {.state = CS::EI_A, .event = CE::FwdInv,      .next = CS::II_A, .actions = ca_data_to_home},
  // responses
  {.state = CS::IS_D, .event = CE::Data,     .next = CS::S, .actions = ca_fill | ca_complete},
  {.state = CS::IS_D, .event = CE::DataExcl, .next = CS::E, .actions = ca_fill | ca_complete},
  {.state = CS::IM_D, .event = CE::DataExcl, .next = CS::M, .actions = ca_fill | ca_complete},
  {.state = CS::SM_D, .event = CE::DataExcl, .next = CS::M, .actions = ca_fill | ca_complete},
  {.state = CS::MI_A, .event = CE::PutAck,   .next = CS::I, .actions = ca_complete | ca_drop},
  {.state = CS::EI_A, .event = CE::PutAck,   .next = CS::I, .actions = ca_complete | ca_drop},
  {.state = CS::II_A, .event = CE::PutAck,   .next = CS::I, .actions = ca_complete | ca_drop},
}};

const std::array<DirRow, 21> kDirRows = {{
  {.state = DS::I,  .event = DE::GetS,    .next = DS::EM, .actions = da_read_memory | da_send_data_excl | da_set_owner},
  {.state = DS::I,  .event = DE::GetM,    .next = DS::EM, .actions = da_read_memory | da_send_data_excl | da_set_owner},
  {.state = DS::S,  .event = DE::GetS,    .next = DS::S,  .actions = da_read_memory | da_send_data | da_add_sharer},
  {.state = DS::S,  .event = DE::GetM,    .next = DS::EM, .actions = da_inv_sharers | da_read_memory | da_send_data_excl | da_clear_sharers | da_set_owner},
  {.state = DS::S,  .event = DE::Upgrade, .next = DS::EM, .actions = da_inv_sharers | da_send_grant | da_clear_sharers | da_set_owner},
  {.state = DS::EM, .event = DE::GetS,    .next = DS::S,  .actions = da_fwd_gets | da_owner_to_sharer | da_add_sharer | da_clear_owner},
  {.state = DS::EM, .event = DE::GetM,    .next = DS::EM, .actions = da_fwd_getm | da_set_owner},
  {.state = DS::EM, .event = DE::PutE,    .next = DS::I,  .actions = da_send_put_ack | da_clear_owner},
  {.state = DS::EM, .event = DE::PutM,    .next = DS::I,  .actions = da_write_back | da_send_put_ack | da_clear_owner},
  {.state = DS::I,  .event = DE::PutStale, .next = DS::I,  .actions = da_send_put_ack},
  {.state = DS::S,  .event = DE::PutStale, .next = DS::S,  .actions = da_send_put_ack},
  {.state = DS::EM, .event = DE::PutStale, .next = DS::EM, .actions = da_send_put_ack},
  {.state = DS::I,  .event = DE::DevRead, .next = DS::I,  .actions = da_read_memory | da_send_data_device},
  {.state = DS::S,  .event = DE::DevRead, .next = DS::S,  .actions = da_read_memory | da_send_data_device},
  {.state = DS::EM, .event = DE::DevRead, .next = DS::EM, .actions = da_fwd_read_once | da_send_data_device},
  {.state = DS::I,  .event = DE::DevWrite, .next = DS::I, .actions = da_write_memory},
  {.state = DS::S,  .event = DE::DevWrite, .next = DS::I, .actions = da_inv_sharers_home | da_clear_sharers | da_write_memory},
  {.state = DS::EM, .event = DE::DevWrite, .next = DS::I, .actions = da_fwd_inv | da_clear_owner | da_write_memory},
  {.state = DS::I,  .event = DE::AtomicFar, .next = DS::I, .actions = da_read_memory | da_atomic_at_home},
  {.state = DS::S,  .event = DE::AtomicFar, .next = DS::I, .actions = da_inv_sharers_home | da_clear_sharers | da_read_memory | da_atomic_at_home},
  {.state = DS::EM, .event = DE::AtomicFar, .next = DS::I, .actions = da_fwd_inv | da_clear_owner | da_atomic_at_home},
}};
// clang-format on

std::string_view name(CacheState s) {
  static constexpr std::array<std::string_view, 10> n{"I", "S", "E", "M", "IS_D", "IM_D", "SM_D", "MI_A", "EI_A", "II_A"};
  return n[static_cast<std::size_t>(s)];
}
std::string_view name(CacheEvent e) {
  static constexpr std::array<std::string_view, 11> n{"Load", "Store", "Replacement", "FwdGetS", "FwdGetM", "FwdReadOnce",
                                                      "FwdInv", "Inv", "Data", "DataExcl", "PutAck"};
  return n[static_cast<std::size_t>(e)];
}
std::string_view name(DirState s) {
  static constexpr std::array<std::string_view, 3> n{"I", "S", "EM"};
  return n[static_cast<std::size_t>(s)];
}
std::string_view name(DirEvent e) {
  static constexpr std::array<std::string_view, 9> n{"GetS", "GetM", "Upgrade", "PutE", "PutM", "PutStale", "DevRead", "DevWrite", "AtomicFar"};
  return n[static_cast<std::size_t>(e)];
}

}  // namespace cohsim::fabric
