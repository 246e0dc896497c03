#include "goodput_progress.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "aryl/goodput.hpp"

namespace aryl::sim {

GoodputJob::GoodputJob(const Application& app, double batch_size, bool learning)
    : app_(&app),
      batch_size_(batch_size),
      total_(app.epoch_progress(app.max_epochs())) {
  if (learning) learner_.emplace(app.limits(), std::max(batch_size, 0.0));
}

void GoodputJob::choose_batch() {
  int replicas = 0;
  for (int g : placement_) replicas += g;
  if (learner_) {
    const BatchChoice b =
        learner_->batch(static_cast<int>(placement_.size()), replicas);
    atomic_bsz_ = b.atomic_bsz;
    accum_steps_ = b.accum_steps;
  } else {
    std::tie(atomic_bsz_, accum_steps_) =
        fixed_batch(app_->limits(), replicas, batch_size_);
  }
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
    const double next = app_->epoch_progress(epoch_ + 1);
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
