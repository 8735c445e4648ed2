#include "cohsim/sim/trace.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <nlohmann/json.hpp>

namespace cohsim::sim {

void Tracer::add(Event e) {
  bytes_ += 90 + e.name.size() + e.cat.size();
  events_.push_back(std::move(e));
}

void Tracer::slice(int track, std::string_view name, std::string_view category, Tick begin, Tick end) {
  if (!in_window(begin, end)) return;
  add({'X', track, std::string(name), std::string(category), begin, end - begin, 0});
}

void Tracer::flow(std::string_view name, int from_track, Tick t0, int to_track, Tick t1) {
  if (!in_window(t0, t1)) return;
  std::uint64_t id = next_flow_++;
  add({'s', from_track, std::string(name), "flow", t0, 0, id});
  add({'f', to_track, std::string(name), "flow", t1, 0, id});
}

void Tracer::instant(int track, std::string_view name, Tick t) {
  if (!in_window(t, t)) return;
  add({'i', track, std::string(name), "mark", t, 0, 0});
}

std::string Tracer::to_json() const {
  using nlohmann::json;
  json events = json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", process_name_}}}});
  std::set<int> tracks_with_events;
  for (const Event& e : events_) tracks_with_events.insert(e.track);
  for (int track : tracks_with_events) {
    auto named = track_names_.find(track);
    const std::string name = named != track_names_.end() ? named->second : fmt::format("track {}", track);
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", track}, {"args", {{"name", name}}}});
    // chrome://tracing orders tracks by this (else by name: "cpu 10" before "cpu 2").
    events.push_back(
        {{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 1}, {"tid", track}, {"args", {{"sort_index", track}}}});
  }
  // Sorted by time (then insertion): viewers need flow ends after their starts.
  std::vector<std::size_t> order(events_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return events_[a].ts < events_[b].ts; });
  for (std::size_t i : order) {
    const Event& e = events_[i];
    json j = {{"ph", std::string(1, e.ph)}, {"name", e.name}, {"cat", e.cat}, {"pid", 1}, {"tid", e.track},
              {"ts", static_cast<double>(e.ts) / 1e6}};
    if (e.ph == 'X') j["dur"] = static_cast<double>(e.dur) / 1e6;
    if (e.ph == 's' || e.ph == 'f') {
      j["id"] = e.id;
      if (e.ph == 'f') j["bp"] = "e";
    }
    if (e.ph == 'i') j["s"] = "t";
    events.push_back(std::move(j));
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() + "\n";
}

}  // namespace cohsim::sim
