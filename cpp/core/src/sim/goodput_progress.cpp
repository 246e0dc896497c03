#include "goodput_progress.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "aryl/goodput.hpp"

namespace aryl::sim {

GoodputJob::GoodputJob(const Application& app, double batch_size)
    : app_(&app), batch_size_(batch_size), total_(app.epoch_progress(app.max_epochs())) {}

void GoodputJob::reallocate(const std::vector<int>& placement, double restart) {
  placement_.clear();
  for (int g : placement)
    if (g > 0) placement_.push_back(g);
  if (placement_.empty()) {
    atomic_bsz_ = 0;
    return;
  }
  int replicas = 0;
  for (int g : placement_) replicas += g;
  std::tie(atomic_bsz_, accum_steps_) = fixed_batch(app_->limits(), replicas, batch_size_);
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
    const double rate = this->rate();
    const double next = app_->epoch_progress(epoch_ + 1);
    if (progress_ + rate * seconds < next) {
      progress_ += rate * seconds;
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
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace aryl::sim
