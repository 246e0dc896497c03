#include "goodput_progress.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "aryl/goodput.hpp"

namespace aryl::sim {

GoodputJob::GoodputJob(const Application& app, double batch_size, bool learning,
                       double work_scale)
    : app_(&app),
      batch_size_(batch_size),
      work_scale_(work_scale),
      total_(work_scale * app.epoch_progress(app.max_epochs())) {
  if (learning) learner_.emplace(app.limits(), std::max(batch_size, 0.0));
}

void GoodputJob::choose_batch() {
  int replicas = 0;
  for (int g : placement_) replicas += g;
  std::tie(atomic_bsz_, accum_steps_) =
      batch_on(static_cast<int>(placement_.size()), replicas);
}

// (atomic batch, accumulation steps) the job runs on `replicas` over `nodes`:
// its agent's choice when it learns, else the user's batch split over them.
std::pair<int, int> GoodputJob::batch_on(int nodes, int replicas) const {
  if (!learner_) return fixed_batch(app_->limits(), replicas, batch_size_);
  const BatchChoice b = learner_->batch(nodes, replicas);
  return {b.atomic_bsz, b.accum_steps};
}

std::vector<double> GoodputJob::rate_curve(int max_replicas, int node_gpus) const {
  std::vector<double> curve;
  for (int k = 1; k <= max_replicas; ++k) {
    std::vector<int> placement(static_cast<std::size_t>(k / node_gpus), node_gpus);
    if (k % node_gpus != 0) placement.push_back(k % node_gpus);
    const auto [atomic, accum] = batch_on(static_cast<int>(placement.size()), k);
    curve.push_back(app_->progress_rate(placement, atomic, accum, epoch_));
  }
  return curve;
}

// One profile of the step the job runs now, and the gradient statistics of its
// batch and epoch (what a Pollux agent measures).
void GoodputJob::observe() {
  int replicas = 0;
  for (int g : placement_) replicas += g;
  const auto [step, sync] = app_->step_time(placement_, atomic_bsz_);
  const double batch = static_cast<double>(replicas) * atomic_bsz_ * (accum_steps_ + 1);
  learner_->observe_grad(app_->grad_stats(batch, epoch_));
  learner_->observe(static_cast<int>(placement_.size()), replicas, atomic_bsz_, step,
                    sync);
}

void GoodputJob::reallocate(const std::vector<int>& placement, double restart) {
  placement_.clear();
  for (int g : placement)
    if (g > 0) placement_.push_back(g);
  if (placement_.empty()) {
    atomic_bsz_ = 0;
    return;
  }
  choose_batch();
  restart_left_ = restart;
}

double GoodputJob::rate() const {
  if (placement_.empty() || completed_) return 0.0;
  return app_->progress_rate(placement_, atomic_bsz_, accum_steps_, epoch_);
}

double GoodputJob::step(double t, double seconds) {
  if (placement_.empty() || completed_) return std::numeric_limits<double>::quiet_NaN();
  const double delay = std::min(restart_left_, seconds);
  restart_left_ -= delay;
  seconds -= delay;
  t += delay;
  while (seconds > 0.0) {
    if (learner_) observe();
    const double rate = this->rate();
    const double next = boundary(epoch_ + 1);
    if (progress_ + rate * seconds < next) {
      progress_ += rate * seconds;
      if (learner_) choose_batch();
      break;
    }
    // The boundary is crossed after a whole number of seconds (half to even),
    // as the artifact counts time; progress lands exactly on the boundary.
    const double delta = std::nearbyint((next - progress_) / rate);
    ++epoch_;
    progress_ = next;
    t += delta;
    seconds -= delta;
    if (epoch_ > app_->completion_epoch()) {
      completed_ = true;
      return t;
    }
    if (learner_) choose_batch();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace aryl::sim
