// The queue the kernel pulls from at an epoch of fixed-duration jobs
// (ScheduleOptions::feed): the queued jobs kept across epochs in the kernel's
// admission order, handed over one at a time, so that an epoch's work follows
// the jobs it admits, not the queue's length. The state then holds the running
// jobs and the jobs pulled, and the kernel decides as on every queued job.
#include <algorithm>
#include <stdexcept>

#include "engine.hpp"

namespace aryl::sim {

// The kernel's admission order (schedule.cpp, queue_order): under aryl and sjf
// the running time of the job's remaining work at its base demand, then submit
// time, then arrival; else arrival order. A queued job's remaining work does not
// move, so its key holds while it waits.
Engine::AdmitKey Engine::admit_key(int j) const {
  const Job& job = jobs_[at(j)].job;
  const bool shortest_first = config_.policy == AllocationPolicy::aryl ||
                              config_.policy == AllocationPolicy::sjf;
  static const std::vector<double> linear;
  const double time = shortest_first ? running_time(job, demand(job),
                                                    state_[at(j)].remaining_fraction(),
                                                    linear_ ? linear : curve(j))
                                     : 0.0;
  return {time, job.submit_time, j};
}

int Engine::demand_gpus(int j) const {
  const Job& job = jobs_[at(j)].job;
  return demand(job) * job.gpus_per_worker;
}

void Engine::enqueue(int j) {
  queue_.insert(fifo_key(j));
  if (!pulls_) return;
  const Job& job = jobs_[at(j)].job;
  const auto named = bucket_named_.try_emplace(
      {job.gpu_type, job.hetero, job.gpus_per_worker, demand(job), job.elastic()},
      static_cast<std::uint32_t>(buckets_.size()));
  if (named.second)
    buckets_.push_back({job.gpu_type,
                        job.hetero,
                        job.gpus_per_worker,
                        demand(job),
                        job.elastic(),
                        {},
                        {}});
  bucket_of_[at(j)] = named.first->second;
  buckets_[named.first->second].jobs.insert(admit_key(j));
}

void Engine::dequeue(int j) {
  queue_.erase(fifo_key(j));
  if (pulls_ && buckets_[bucket_of_[at(j)]].jobs.erase(admit_key(j)) != 1)
    throw std::logic_error("the admission order lost a queued job");
}

// Whether the kernel runs at this epoch, as when the state held the startable
// queued jobs (snapshot.cpp): some job runs, or some queued job's base demand
// fits in the GPUs free or flexible (under strict fifo the first one's; under
// gandiva any queued job).
bool Engine::kernel_would_run() const {
  if (!running_ids_.empty()) return true;
  if (queue_.empty()) return false;
  if (config_.policy == AllocationPolicy::gandiva) return true;
  const int bound = releasable_gpus();
  if (config_.policy == AllocationPolicy::fifo && !config_.backfill)
    return demand_gpus(queue_.begin()->second) <= bound;
  for (const Bucket& b : buckets_)
    if (!b.jobs.empty() && b.workers * b.gpus_per_worker <= bound) return true;
  return false;
}

void Engine::start_pulling(std::vector<int>& job_of) {
  for (Bucket& b : buckets_) {
    b.next = b.jobs.begin();
    b.refused_from = std::numeric_limits<double>::infinity();
  }
  refusing_ = passed_over_ = false;
  pull_job_of_ = &job_of;
  options_.feed = this;
}

void Engine::stop_pulling() {
  options_.feed = nullptr;
  pull_job_of_ = nullptr;
}

// The first job in the kernel's order among the buckets within their room (all
// buckets under strict fifo: the first job must be within its room). Buckets
// are tried in the order of their next job, so that the room (a scan of the
// placer's free slots) is asked of as few as need be.
std::int64_t Engine::pull(const Room& room) {
  const bool strict = config_.policy == AllocationPolicy::fifo && !config_.backfill;
  tried_.clear();
  for (Bucket& b : buckets_)
    if (b.next != b.jobs.end() && std::get<0>(*b.next) < b.refused_from)
      tried_.push_back(&b);
  const auto by_next = [](const Bucket* a, const Bucket* b) {
    return *a->next < *b->next;
  };
  Bucket* first = nullptr;
  for (auto k = tried_.begin(); k != tried_.end() && first == nullptr; ++k) {
    std::iter_swap(k, std::min_element(k, tried_.end(), by_next));
    Bucket& b = **k;
    if (b.workers <= room(b.gpu_type, b.hetero, b.gpus_per_worker))
      first = &b;
    else if (strict)
      return -1;
  }
  if (first == nullptr) return -1;
  pulled_from_ = first;
  pulled_key_ = *first->next;
  const int j = std::get<2>(*first->next++);
  record_at_[at(j)] = static_cast<std::uint32_t>(snapshot_.jobs.size());
  snapshot_.jobs.push_back(jobs_[at(j)].job);
  snapshot_job_of_.push_back(j);
  pull_job_of_->push_back(j);
  options_.remaining.push_back(state_[at(j)].remaining_fraction());
  if (!linear_) options_.throughput.push_back(curve(j));
  ++accounting_.result().engine.jobs_pulled;
  return j;
}

bool Engine::drained() const {
  return !passed_over_ &&
         std::all_of(buckets_.begin(), buckets_.end(),
                     [](const Bucket& b) { return b.next == b.jobs.end(); });
}

// The kernel refused the last pulled job for faster GPUs (QueueFeed): in the
// shortest-first order its bucket's later jobs are refused too from a base-demand
// time refuse_margin longer, until the next admission. Saturated, this is what
// keeps an epoch from pulling every queued job that may run on lent GPUs.
void Engine::refused_for_faster() {
  if (config_.policy != AllocationPolicy::aryl &&
      config_.policy != AllocationPolicy::sjf)
    return;  // arrival order: the time is not the key
  pulled_from_->refused_from =
      std::get<0>(pulled_key_) * (1.0 + QueueFeed::refuse_margin);
  refusing_ = true;
}

// An admission changes the room: the buckets passed over resume after the
// admitted job (those before it in the order were refused, as they would have
// been pulled and refused before it).
void Engine::admitted() {
  if (!refusing_) return;
  refusing_ = false;
  for (Bucket& b : buckets_) {
    if (b.refused_from == std::numeric_limits<double>::infinity()) continue;
    b.refused_from = std::numeric_limits<double>::infinity();
    if (b.next == b.jobs.end() || !(*b.next < pulled_key_)) continue;
    b.next = b.jobs.upper_bound(pulled_key_);
    passed_over_ = true;
  }
}

// Under the feed the snapshot leaves out the running jobs the kernel could not
// change: all their workers are base workers the layout holds, and no policy
// stops a base worker (start_on_loan's moves, which do, need the whole queue and
// so no feed). Under a policy that scales elastic jobs it keeps those.
bool Engine::left_out(int j) const { return !changeable_[at(j)]; }

// The left-out jobs' estimated releases, as the kernel's estimate_releases
// computes them for a running job in its state: its remaining work at its
// workers' mean GPU speed (with the hetero efficiency when they span GPU types),
// summed in the order of its workers, which is the order the snapshot keeps.
void Engine::left_out_releases(Releases& releases) const {
  static const std::vector<double> linear;
  std::vector<int> gpus(at(layout_->n_types()), 0);
  for (const int j : running_ids_) {
    if (!left_out(j)) continue;
    const Job& job = jobs_[at(j)].job;
    double speed = 0.0;
    int type = -1;  // -2: several
    std::fill(gpus.begin(), gpus.end(), 0);
    for (const Placed& p : workers_[at(j)]) {
      speed += speed_[at(p.server)];
      const int t = layout_->type_of(p.server);
      type = type == -1 || type == t ? t : -2;
      gpus[at(t)] += job.gpus_per_worker;
    }
    const int workers = static_cast<int>(workers_[at(j)].size());
    speed /= workers;
    if (type == -2) speed *= config_.hetero_efficiency;
    const double left = running_time(job, workers, state_[at(j)].remaining_fraction(),
                                     linear_ ? linear : curve(j), speed);
    for (std::size_t t = 0; t < gpus.size(); ++t)
      if (gpus[t] > 0) releases[t].emplace_back(left, gpus[t]);
  }
}

// The order in which apply() visits the jobs a decision changed: state order,
// the pulled jobs in arrival order after the others (as a state holding the
// whole queue had them), so that events are queued as they always were.
std::vector<int> Engine::apply_order(const std::vector<int>& changed,
                                     const std::vector<int>& job_of) const {
  std::vector<int> order = changed;
  const auto first = static_cast<int>(first_pulled_);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if ((a >= first) != (b >= first)) return a < b;
    return a < first ? a < b : fifo_key(job_of[at(a)]) < fifo_key(job_of[at(b)]);
  });
  return order;
}

}  // namespace aryl::sim
