// Builders shared by the simulator's C++ tests: a trace job and the settings of
// hand-computed runs.
#pragma once

#include <string>

#include "aryl/sim/simulator.hpp"

namespace aryl::test {

inline sim::SimJob sim_job(const std::string& id, int d, int lo, int hi,
                           double duration, double submit = 0,
                           bool checkpoint = false) {
  Job j;
  j.id = id;
  j.gpus_per_worker = d;
  j.min_workers = lo;
  j.max_workers = hi;
  j.duration = j.estimated_duration = duration;
  j.submit_time = submit;
  j.checkpoint = checkpoint;
  return {j, {}};
}

inline sim::Config config(AllocationPolicy policy = AllocationPolicy::aryl) {
  sim::Config c;
  c.policy = policy;
  c.gpu_speed["T4"] = 1.0;  // hand calculations: every GPU at reference speed
  c.audit = true;
  return c;
}

}  // namespace aryl::test
