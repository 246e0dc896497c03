// Goodput-driven progress (the Pollux artifact's job model): a job advances in
// M0-equivalent steps at the true goodput of its placement, batch and epoch,
// computed from its application's measured tables; it completes when its
// progress passes the end of the application's last epoch. Each (re)allocation
// starts a restart countdown during which it makes no progress. Time moves in
// stretches (one scheduling round), as the artifact steps its jobs; an epoch
// boundary inside a stretch is crossed after a whole number of seconds.
#pragma once

#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "aryl/application.hpp"
#include "aryl/pollux_job.hpp"

namespace aryl::sim {

class GoodputJob {
 public:
  // `batch_size` is the user's global batch (kept on every placement, as the
  // artifact's Tiresias and Optimus jobs do). A learning job (a Pollux job)
  // also profiles every step it runs, refits its goodput model on each new
  // profile, and re-chooses its batch from that model on every reallocation and
  // after every stretch and epoch (batch_size <= 0: adaptively; > 0: that fixed
  // batch, as the artifact's ncf). `work_scale` stretches every epoch alike: the
  // job does that fraction of its application's work (a trace job mapped onto an
  // application keeps its own duration).
  GoodputJob(const Application& app, double batch_size, bool learning = false,
             double work_scale = 1.0);

  // A new placement (GPUs per node, zeros allowed): the batch is re-chosen for
  // it and `restart` seconds pass without progress. An empty placement stops
  // the job (the countdown left is kept, as the artifact does).
  void reallocate(const std::vector<int>& placement, double restart);

  // Advances the job from time `t` by `seconds` on its placement: the restart
  // countdown first, then progress, crossing epoch boundaries; returns the
  // completion time if it completes within the stretch, else NaN. Does nothing
  // when it holds no placement or has completed.
  double step(double t, double seconds);

  [[nodiscard]] bool completed() const { return completed_; }
  [[nodiscard]] int epoch() const { return epoch_; }
  [[nodiscard]] double progress() const { return progress_; }
  // Progress at completion: the end of the application's last epoch.
  [[nodiscard]] double total() const { return total_; }
  // Progress at the start of `epoch` (the application's, scaled).
  [[nodiscard]] double boundary(int epoch) const {
    return work_scale_ * app_->epoch_progress(epoch);
  }
  [[nodiscard]] int atomic_bsz() const { return atomic_bsz_; }
  [[nodiscard]] int accum_steps() const { return accum_steps_; }
  [[nodiscard]] double restart_left() const { return restart_left_; }
  [[nodiscard]] const std::vector<int>& placement() const { return placement_; }
  // True progress per second now (0 without a placement).
  [[nodiscard]] double rate() const;
  // Its progress rate in its current epoch on 1..max_replicas one-GPU replicas,
  // each count on the fewest nodes of node_gpus GPUs, with the batch it would
  // choose there now: the throughput curve aryl's kernel sees of it (a job
  // keeping the user's batch has the same statistical efficiency on every count).
  [[nodiscard]] std::vector<double> rate_curve(int max_replicas, int node_gpus) const;
  // What a learning job knows of itself (nullptr for a non-learning job).
  [[nodiscard]] const PolluxJobModel* learner() const {
    return learner_ ? &*learner_ : nullptr;
  }

 private:
  const Application* app_;
  double batch_size_;
  double work_scale_;
  double total_;
  std::vector<int> placement_;  // GPUs per node, zeros dropped
  int atomic_bsz_ = 0, accum_steps_ = 0, epoch_ = 0;
  double progress_ = 0.0, restart_left_ = 0.0;
  bool completed_ = false;
  std::optional<PolluxJobModel> learner_;

  void choose_batch();
  [[nodiscard]] std::pair<int, int> batch_on(int nodes, int replicas) const;
  void observe();
};

}  // namespace aryl::sim
