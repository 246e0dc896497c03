// What a Pollux job learns about itself while it runs: its profiles (one step time
// per distinct (nodes, replicas, atomic batch), the first measurement kept), the
// throughput model refitted on each new profile, and its latest gradient-noise
// statistics. The state behind aryl.agents.PolluxAgent, and what a simulator keeps
// per Pollux job.
#pragma once

#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "aryl/goodput.hpp"

namespace aryl {

class PolluxJobModel {
 public:
  // fixed_batch_size <= 0: the job chooses its batch (Pollux); > 0: it keeps this
  // global batch (Tiresias/Optimus jobs, ncf in the artifact). std::invalid_argument
  // for inconsistent limits or a non-finite batch.
  explicit PolluxJobModel(BatchLimits limits, double fixed_batch_size = 0.0);

  // Records one measured step; true when the (nodes, replicas, atomic batch) was new
  // and the throughput model was refitted. std::invalid_argument names a bad value
  // (nodes < 1, replicas < nodes, batch < 1, step <= 0, sync outside [0, step)).
  bool observe(int num_nodes, int num_replicas, int atomic_bsz, double step_time,
               double sync_time);
  // Replaces the gradient statistics (finite, >= 0).
  void observe_grad(GradParams grad);

  bool has_model() const { return perf_.has_value() && grad_.has_value(); }
  const std::optional<PerfParams>& perf() const { return perf_; }
  const std::optional<GradParams>& grad() const { return grad_; }
  const BatchLimits& limits() const { return limits_; }
  double fixed_batch_size() const { return fixed_batch_size_; }
  const std::vector<ProfileSample>& profile() const { return samples_; }

  // The goodput model (std::invalid_argument before has_model()).
  GoodputModel model() const;
  // Speedup over one GPU; before a model, num_replicas (Pollux's optimistic default).
  double speedup(int num_nodes, int num_replicas) const;
  // The batch the job runs on an allocation (K >= 1): GoodputModel::configure with
  // the fixed batch or adaptively; before a model, fixed_batch() of the fixed batch
  // or of max(M0, min_atomic_bsz K). Before a model goodput/throughput/efficiency
  // are 0.
  BatchChoice batch(int num_nodes, int num_replicas) const;

  // The most replicas profiled (0 before any) and the replica cap Pollux's scheduler
  // gives the job: min(max(2 x that, 1), 64, floor(M_max / min_atomic_bsz)).
  int max_profiled_replicas() const;
  int max_replicas() const;

 private:
  BatchLimits limits_;
  double fixed_batch_size_;
  std::set<std::tuple<int, int, int>> seen_;
  std::vector<ProfileSample> samples_;  // in the order first seen
  std::optional<PerfParams> perf_;
  std::optional<GradParams> grad_;
};

// What aryl's kernel sees of a tuned job (Aryl+TunedJobs): `curve` = the model's
// best goodput G(k) with k = 1..max_replicas replicas on ceil(k / node_gpus)
// nodes (sizes where no batch fits are floored at 1e-6 of the best, so they are
// useless rather than infinitely slow), and `remaining` scaled so that the
// kernel's running time estimated x curve[ref] / curve[k] x remaining is the
// model's own: left x M0 / G(k) for `left` M0-equivalent steps to go. Empty
// curve when no size has a positive goodput. std::invalid_argument for
// max_replicas < 1, reference outside [1, max_replicas], node_gpus < 1, left < 0
// or estimated_duration <= 0.
struct TunedView {
  double remaining = 0.0;
  std::vector<double> curve;
};
TunedView tuned_kernel_view(const GoodputModel& model, int max_replicas, int reference,
                            int node_gpus, double left, double estimated_duration);

}  // namespace aryl
