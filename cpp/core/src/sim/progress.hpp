// Job progress with a fixed amount of work: a job's work is its duration at its
// reference worker count on reference GPUs; it progresses at throughput(workers)
// x the mean GPU speed of its workers (x the hetero efficiency when they span GPU
// types), paused for the restart overhead after a checkpointed preemption.
#pragma once

#include <cstdint>
#include <vector>

#include "aryl/sim/simulator.hpp"

namespace aryl::sim {

// The job's throughput with 1..max_workers workers (index w - 1): its own curve
// if it has one, else the scaling model's. The scheduler sees the same curve.
std::vector<double> throughput_curve(const SimJob& job, Scaling scaling);

struct Placed {
  int server;
  bool flexible;
};

struct JobProgress {
  double work = 0.0;          // total, in throughput-seconds at reference speed
  double done = 0.0;          // progress so far
  double rate = 0.0;          // progress per second with the current workers
  double updated = 0.0;       // when `done` was last brought up to date
  double paused_until = 0.0;  // restart overhead: no progress before this
  std::uint64_t version = 0;  // invalidates stale finish events
  bool restarted = false;     // preempted with a checkpoint: pays the overhead

  // Brings `done` up to `now` at the current rate; returns the progress gained.
  double advance(double now, bool running);
  // What `done` would be at `now` (advance without changing anything).
  [[nodiscard]] double done_at(double now, bool running) const;
  // When the job finishes at the current rate (rate > 0).
  [[nodiscard]] double finish_time(double now) const;
  [[nodiscard]] double remaining_fraction() const;
};

// Progress per second of `workers` on `servers` whose relative speeds are
// `speed`; `mixed` tells whether they span GPU types.
double progress_rate(const std::vector<double>& curve,
                     const std::vector<Placed>& workers,
                     const std::vector<Server>& servers,
                     const std::vector<double>& speed, double hetero_efficiency,
                     bool& mixed);

}  // namespace aryl::sim
