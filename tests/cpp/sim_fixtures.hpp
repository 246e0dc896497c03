// Builders shared by the simulator's C++ tests: a trace job and the settings of
// hand-computed runs.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "aryl/rng.hpp"
#include "aryl/sim/simulator.hpp"
#include "fixtures.hpp"

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

// A random run of `seed`: 4 training and 4 inference 8-GPU servers, 50 jobs of
// 1-8 GPUs per worker (some elastic, hetero or checkpointed, estimates off by up
// to 25%) over 6,000 s, and a load that changes every 300 s.
struct RandomRun {
  ClusterState cluster;
  std::vector<sim::SimJob> jobs;
  std::vector<sim::LoadPoint> load;
};

inline RandomRun random_run(std::uint64_t seed) {
  Rng rng(seed);
  RandomRun run;
  for (int i = 0; i < 4; ++i) add_server(run.cluster, "t" + std::to_string(i), false);
  for (int i = 0; i < 4; ++i) add_server(run.cluster, "l" + std::to_string(i), true);
  for (int j = 0; j < 50; ++j) {
    const int lo = 1 + static_cast<int>(rng.below(2));
    sim::SimJob sj = sim_job("j" + std::to_string(j), 1 << rng.below(4), lo,
                             lo + static_cast<int>(rng.below(3)),
                             30 + static_cast<double>(rng.below(4000)),
                             static_cast<double>(rng.below(6000)), rng.below(2) == 0);
    sj.job.hetero = rng.below(5) == 0;
    sj.job.estimated_duration = sj.job.duration * (0.75 + 0.5 * rng.uniform());
    run.jobs.push_back(sj);
  }
  for (int k = 0; k < 60; ++k) run.load.push_back({k * 300.0, rng.uniform()});
  return run;
}

// Two runs of the same trace decided alike: the same job times, counts and timeline.
inline void require_same_run(const sim::Result& a, const sim::Result& b) {
  REQUIRE(a.violations.empty());
  REQUIRE(b.violations.empty());
  REQUIRE(a.start_time == b.start_time);
  REQUIRE(a.finish_time == b.finish_time);
  REQUIRE(a.preemptions == b.preemptions);
  REQUIRE(a.scaling_ops == b.scaling_ops);
  REQUIRE(a.training_gpu_seconds == b.training_gpu_seconds);
  REQUIRE(a.t == b.t);
  REQUIRE(a.on_loan == b.on_loan);
}

}  // namespace aryl::test
