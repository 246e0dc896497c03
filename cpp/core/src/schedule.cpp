#include "aryl/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <queue>
#include <stdexcept>

#include "index.hpp"

#include "aryl/knapsack.hpp"

namespace aryl {
namespace {

using detail::at;


// One scheduling epoch: the state split into fixed and flexible workers, the
// placer holding the fixed ones, and the decision being built.
class Epoch {
 public:
  Epoch(const ClusterState& state, const ScheduleOptions& options)
      : state_(state), options_(options), placer_(state, options.placement),
        count_(worker_counts(state)), flexible_(state.workers.size(), 0),
        fixed_(state.jobs.size(), 0), extra_(state.jobs.size(), 0),
        released_(state.jobs.size(), 0) {
    if (!options.remaining.empty() && options.remaining.size() != state.jobs.size())
      throw std::invalid_argument(fmt::format(
          "remaining has {} entries for {} jobs", options.remaining.size(), state.jobs.size()));
    for (std::size_t j = 0; j < options.remaining.size(); ++j)
      if (!(options.remaining[j] > 0.0 && options.remaining[j] <= 1.0))
        throw std::invalid_argument(fmt::format("job '{}': remaining must be in (0, 1], got {}",
                                                state.jobs[j].id, options.remaining[j]));
    split_base_and_flexible();
    for (std::size_t w = 0; w < state.workers.size(); ++w)
      if (!flexible_[w]) {
        placer_.keep(state.workers[w]);
        ++fixed_[at(state.workers[w].job)];
      }
  }

  Decision run() {
    admit(queue_order());
    if (scales_elastic_jobs(options_.policy)) grow();
    return finish();
  }

 private:
  [[nodiscard]] const Job& job(int j) const { return state_.jobs[at(j)]; }
  [[nodiscard]] double remaining(int j) const {
    return options_.remaining.empty() ? 1.0 : options_.remaining[at(j)];
  }
  [[nodiscard]] bool running(int j) const { return count_[at(j)] > 0; }

  // Under elastic policies a running elastic job's workers beyond its base are
  // flexible: released for this epoch's allocation, kept where it is renewed.
  void split_base_and_flexible() {
    if (!scales_elastic_jobs(options_.policy)) return;
    std::vector<int> base(state_.jobs.size(), 0);
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t w = 0; w < state_.workers.size(); ++w) {
        const Worker& worker = state_.workers[w];
        if (worker.flexible != (pass == 1)) continue;
        if (base[at(worker.job)] < job(worker.job).min_workers) {
          ++base[at(worker.job)];
        } else {
          flexible_[w] = 1;
          ++released_[at(worker.job)];
        }
      }
  }

  [[nodiscard]] int base_demand(int j) const { return aryl::base_demand(job(j), options_.policy); }

  [[nodiscard]] std::vector<int> queue_order() const {
    std::vector<int> queue;
    for (int j = 0; j < static_cast<int>(state_.jobs.size()); ++j)
      if (!running(j)) queue.push_back(j);
    const bool shortest_first =
        options_.policy == AllocationPolicy::aryl || options_.policy == AllocationPolicy::sjf;
    std::stable_sort(queue.begin(), queue.end(), [&](int a, int b) {
      if (shortest_first) {
        const double ta = running_time(job(a), base_demand(a), remaining(a));
        const double tb = running_time(job(b), base_demand(b), remaining(b));
        if (ta != tb) return ta < tb;
      }
      return job(a).submit_time < job(b).submit_time;
    });
    return queue;
  }

  // Phase 1: base demand in queue order; a job that cannot be placed is skipped
  // (strict fifo stops there).
  void admit(const std::vector<int>& queue) {
    const bool strict = options_.policy == AllocationPolicy::fifo && !options_.backfill;
    bool blocked = false;
    for (int j : queue) {
      if (!blocked && placer_.place(j, base_demand(j), false, decision_.start)) {
        fixed_[at(j)] = base_demand(j);
      } else {
        decision_.pending.push_back(j);
        blocked = strict;
      }
    }
  }

  // Elastic jobs that can take extra workers now: running elastic and admitted.
  [[nodiscard]] std::vector<int> elastic_jobs() const {
    std::vector<int> jobs;
    for (int j = 0; j < static_cast<int>(state_.jobs.size()); ++j)
      if (job(j).elastic() && fixed_[at(j)] > 0) jobs.push_back(j);
    return jobs;
  }

