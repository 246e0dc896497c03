#include "accounting.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include <xtensor/xadapt.hpp>

namespace aryl::sim {

Accounting::Accounting(std::size_t jobs) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  r_.start_time = xt::xtensor<double, 1>::from_shape({jobs});
  r_.finish_time = xt::xtensor<double, 1>::from_shape({jobs});
  r_.start_time.fill(nan);
  r_.finish_time.fill(nan);
  r_.work_lost = xt::zeros<double>({jobs});
  r_.preemptions = xt::zeros<std::int64_t>({jobs});
  r_.scaling_ops = xt::zeros<std::int64_t>({jobs});
  r_.ran_on_training = xt::zeros<std::uint8_t>({jobs});
  r_.ran_on_inference = xt::zeros<std::uint8_t>({jobs});
  r_.ran_mixed = xt::zeros<std::uint8_t>({jobs});
  r_.rejected = xt::zeros<std::uint8_t>({jobs});
}

void Accounting::integrate(double dt, const Usage& u) {
  if (!(dt > 0.0)) return;
  r_.training_gpu_seconds += static_cast<double>(u.training_used) * dt;
  r_.loaned_gpu_seconds += static_cast<double>(u.loaned_used) * dt;
  r_.inference_gpu_seconds += u.inference_occupied * dt;
  r_.loaned_capacity_seconds += static_cast<double>(u.loaned_gpus) * dt;
}

void Accounting::sample(double t, const Usage& u, std::int64_t on_loan,
                        std::int64_t needed, std::int64_t queued,
                        std::int64_t running) {
  t_.push_back(t);
  training_.push_back(u.training_used);
  loaned_.push_back(u.loaned_used);
  on_loan_.push_back(on_loan);
  needed_.push_back(needed);
  queue_.push_back(queued);
  running_.push_back(running);
}

void Accounting::started(int job, double t) {
  if (std::isnan(r_.start_time(at(job)))) r_.start_time(at(job)) = t;
}

void Accounting::preempted(int job, double lost, int gpus_per_worker) {
  ++r_.preemptions(at(job));
  r_.work_lost(at(job)) += lost;
  r_.work_lost_total += lost;
  r_.work_lost_gpu_seconds += lost * gpus_per_worker;
}

void Accounting::ran_on(int job, Pool pool) {
  (pool == Pool::training ? r_.ran_on_training : r_.ran_on_inference)(at(job)) = 1;
}

void Accounting::violation(double t, const std::string& what) {
  if (r_.violations.size() < 20)
    r_.violations.push_back(fmt::format("t={}: {}", t, what));
}

Result Accounting::finish(double end, double work_completed) {
  r_.work_completed = work_completed;
  const double gap =
      std::abs(r_.work_delivered - r_.work_completed - r_.work_lost_total);
  if (gap > 1e-6 * std::max(1.0, r_.work_delivered))
    violation(end,
              fmt::format("work delivered {} != completed {} + lost {}",
                          r_.work_delivered, r_.work_completed, r_.work_lost_total));
  r_.end_time = end;
  const auto column = [](auto& v) { return xt::adapt(v, {v.size()}); };
  r_.t = column(t_);
  r_.training_gpus_used = column(training_);
  r_.loaned_gpus_used = column(loaned_);
  r_.on_loan = column(on_loan_);
  r_.inference_needed = column(needed_);
  r_.queue_length = column(queue_);
  r_.running_jobs = column(running_);
  return std::move(r_);
}

}  // namespace aryl::sim
