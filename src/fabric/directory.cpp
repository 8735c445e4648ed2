// The directory's organisation: how the home records a line's sharers and so
// how a write's invalidations fan out.
//
// Exact (presence per caching agent): the home sends one invalidation to
// each sharer and each sharer acknowledges to whoever waits (the requester,
// or the home for a device write or a far atomic).
//
// Coarse (a presence bit per socket or per node-controller group, as the big
// machines' node controllers keep it): the home sends one invalidation per
// marked unit to the unit's agent (its first socket's home agent), which
// looks the line up and invalidates the unit's sharers (filtered: it knows
// them, a socket snoop filter) or every core of the unit (unfiltered); the
// cores acknowledge to the unit's agent, which sends one acknowledgement on.
// The exact sharer set is still kept: it decides which caches really lose
// their copy, and the checker reads it.
#include "fabric_state.hpp"

#include <algorithm>
#include <map>

namespace cohsim::fabric {

DirectoryOrganisation::DirectoryOrganisation(config::Reader r) {
  using config::Spec;
  const std::string presence = r.choice(
      "presence", Spec{.doc = "what a presence bit of the home directory stands for: core (exact: one invalidation "
                              "per sharer), socket or group (node-controller group): one invalidation per marked "
                              "unit to its agent, which fans it out",
                       .def = "core", .choices = {"core", "socket", "group"}});
  this->presence = presence == "socket" ? Presence::socket : presence == "group" ? Presence::group : Presence::core;
  unit_filtered = r.choice("unit_snoop",
                           Spec{.doc = "coarse presence: the unit's agent invalidates only its cores that hold the "
                                       "line (filtered, a snoop filter per unit) or every core of the unit "
                                       "(broadcast)",
                                .def = "filtered", .choices = {"filtered", "broadcast"}}) == "filtered";
  unit_lookup = r.time("unit_lookup", Spec{.doc = "coarse presence: the unit agent's directory or snoop-filter "
                                                  "look-up before it fans an invalidation out",
                                           .def = "0", .max = 1e6});
  if (this->presence == Presence::core)
    r.unused("unit_lookup", "the directory is exact (presence core): no unit agent looks a line up");
}

int Fabric::presence_unit(int agent) const { return unit_of_socket(icn_.endpoint(agent_endpoint(agent)).socket); }

int Fabric::unit_of_socket(int socket) const {
  return p_.directory.presence == DirectoryOrganisation::Presence::group ? socket / topo_.sockets_per_group() : socket;
}

int Fabric::unit_endpoint(int unit) const {
  const int socket =
      p_.directory.presence == DirectoryOrganisation::Presence::group ? unit * topo_.sockets_per_group() : unit;
  const int node = topo_.node_count() == topo_.sockets() ? socket : socket * topo_.dies_per_socket();
  return icn_.home_endpoint(node);
}

Tick Fabric::invalidate_sharers(Txn& t, HomeLine& h, int dir_ep, Tick t0, int ack_to, bool skip_requester) {
  LineStats& ls = stats_of(h, t.line);
  // A snoop from `from` (on die `from_die`) at `at` reaches agent `core`: its
  // arrival, through the core's die's tag pipeline when that is another die.
  auto snoop_arrival = [&](int from, int from_die, int core, Tick at) {
    return icn_.send(from, core_cpu_[static_cast<std::size_t>(core)], at) +
           (agent_die(core) != from_die ? p_.remote_die_snoop : 0);
  };
  // One invalidation: returns its arrival (the copy is lost then).
  auto invalidate = [&](int from, int from_die, int core, Tick at) {
    const Tick arr = snoop_arrival(from, from_die, core, at);
    schedule_remote(t, core, CacheEvent::Inv, arr);
    ++ls.invalidations;
    ++stats_.invalidations;
    return arr;
  };
  auto targeted = [&](std::size_t s) { return !(skip_requester && static_cast<int>(s) == t.core); };
  const int dir_die = icn_.endpoint(dir_ep).die_global;
  Tick last_ack = t0;
  const bool exact = p_.directory.presence == DirectoryOrganisation::Presence::core || dir_ep != home_endpoint_of(t.line);
  if (exact) {  // (a die's L3 serving its own die tracks its cores exactly)
    h.sharers.for_each([&](std::size_t s) {
      if (!targeted(s)) return;
      const int core = static_cast<int>(s);
      const Tick arr = invalidate(dir_ep, dir_die, core, t0);
      last_ack = std::max(last_ack, icn_.send(core_cpu_[s], ack_to, arr));
    });
    return last_ack;
  }
  // Coarse: the marked units, each with the sharers it must invalidate.
  std::map<int, std::vector<int>> units;
  h.sharers.for_each([&](std::size_t s) {
    if (targeted(s)) units[presence_unit(static_cast<int>(s))].push_back(static_cast<int>(s));
  });
  // The home's own unit (its socket or group): the home itself is that unit's agent.
  const int home_unit = unit_of_socket(icn_.endpoint(dir_ep).socket);
  for (const auto& [unit, sharers] : units) {
    const int uep = unit == home_unit ? dir_ep : unit_endpoint(unit);
    const int udie = icn_.endpoint(uep).die_global;
    // The home's own unit is looked up by the home itself (its directory look-up covered it); another
    // unit's agent takes the invalidation through its die's tag pipeline (the remote-die snoop an exact
    // directory pays per sharer) and looks the line up.
    const Tick at_unit = uep == dir_ep ? t0
                                       : icn_.send(dir_ep, uep, t0) + (udie != dir_die ? p_.remote_die_snoop : 0) +
                                             p_.directory.unit_lookup;
    if (uep != dir_ep) ++stats_.unit_invalidations;
    Tick unit_acked = at_unit;
    auto snoop = [&](int core, bool holds) {
      const int ep = core_cpu_[static_cast<std::size_t>(core)];
      Tick arr;
      if (holds) {
        arr = invalidate(uep, udie, core, at_unit);
      } else {
        arr = snoop_arrival(uep, udie, core, at_unit);
        ++stats_.blind_snoops;
      }
      unit_acked = std::max(unit_acked, icn_.send(ep, uep, arr));
    };
    if (p_.directory.unit_filtered) {
      for (int core : sharers) snoop(core, true);
    } else {
      // Every core of the unit, its sockets' cores being numbered in a row (a
      // core that holds nothing answers at once).
      const int cores_per_socket = topo_.core_count() / topo_.sockets();
      const int sockets_per_unit =
          p_.directory.presence == DirectoryOrganisation::Presence::group ? topo_.sockets_per_group() : 1;
      const int first = unit * sockets_per_unit * cores_per_socket;
      for (int core = first; core < first + sockets_per_unit * cores_per_socket; ++core) {
        if (skip_requester && core == t.core) continue;
        snoop(core, std::binary_search(sharers.begin(), sharers.end(), core));
      }
      for (int core : sharers)
        if (is_llc_agent(core)) snoop(core, true);
    }
    last_ack = std::max(last_ack, icn_.send(uep, ack_to, unit_acked));  // (nothing when the agent waits itself)
  }
  return last_ack;
}

}  // namespace cohsim::fabric
