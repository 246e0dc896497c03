// Rounds of goodput-driven jobs (the Pollux artifact's simulation loop): at
// each scheduling epoch every running job first advances over the interval
// just past (goodput_progress.hpp), jobs that completed inside it leave their
// servers, then the allocator decides the next interval (preemptive.cpp for
// Tiresias). A job whose allocation changes is re-placed here and pays the
// reallocation overhead.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "aryl/tiresias.hpp"
#include "engine.hpp"

namespace aryl::sim {

void Engine::check_goodput_inputs() const {
  const int apps = static_cast<int>(applications_.size());
  const Allocator allocator = config_.allocator;
  const bool chooses = allocator == Allocator::pollux || config_.tuned;
  for (const SimJob& j : jobs_) {
    if (j.application < 0 || j.application >= apps)
      throw std::invalid_argument(
          fmt::format("job '{}': application index {} is not one of the {} "
                      "applications (a run's jobs are "
                      "either all goodput-driven or all fixed-duration)",
                      j.job.id, j.application, apps));
    if (chooses && (!(j.batch_size >= 0.0) || !std::isfinite(j.batch_size)))
      throw std::invalid_argument(fmt::format(
          "job '{}': batch_size must be finite and >= 0 (0: the job chooses), got {}",
          j.job.id, j.batch_size));
    if (!chooses && (!(j.batch_size > 0.0) || !std::isfinite(j.batch_size)))
      throw std::invalid_argument(
          fmt::format("job '{}': batch_size must be finite and > 0, got {}", j.job.id,
                      j.batch_size));
    if (j.job.gpus_per_worker != 1)
      throw std::invalid_argument(fmt::format(
          "job '{}': a goodput-driven job runs one-GPU replicas (gpus_per_worker = 1)",
          j.job.id));
    if (allocator == Allocator::tiresias && j.job.elastic())
      throw std::invalid_argument(fmt::format(
          "job '{}': under Tiresias a goodput-driven job runs a fixed number of "
          "replicas (min_workers = max_workers)",
          j.job.id));
    if (!(j.work_scale > 0.0) || !std::isfinite(j.work_scale))
      throw std::invalid_argument(
          fmt::format("job '{}': work_scale must be finite and > 0, got {}", j.job.id,
                      j.work_scale));
  }
  if (allocator == Allocator::kernel && config_.policy != AllocationPolicy::aryl)
    throw std::invalid_argument(
        "goodput-driven jobs need an allocator for them: policy 'tiresias', "
        "'pollux' or 'aryl'");
  if (config_.tuned && allocator != Allocator::kernel)
    throw std::invalid_argument("tuned jobs (a Pollux agent each) need policy 'aryl'");
  if (lender_.active())
    throw std::invalid_argument(
        "goodput-driven runs do not lend inference servers (no load)");
  if (!(config_.reallocation_overhead >= 0.0) || !(config_.tiresias_threshold >= 0.0))
    throw std::invalid_argument(
        "reallocation_overhead and tiresias_threshold must be >= 0");
}

// Job j's goodput-driven state: it learns (carries a Pollux agent) under the
// Pollux policy and in tuned kernel runs; under the kernel its curve is its
// progress rate on 1..max replicas with the batches it would run.
void Engine::add_goodput_job(int j) {
  const SimJob& job = jobs_[at(j)];
  const bool learning = config_.allocator == Allocator::pollux || config_.tuned;
  goodput_.emplace_back(applications_[at(job.application)], job.batch_size, learning,
                        job.work_scale);
  state_[at(j)].work = goodput_.back().total();
  if (config_.allocator != Allocator::kernel) return;
  if (job.throughput.empty()) {  // its own curve, not its shape's
    curve_of_[at(j)] = static_cast<std::uint32_t>(curves_.size());
    curves_.push_back(goodput_.back().rate_curve(job.job.max_workers, node_gpus_));
  }
  views_.emplace_back();
  stale_.push_back(0);
}

void Engine::on_round() {
  const double interval = now() - last_round_;
  step_goodput(last_round_, interval);
  last_round_ = now();
  const bool changed = std::exchange(dirty_, false);
  switch (config_.allocator) {
    case Allocator::pollux:
      pollux_allocate(interval);
      break;
    case Allocator::tiresias:
      tiresias_allocate(interval);
      break;
    case Allocator::kernel:  // as in fixed-duration runs, quiet rounds are skipped
      if (changed) kernel_allocate();
      break;
  }
  if (static_cast<double>(++accounting_.result().epochs_run) > max_steps)  // unbounded
    throw std::invalid_argument(fmt::format(
        "the run passed {:g} scheduling rounds of {:g} s with jobs unfinished: their "
        "work is too large for this cluster (a huge work_scale?); set a horizon or "
        "shorten the jobs",
        max_steps, config_.schedule_interval));
}

// Every running job advances over [from, from + seconds]; those that complete
// inside it are done at their own completion time.
void Engine::step_goodput(double from, double seconds) {
  const std::vector<int> running = running_ids_.ids();  // complete() edits the list
  for (const int j : running) {
    GoodputJob& g = goodput_[at(j)];
    JobProgress& s = state_[at(j)];
    const std::size_t profiles = g.learner() ? g.learner()->profile().size() : 0;
    const int epoch = g.epoch();
    const double at_time = g.step(from, seconds);
    if (config_.tuned) note_learning(j, profiles, epoch);
    accounting_.delivered(g.progress() - s.done);
    s.done = g.progress();
    s.updated = now();
    if (g.completed()) complete(j, at_time);
  }
}

// Job j's GPUs become `allocation` (server of each GPU, in the order taken;
// empty: stopped). Only called when the allocation changes.
void Engine::reallocate(int j, const std::vector<int>& allocation) {
  std::vector<Placed> workers;
  workers.reserve(allocation.size());
  for (const int server : allocation) workers.push_back({server, false});
  reassign(j, workers);
}

// Job j's workers become `workers` (one GPU each, a server's together; empty:
// stopped): it is re-placed, re-chooses its batch and pays the reallocation
// overhead.
void Engine::reassign(int j, const std::vector<Placed>& workers) {
  const bool was_running = status_of(j) == Status::running;
  const std::size_t held = workers_[at(j)].size();
  clear_workers(j);
  std::vector<int> allocation;
  allocation.reserve(workers.size());
  for (const Placed& p : workers) {
    add_worker(j, p.server, p.flexible);
    allocation.push_back(p.server);
  }
  goodput_[at(j)].reallocate(allocation_placement(allocation),
                             config_.reallocation_overhead);
  history_.changed(j, now(),
                   !was_running         ? Change::start
                   : allocation.empty() ? Change::preemption
                                        : resized(held, allocation.size()),
                   workers_[at(j)]);
  if (!allocation.empty() && !was_running) {
    status_[at(j)] = Status::running;
    queue_.erase(fifo_key(j));
    running_ids_.started(j);
    accounting_.started(j, now());
  } else if (allocation.empty() && was_running) {
    status_[at(j)] = Status::queued;
    running_ids_.stopped(j);
    queue_.insert(fifo_key(j));
    accounting_.preempted(j, 0.0);
  } else {
    accounting_.scaled(j);
  }
}

}  // namespace aryl::sim
