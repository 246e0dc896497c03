// Goodput-driven progress (the Pollux artifact's job model): a job advances in
// M0-equivalent steps at the true goodput of its placement, batch and epoch,
// computed from its application's measured tables; it completes when its
// progress passes the end of the application's last epoch. Each (re)allocation
// starts a restart countdown during which it makes no progress. Time moves in
// stretches (one scheduling round), as the artifact steps its jobs; an epoch
// boundary inside a stretch is crossed after a whole number of seconds.
#pragma once

#include <limits>
#include <vector>

#include "aryl/application.hpp"

namespace aryl::sim {

class GoodputJob {
 public:
  // `batch_size` is the user's global batch (kept on every placement, as the
  // artifact's Tiresias and Optimus jobs do).
  GoodputJob(const Application& app, double batch_size);

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
  [[nodiscard]] int atomic_bsz() const { return atomic_bsz_; }
  [[nodiscard]] int accum_steps() const { return accum_steps_; }
  [[nodiscard]] double restart_left() const { return restart_left_; }
  [[nodiscard]] const std::vector<int>& placement() const { return placement_; }
  // True progress per second now (0 without a placement).
  [[nodiscard]] double rate() const;

 private:
  const Application* app_;
  double batch_size_;
  double total_;
  std::vector<int> placement_;  // GPUs per node, zeros dropped
  int atomic_bsz_ = 0, accum_steps_ = 0, epoch_ = 0;
  double progress_ = 0.0, restart_left_ = 0.0;
  bool completed_ = false;
};

}  // namespace aryl::sim
