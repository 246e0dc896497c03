#include "aryl/pollux_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace aryl {

PolluxJobModel::PolluxJobModel(BatchLimits limits, double fixed_batch_size)
    : limits_(limits), fixed_batch_size_(fixed_batch_size) {
  if (!std::isfinite(fixed_batch_size))
    throw std::invalid_argument(
        fmt::format("pollux job: batch_size must be finite, got {}", fixed_batch_size));
  fixed_batch(limits_, 1, limits_.init_batch_size);  // validates the limits
}

bool PolluxJobModel::observe(int num_nodes, int num_replicas, int atomic_bsz,
                             double step_time, double sync_time) {
  if (num_nodes < 1 || num_replicas < num_nodes || atomic_bsz < 1)
    throw std::invalid_argument(
        fmt::format("pollux job: need 1 <= num_nodes <= num_replicas and atomic_bsz >= "
                    "1, got {}, {}, {}",
                    num_nodes, num_replicas, atomic_bsz));
  if (!std::isfinite(step_time) || step_time <= 0.0 || !std::isfinite(sync_time) ||
      sync_time < 0.0 || sync_time >= step_time)
    throw std::invalid_argument(fmt::format(
        "pollux job: need step_time > 0 and 0 <= sync_time < step_time, got {} and {}",
        step_time, sync_time));
  if (!seen_.insert({num_nodes, num_replicas, atomic_bsz}).second) return false;
  samples_.push_back({num_nodes, num_replicas, static_cast<double>(atomic_bsz),
                      step_time - sync_time, step_time});
  perf_ = fit_perf_params(samples_);
  return true;
}

void PolluxJobModel::observe_grad(GradParams grad) {
  if (!std::isfinite(grad.sqr) || !std::isfinite(grad.var) || grad.sqr < 0.0 ||
      grad.var < 0.0)
    throw std::invalid_argument(fmt::format(
        "pollux job: grad_sqr and grad_var must be finite and >= 0, got {} and {}",
        grad.sqr, grad.var));
  grad_ = grad;
}

GoodputModel PolluxJobModel::model() const {
  if (!has_model())
    throw std::invalid_argument(
        "pollux job: no model yet; observe a profile and gradient statistics first");
  return GoodputModel(*perf_, *grad_, limits_);
}

double PolluxJobModel::speedup(int num_nodes, int num_replicas) const {
  if (has_model()) return model().speedup(num_nodes, num_replicas);
  check_allocation(num_nodes, num_replicas);
  return num_replicas;
}

BatchChoice PolluxJobModel::batch(int num_nodes, int num_replicas) const {
  if (has_model()) return model().configure(num_nodes, num_replicas, fixed_batch_size_);
  if (num_nodes < 1 || num_replicas < num_nodes)
    throw std::invalid_argument(fmt::format(
        "allocation: need 1 <= num_nodes <= num_replicas, got {} nodes, {} replicas",
        num_nodes, num_replicas));
  const double batch =
      fixed_batch_size_ > 0.0
          ? fixed_batch_size_
          : std::max(limits_.init_batch_size,
                     static_cast<double>(limits_.min_atomic_bsz) * num_replicas);
  const auto [atomic, accum] = fixed_batch(limits_, num_replicas, batch);
  return {atomic, accum, 0.0, 0.0, 0.0};
}

int PolluxJobModel::max_profiled_replicas() const {
  int most = 0;
  for (const ProfileSample& s : samples_) most = std::max(most, s.num_replicas);
  return most;
}

int PolluxJobModel::max_replicas() const {
  const int by_batch =
      static_cast<int>(limits_.max_batch_size / limits_.min_atomic_bsz);
  return std::min({std::max(2 * max_profiled_replicas(), 1), 64, by_batch});
}

TunedView tuned_kernel_view(const GoodputModel& model, int max_replicas, int reference,
                            int node_gpus, double left, double estimated_duration) {
  if (max_replicas < 1 || reference < 1 || reference > max_replicas || node_gpus < 1 ||
      !(left >= 0.0) || !(estimated_duration > 0.0) ||
      !std::isfinite(estimated_duration))
    throw std::invalid_argument(fmt::format(
        "tuned view: need 1 <= reference ({}) <= max_replicas ({}), node_gpus >= 1 "
        "({}), left >= 0 ({}) and estimated_duration > 0 ({})",
        reference, max_replicas, node_gpus, left, estimated_duration));
  TunedView view;
  for (int k = 1; k <= max_replicas; ++k)
    view.curve.push_back(model.optimize((k + node_gpus - 1) / node_gpus, k).goodput);
  const double best = *std::max_element(view.curve.begin(), view.curve.end());
  if (!(best > 0.0)) return {};
  for (double& g : view.curve) g = std::max(g, best * 1e-6);
  const double at_ref = view.curve[static_cast<std::size_t>(reference - 1)];
  view.remaining =
      left * model.limits().init_batch_size / (estimated_duration * at_ref);
  return view;
}

}  // namespace aryl