  // Phase 2 under each elastic policy: a target of extra workers per job.
  void grow() {
    const std::vector<int> jobs = elastic_jobs();
    std::vector<int> target(state_.jobs.size(), 0);
    switch (options_.policy) {
      case AllocationPolicy::aryl: target = knapsack_targets(jobs); break;
      case AllocationPolicy::gandiva: target = gandiva_targets(jobs); break;
      case AllocationPolicy::afs: afs_grow(jobs); return;
      default: return;
    }
    keep_flexible(target);
    // Largest per-worker demand first (best-fit decreasing), then job order.
    std::vector<int> order = jobs;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return job(a).gpus_per_worker > job(b).gpus_per_worker;
    });
    for (int j : order)
      while (extra_[at(j)] < target[at(j)] && placer_.place(j, 1, true, decision_.start))
        ++extra_[at(j)];
  }

  // aryl: item w of job j is "w more workers", weight w x D GPUs, value the
  // running-time reduction T(min) - T(min + w) on the job's remaining work.
  [[nodiscard]] std::vector<int> knapsack_targets(const std::vector<int>& jobs) const {
    std::vector<std::vector<KnapsackItem>> groups;
    for (int j : jobs) {
      const Job& jb = job(j);
      auto& items = groups.emplace_back();
      const double base_time = running_time(jb, jb.min_workers, remaining(j));
      for (int w = 1; w <= jb.max_workers - jb.min_workers; ++w)
        items.push_back({w * jb.gpus_per_worker,
                         base_time - running_time(jb, jb.min_workers + w, remaining(j))});
    }
    // Flexible workers were never added to the placer: their GPUs count as free.
    const std::vector<int> choice = knapsack(groups, placer_.free_gpus());
    std::vector<int> target(state_.jobs.size(), 0);
    for (std::size_t g = 0; g < jobs.size(); ++g) target[at(jobs[g])] = choice[g] + 1;
    return target;
  }

  // Gandiva: opportunistic. Grow to max in arrival order only when nothing is
  // pending; otherwise keep what the jobs have (phase 1 already shrank them).
  [[nodiscard]] std::vector<int> gandiva_targets(const std::vector<int>& jobs) const {
    std::vector<int> target(state_.jobs.size(), 0);
    for (int j : jobs)
      target[at(j)] = decision_.pending.empty() ? job(j).max_workers - job(j).min_workers
                                                : current_flexible(j);
    return target;
  }

  // AFS: one worker at a time to the job with the largest throughput gain per
  // GPU, throughput being the fraction of the job done per second: adding a
  // worker to job j gains 1/T(k+1) - 1/T(k), divided by its D GPUs.
  void afs_grow(const std::vector<int>& jobs) {
    const auto gain = [&](int j) {
      const int k = fixed_[at(j)] + extra_[at(j)];
      return (1.0 / running_time(job(j), k + 1, remaining(j)) -
              1.0 / running_time(job(j), k, remaining(j))) / job(j).gpus_per_worker;
    };
    using Entry = std::pair<double, int>;  // (gain, -job): ties to the lower job index
    std::priority_queue<Entry> heap;
    for (int j : jobs) heap.emplace(gain(j), -j);
    keep_flexible(std::vector<int>(state_.jobs.size(), 0));  // re-placed below
    while (!heap.empty()) {
      const int j = -heap.top().second;
      heap.pop();
      if (fixed_[at(j)] + extra_[at(j)] >= job(j).max_workers) continue;
      if (!placer_.place(j, 1, true, decision_.start)) continue;
      ++extra_[at(j)];
      heap.emplace(gain(j), -j);
    }
  }

  [[nodiscard]] int current_flexible(int j) const { return released_[at(j)]; }

  // Keeps up to target[j] of each job's current flexible workers where they are
  // (if their server still has room after phase 1); the rest are stopped.
  void keep_flexible(const std::vector<int>& target) {
    for (std::size_t w = 0; w < state_.workers.size(); ++w) {
      if (!flexible_[w]) continue;
      const Worker& worker = state_.workers[w];
      if (extra_[at(worker.job)] < target[at(worker.job)] && placer_.keep(worker))
        ++extra_[at(worker.job)];
      else
        decision_.stop.push_back(static_cast<int>(w));
    }
  }

  // A worker stopped and started again on the same server is no change at all.
  void reuse_stopped_workers() {
    std::vector<int> stop;
    for (int w : decision_.stop) {
      const Worker& old = state_.workers[at(w)];
      const auto same = std::find_if(decision_.start.begin(), decision_.start.end(), [&](const Worker& n) {
        return n.flexible && n.job == old.job && n.server == old.server;
      });
      if (same != decision_.start.end()) decision_.start.erase(same);
      else stop.push_back(w);
    }
    decision_.stop = stop;
  }

  Decision finish() {
    reuse_stopped_workers();
    decision_.allocation.assign(state_.jobs.size(), 0);
    for (int j = 0; j < static_cast<int>(state_.jobs.size()); ++j)
      decision_.allocation[at(j)] = scales_elastic_jobs(options_.policy) || !running(j)
                                        ? fixed_[at(j)] + extra_[at(j)]
                                        : count_[at(j)];
    return decision_;
  }

  const ClusterState& state_;
  const ScheduleOptions& options_;
  Placer placer_;
  std::vector<int> count_;     // job -> workers before the decision
  std::vector<char> flexible_; // worker -> released for this epoch
  std::vector<int> fixed_;     // job -> base workers after the decision
  std::vector<int> extra_;     // job -> flexible workers after the decision
  std::vector<int> released_;  // job -> flexible workers before the decision
  Decision decision_;
};

}  // namespace

AllocationPolicy parse_allocation_policy(std::string_view name) {
  if (name == "aryl") return AllocationPolicy::aryl;
  if (name == "fifo") return AllocationPolicy::fifo;
  if (name == "sjf") return AllocationPolicy::sjf;
  if (name == "gandiva") return AllocationPolicy::gandiva;
  if (name == "afs") return AllocationPolicy::afs;
  throw std::invalid_argument(fmt::format(
      "unknown allocation policy '{}'; expected one of: aryl, fifo, sjf, gandiva, afs", name));
}

bool scales_elastic_jobs(AllocationPolicy policy) {
  return policy == AllocationPolicy::aryl || policy == AllocationPolicy::gandiva ||
         policy == AllocationPolicy::afs;
}

int base_demand(const Job& job, AllocationPolicy policy) {
  return scales_elastic_jobs(policy) ? job.min_workers : job.max_workers;
}

double running_time(const Job& job, int workers, double remaining) {
  return job.estimated_duration * job.max_workers / workers * remaining;
}

Decision schedule(const ClusterState& state, const ScheduleOptions& options) {
  return Epoch(state, options).run();
}

}  // namespace aryl
