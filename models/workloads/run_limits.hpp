// The watchdog limits every workload runs under: a model that stops making
// progress (no note_progress() for this long in simulated time) is reported,
// with who waits on what, instead of running forever.
#pragma once

#include "cohsim/sim/simulator.hpp"

namespace cohsim::models {

inline constexpr sim::RunLimits kWorkloadLimits{.max_time_without_progress = 10 * sim::kMs};

}  // namespace cohsim::models
