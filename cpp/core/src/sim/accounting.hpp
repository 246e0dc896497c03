// Accounting: per-job records, GPU-seconds integrated over time, the timeline
// sampled at every epoch, and the Result they make.
#pragma once

#include <cstdint>
#include <vector>

#include "aryl/sim/simulator.hpp"

namespace aryl::sim {

// What the cluster holds at one moment, for integration and sampling.
struct Usage {
  std::int64_t training_used = 0;   // GPUs of training jobs on training servers
  std::int64_t loaned_used = 0;     // ... on on-loan inference servers
  std::int64_t loaned_gpus = 0;     // GPUs of the servers on loan
  double inference_occupied = 0.0;  // GPUs busy with inference (load x capacity)
};

class Accounting {
 public:
  explicit Accounting(std::size_t jobs);

  void integrate(double dt, const Usage& usage);
  void sample(double t, const Usage& usage, std::int64_t on_loan, std::int64_t needed,
              std::int64_t queued, std::int64_t running);

  void started(int job, double t);  // first start only
  void finished(int job, double t) { r_.finish_time(at(job)) = t; }
  // `lost`: progress discarded (work units), on `gpus_per_worker`-GPU workers.
  void preempted(int job, double lost, int gpus_per_worker = 1);
  void scaled(int job) { ++r_.scaling_ops(at(job)); }
  void ran_on(int job, Pool pool);
  void ran_mixed(int job) { r_.ran_mixed(at(job)) = 1; }
  void rejected(int job) { r_.rejected(at(job)) = 1; }
  void delivered(double work) { r_.work_delivered += work; }
  void restarting(double gpu_seconds) { r_.restart_gpu_seconds += gpu_seconds; }

  [[nodiscard]] Result& result() { return r_; }
  [[nodiscard]] const Result& result() const { return r_; }
  void violation(double t, const std::string& what);
  // Closes the books at `end`: work conservation checked, timeline moved in.
  Result finish(double end, double work_completed);

 private:
  static std::size_t at(int job) { return static_cast<std::size_t>(job); }

  Result r_;
  std::vector<double> t_;
  std::vector<std::int64_t> training_, loaned_, on_loan_, needed_, queue_, running_;
};

}  // namespace aryl::sim
