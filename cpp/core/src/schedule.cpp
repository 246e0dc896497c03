// One scheduling epoch (Algorithm 2): the Epoch class's phases (base demand in
// queue order, the knapsack's extra workers, placement, start on loan's moves,
// the queue feed) share one set of per-job tables, so they stay in one file,
// over the ~500-line bar: split, each phase would reach into the others' state.
// The knapsack and the placer have their own files (knapsack.cpp, placement.cpp).
#include "aryl/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <utility>

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
      : state_(state),
        options_(options),
        placer_(options.layout ? Placer(state, options.placement, options.layout)
                               : Placer(state, options.placement, options.speed)),
        count_(worker_counts(state)),
        flexible_(state.workers.size(), 0),
        fixed_(state.jobs.size(), 0),
        extra_(state.jobs.size(), 0),
        released_(state.jobs.size(), 0),
        base_speed_(state.jobs.size(), 0.0),
        base_type_(state.jobs.size(), -1),
        flexible_type_(state.jobs.size(), -1),
        first_pulled_(state.jobs.size()) {
    check_options();
    split_base_and_flexible();
    const bool in_place = placer_.holds_base();
    for (std::size_t w = 0; w < state.workers.size(); ++w)
      if (!flexible_[w]) {
        if (in_place)
          placer_.pin(state.workers[w]);
        else
          placer_.keep(state.workers[w]);
        add_base(state.workers[w]);
      }
  }

  Decision run() {
    if (options_.feed)
      admit_pulled();
    else
      admit(options_.queue ? *options_.queue : queue_order());
    if (options_.queue) leave_unlisted_queued();
    if (scales_elastic_jobs(options_.policy)) grow();
    return finish();
  }

 private:
  [[nodiscard]] const Job& job(int j) const { return state_.jobs[at(j)]; }
  [[nodiscard]] double remaining(int j) const {
    return options_.remaining.empty() ? 1.0 : options_.remaining[at(j)];
  }
  [[nodiscard]] bool running(int j) const { return count_[at(j)] > 0; }
  [[nodiscard]] const std::vector<double>& curve(int j) const {
    static const std::vector<double> linear;
    return options_.throughput.empty() ? linear : options_.throughput[at(j)];
  }
  [[nodiscard]] double server_speed(int s) const {
    return options_.speed.empty() ? placer_.type_speed(placer_.type_of(s))
                                  : options_.speed[at(s)];
  }

  void check_options() const {
    const std::size_t n = state_.jobs.size();
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument(what);
    };
    if (!options_.remaining.empty() && options_.remaining.size() != n)
      fail(fmt::format("remaining has {} entries for {} jobs",
                       options_.remaining.size(), n));
    for (std::size_t j = 0; j < options_.remaining.size(); ++j)
      if (!(options_.remaining[j] > 0.0 && options_.remaining[j] <= 1.0))
        fail(fmt::format("job '{}': remaining must be in (0, 1], got {}",
                         state_.jobs[j].id, options_.remaining[j]));
    if (!options_.speed.empty() && options_.speed.size() != state_.servers.size())
      fail(fmt::format("speed has {} entries for {} servers", options_.speed.size(),
                       state_.servers.size()));
    for (std::size_t s = 0; s < options_.speed.size(); ++s)
      if (!(options_.speed[s] > 0.0 && std::isfinite(options_.speed[s])))
        fail(fmt::format("server '{}': speed must be finite and > 0, got {}",
                         state_.servers[s].id, options_.speed[s]));
    if (options_.queue) {
      std::vector<char> seen(n, 0);
      for (const int j : *options_.queue) {
        if (j < 0 || at(j) >= n)
          fail(fmt::format("queue names job {}, but there are {} jobs", j, n));
        if (running(j))
          fail(fmt::format("queue names job '{}', which is running",
                           state_.jobs[at(j)].id));
        if (seen[at(j)]++ != 0)
          fail(fmt::format("queue names job '{}' twice", state_.jobs[at(j)].id));
      }
    }
    if (options_.feed && (options_.queue || !options_.may_grow.empty()))
      fail("a queue feed replaces the options' queue and may_grow");
    // Movers are ordered among the whole queue, which a feed does not hold.
    if (options_.feed && options_.start_on_loan)
      fail("a queue feed does not offer movers: start_on_loan needs the whole queue");
    if (!options_.may_grow.empty() && options_.may_grow.size() != n)
      fail(fmt::format("may_grow has {} entries for {} jobs", options_.may_grow.size(),
                       n));
    if (!(options_.hetero_efficiency > 0.0 && options_.hetero_efficiency <= 1.0))
      fail(fmt::format("hetero_efficiency must be in (0, 1], got {}",
                       options_.hetero_efficiency));
    check_curves(state_, options_.throughput);
  }

  // Base workers fix a job's speed: their summed GPU speed and their GPU type
  // (-1 none yet, -2 several).
  void add_base(const Worker& w) {
    const std::size_t j = at(w.job);
    ++fixed_[j];
    base_speed_[j] += server_speed(w.server);
    const int type = placer_.type_of(w.server);
    base_type_[j] = base_type_[j] == -1 || base_type_[j] == type ? type : -2;
  }

  // Estimated running time of job j's remaining work on its base workers plus
  // `extra` workers of GPU type `type`: throughput x mean speed, times the
  // hetero efficiency when the workers span GPU types.
  [[nodiscard]] double time_with(int j, int extra, int type) const {
    const int base = fixed_[at(j)];
    const int workers = base + extra;
    double speed =
        base_speed_[at(j)] + (extra > 0 ? extra * placer_.type_speed(type) : 0.0);
    speed /= workers;
    const int first = base_type_[at(j)];
    if (first == -2 || (extra > 0 && first >= 0 && first != type))
      speed *= options_.hetero_efficiency;
    return running_time(job(j), workers, remaining(j), curve(j), speed);
  }

  // The GPU type job j's extra workers would use: its own unless hetero; a
  // hetero job's is the type on which the most extra workers that fit now
  // would finish it soonest. -1 if no type has room or none would shorten it.
  [[nodiscard]] int flexible_type(int j) const {
    const Job& jb = job(j);
    if (!jb.hetero) return placer_.job_type(j);
    int best = -1;
    double best_time = time_with(j, 0, 0);
    for (int t = 0; t < placer_.n_types(); ++t) {
      if (!placer_.may_use(j, t)) continue;
      const int fit = std::min(jb.max_workers - fixed_[at(j)],
                               placer_.free_gpus(t) / jb.gpus_per_worker);
      if (fit < 1) continue;
      const double time = time_with(j, fit, t);
      if (time < best_time * (1.0 - 1e-12)) {
        best = t;
        best_time = time;
      }
    }
    return best;
  }

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

  // Queued jobs the caller's queue does not list stay queued (pending).
  void leave_unlisted_queued() {
    std::vector<char> listed(state_.jobs.size(), 0);
    for (int j : *options_.queue) listed[at(j)] = 1;
    for (int j = 0; j < static_cast<int>(state_.jobs.size()); ++j)
      if (!running(j) && !listed[at(j)]) decision_.pending.push_back(j);
  }

  [[nodiscard]] int base_demand(int j) const {
    return aryl::base_demand(job(j), options_.policy);
  }

  [[nodiscard]] std::vector<int> queue_order() const {
    std::vector<int> queue;
    queue.reserve(state_.jobs.size());
    for (int j = 0; j < static_cast<int>(state_.jobs.size()); ++j)
      if (!running(j) || (options_.start_on_loan && mover(j))) queue.push_back(j);
    const bool shortest_first = options_.policy == AllocationPolicy::aryl ||
                                options_.policy == AllocationPolicy::sjf;
    // Keys computed once per job, not once per comparison.
    std::vector<double> time(state_.jobs.size(), 0.0);
    if (shortest_first)
      for (int j : queue)
        time[at(j)] = running_time(job(j), base_demand(j), remaining(j), curve(j));
    std::stable_sort(queue.begin(), queue.end(), [&](int a, int b) {
      if (time[at(a)] != time[at(b)]) return time[at(a)] < time[at(b)];
      return job(a).submit_time < job(b).submit_time;
    });
    return queue;
  }

  // Phase 1: base demand in queue order; a job that cannot be placed, or is
  // better off waiting for faster GPUs, is skipped (strict fifo stops there).
  void admit(const std::vector<int>& queue) {
    const bool strict = options_.policy == AllocationPolicy::fifo && !options_.backfill;
    bool blocked = false;
    for (int j : queue) {
      if (running(j)) {  // a mover (start_on_loan): it runs on either way
        if (!blocked) move_one(j);
        continue;
      }
      if (!blocked && admit_one(j)) continue;
      decision_.pending.push_back(j);
      blocked = strict;
    }
  }

  // Phase 1 from a feed (ScheduleOptions::feed): the same admissions as admit()
  // over a state holding every queued job, in the same order, pulling each job
  // when its turn comes. The feed passes over jobs whose base workers exceed the
  // room the placer has for them: admit_one would skip them (room only shrinks
  // as phase 1 goes on). Under strict fifo the first job skipped ends it.
  void admit_pulled() {
    const bool strict = options_.policy == AllocationPolicy::fifo && !options_.backfill;
    const QueueFeed::Room room = [this](const std::string& type, bool hetero,
                                        int gpus) {
      return placer_.room(type, hetero, gpus);
    };
    for (std::int64_t rank = 0; (rank = options_.feed->pull(room)) >= 0;) {
      const int j = add_pulled(rank);
      refused_for_faster_ = false;
      if (admit_one(j)) {
        options_.feed->admitted();
        continue;
      }
      decision_.pending.push_back(j);
      if (strict) break;
      if (refused_for_faster_) options_.feed->refused_for_faster();
    }
    left_queued_ = !options_.feed->drained();
  }

  // Makes room for the job the feed just appended to the state; returns it.
  int add_pulled(std::int64_t rank) {
    const std::size_t n = state_.jobs.size();
    if ((!options_.remaining.empty() && options_.remaining.size() != n) ||
        (!options_.throughput.empty() && options_.throughput.size() != n))
      throw std::logic_error("a queue feed must add one remaining and curve per job");
    for (auto* v : {&count_, &fixed_, &extra_, &released_}) v->resize(n, 0);
    for (auto* v : {&base_type_, &flexible_type_}) v->resize(n, -1);
    base_speed_.resize(n, 0.0);
    placer_.add_jobs(n);
    pulled_rank_.push_back(rank);
    return static_cast<int>(n) - 1;
  }

  // Whether every queued job was admitted (pulled or not).
  [[nodiscard]] bool none_pending() const {
    return decision_.pending.empty() && !left_queued_;
  }

  // Places job j's base demand (fastest GPUs first). If only slower GPUs were
  // open, the job takes them only when it would finish sooner there than by
  // waiting for its fastest GPU type (wait_for), or always under start_on_loan
  // (it may move later: move_one).
  bool admit_one(int j) {
    const std::size_t first = decision_.start.size();
    if (!placer_.place(j, base_demand(j), false, decision_.start)) return false;
    const std::vector<Worker> placed(
        decision_.start.begin() + static_cast<std::ptrdiff_t>(first),
        decision_.start.end());
    const int fast = fastest_type(j);
    const double speed = mean_speed(placed);
    if (!options_.start_on_loan && speed < placer_.type_speed(fast) * (1.0 - 1e-12)) {
      placer_.undo(placed);
      const auto time_at = [&](double s) {
        return running_time(job(j), base_demand(j), remaining(j), curve(j), s);
      };
      if (wait_for(j, fast) + time_at(placer_.type_speed(fast)) < time_at(speed)) {
        decision_.start.resize(first);
        refused_for_faster_ =
            speed < placer_.type_speed(fast) * (1.0 - QueueFeed::slower_margin);
        return false;
      }
      for (const Worker& w : placed) placer_.keep(w);
    }
    for (const Worker& w : placed) add_base(w);
    return true;
  }

  // Start on loan: whether running job j's base workers (all of its base
  // demand) run slower than its fastest GPU type.
  [[nodiscard]] bool mover(int j) const {
    const std::size_t k = at(j);
    if (fixed_[k] == 0 || fixed_[k] != base_demand(j)) return false;
    const int fast = fastest_type(j);
    const double speed = base_speed_[k] / fixed_[k] *
                         (base_type_[k] == -2 ? options_.hetero_efficiency : 1.0);
    return fast >= 0 && speed < placer_.type_speed(fast) * (1.0 - 1e-12);
  }

  // Start on loan: moves mover j's base workers to its fastest GPU type if its
  // base demand fits there now and the move pays (ScheduleOptions): its time
  // there at base demand plus the overhead is shorter than its time on all the
  // workers it holds now. Its old workers' GPUs are free at once for the jobs
  // after it in the queue.
  void move_one(int j) {
    const int fast = fastest_type(j);
    if (placer_.free_gpus(fast) < base_demand(j) * job(j).gpus_per_worker) return;
    std::vector<int> base;     // its base workers' indices
    std::vector<Worker> held;  // all its workers
    for (std::size_t w = 0; w < state_.workers.size(); ++w)
      if (state_.workers[w].job == j) {
        held.push_back(state_.workers[w]);
        if (!flexible_[w]) base.push_back(static_cast<int>(w));
      }
    const double here = running_time(job(j), static_cast<int>(held.size()),
                                     remaining(j), curve(j), mean_speed(held));
    const double there = running_time(job(j), base_demand(j), remaining(j), curve(j),
                                      placer_.type_speed(fast));
    if (!(there + options_.move_overhead < here)) return;
    std::vector<Worker> old;
    for (const int w : base) old.push_back(state_.workers[at(w)]);
    placer_.undo(old);  // frees their GPUs and unties the job from their type
    const std::size_t first = decision_.start.size();
    if (!placer_.place(j, base_demand(j), false, decision_.start, fast)) {
      for (const Worker& w : old) placer_.keep(w);
      return;
    }
    fixed_[at(j)] = 0;
    base_speed_[at(j)] = 0.0;
    base_type_[at(j)] = -1;
    for (std::size_t k = first; k < decision_.start.size(); ++k)
      add_base(decision_.start[k]);
    decision_.stop.insert(decision_.stop.end(), base.begin(), base.end());
    decision_.moved.push_back(j);
    if (moved_.empty()) moved_.assign(state_.jobs.size(), 0);
    moved_[at(j)] = 1;
  }

  // Mean GPU speed of a job's workers, with the hetero efficiency if mixed.
  [[nodiscard]] double mean_speed(const std::vector<Worker>& workers) const {
    double sum = 0.0;
    bool mixed = false;
    for (const Worker& w : workers) {
      sum += server_speed(w.server);
      mixed |= placer_.type_of(w.server) != placer_.type_of(workers.front().server);
    }
    return sum / static_cast<double>(workers.size()) *
           (mixed ? options_.hetero_efficiency : 1.0);
  }

  // The fastest GPU type the job may use that the cluster has (-1: none).
  [[nodiscard]] int fastest_type(int j) const {
    int best = -1;
    for (int t = 0; t < placer_.n_types(); ++t)
      if (placer_.may_use(j, t) && placer_.capacity(t) > 0 &&
          (best < 0 || placer_.type_speed(t) > placer_.type_speed(best)))
        best = t;
    return best;
  }

  // Estimated wait until GPU type t has room for job j's base demand: running
  // jobs release their base workers' GPUs at their estimated completion
  // (flexible workers' GPUs already count as free). Infinite if they never
  // would. Other queued jobs are left out on purpose: the estimate then depends
  // only on the running jobs, so handing the kernel fewer queued jobs (as the
  // simulator does with those that cannot fit) never changes a decision.
  [[nodiscard]] double wait_for(int j, int t) {
    if (releases_.empty()) estimate_releases();
    int need = base_demand(j) * job(j).gpus_per_worker - placer_.free_gpus(t);
    if (need <= 0) return 0.0;
    for (const auto& [time, gpus] : releases_[at(t)])
      if ((need -= gpus) <= 0) return time;
    return std::numeric_limits<double>::infinity();
  }

  // Per GPU type, (estimated time left, GPUs) of every running job's base
  // workers, soonest first.
  void estimate_releases() {
    releases_.assign(at(placer_.n_types()), {});
    std::vector<std::vector<int>> gpus(state_.jobs.size());
    for (std::size_t w = 0; w < state_.workers.size(); ++w) {
      if (flexible_[w]) continue;
      const Worker& worker = state_.workers[w];
      auto& per_type = gpus[at(worker.job)];
      per_type.resize(at(placer_.n_types()), 0);
      per_type[at(placer_.type_of(worker.server))] += job(worker.job).gpus_per_worker;
    }
    for (int j = 0; j < static_cast<int>(state_.jobs.size()); ++j) {
      if (gpus[at(j)].empty()) continue;
      const double left = time_with(j, 0, 0);
      for (int t = 0; t < placer_.n_types(); ++t)
        if (gpus[at(j)][at(t)] > 0)
          releases_[at(t)].emplace_back(left, gpus[at(j)][at(t)]);
    }
    if (options_.feed) options_.feed->left_out_releases(releases_);
    for (auto& r : releases_) std::sort(r.begin(), r.end());
  }

  // Elastic jobs that can take extra workers now: running elastic and admitted,
  // in state order; jobs pulled from a feed after the others, in arrival order
  // (where a state holding the whole queue has them).
  [[nodiscard]] std::vector<int> elastic_jobs() const {
    std::vector<int> jobs;
    jobs.reserve(state_.jobs.size());
    const auto grows = [&](int j) {
      return fixed_[at(j)] > 0 && job(j).elastic() &&
             (options_.may_grow.empty() || options_.may_grow[at(j)] != 0);
    };
    const int first = static_cast<int>(first_pulled_);
    for (int j = 0; j < first; ++j)
      if (grows(j)) jobs.push_back(j);
    const auto pulled = jobs.size();
    for (int j = first; j < static_cast<int>(state_.jobs.size()); ++j)
      if (grows(j)) jobs.push_back(j);
    const auto arrival = [&](int j) {
      return std::pair{job(j).submit_time, pulled_rank_[at(j - first)]};
    };
    std::sort(jobs.begin() + static_cast<std::ptrdiff_t>(pulled), jobs.end(),
              [&](int a, int b) { return arrival(a) < arrival(b); });
    return jobs;
  }

  // Phase 2 under each elastic policy: a target of extra workers per job.
  void grow() {
    const std::vector<int> jobs = elastic_jobs();
    std::vector<int> target(state_.jobs.size(), 0);
    switch (options_.policy) {
      case AllocationPolicy::aryl:
        target = knapsack_targets(jobs);
        break;
      case AllocationPolicy::gandiva:
        target = gandiva_targets(jobs);
        break;
      case AllocationPolicy::afs:
        afs_grow(jobs);
        return;
      default:
        return;
    }
    keep_flexible(target);
    // Largest per-worker demand first (best-fit decreasing), then job order.
    std::vector<int> order = jobs;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return job(a).gpus_per_worker > job(b).gpus_per_worker;
    });
    for (int j : order)
      while (extra_[at(j)] < target[at(j)] &&
             placer_.place(j, 1, true, decision_.start, flexible_type_[at(j)]))
        ++extra_[at(j)];
  }

  // aryl: item w of job j is "w more workers", weight w x D GPUs of the type
  // they would use, value the running-time reduction T(base) - T(base + w) on
  // the job's remaining work at those GPUs' real speed. One knapsack per GPU
  // type: a type's capacity is its free GPUs (in reference-GPU units that is a
  // constant factor per type, so the choice is the same).
  [[nodiscard]] std::vector<int> knapsack_targets(const std::vector<int>& jobs) {
    std::vector<std::vector<int>> by_type(at(placer_.n_types()));
    for (std::vector<int>& type_jobs : by_type) type_jobs.reserve(jobs.size());
    for (int j : jobs)
      if ((flexible_type_[at(j)] = flexible_type(j)) >= 0)
        by_type[at(flexible_type_[at(j)])].push_back(j);
    std::vector<int> target(state_.jobs.size(), 0);
    KnapsackGroups groups;
    for (int t = 0; t < placer_.n_types(); ++t) {
      const std::vector<int>& group_jobs = by_type[at(t)];
      if (group_jobs.empty()) continue;
      groups.clear();
      for (int j : group_jobs) {
        const Job& jb = job(j);
        const double base_time = time_with(j, 0, t);
        for (int w = 1; w <= jb.max_workers - fixed_[at(j)]; ++w)
          groups.add({w * jb.gpus_per_worker, base_time - time_with(j, w, t)});
        groups.close_group();
      }
      // Flexible workers were never added to the placer: their GPUs count as free.
      const std::vector<int> choice = knapsack(groups, placer_.free_gpus(t));
      for (std::size_t g = 0; g < group_jobs.size(); ++g)
        target[at(group_jobs[g])] = choice[g] + 1;
    }
    return target;
  }

  // Gandiva: opportunistic. Grow to max in arrival order only when nothing is
  // pending (and only where an extra worker shortens the job); otherwise keep
  // what the jobs have (phase 1 already shrank them).
  [[nodiscard]] std::vector<int> gandiva_targets(const std::vector<int>& jobs) {
    std::vector<int> target(state_.jobs.size(), 0);
    for (int j : jobs) {
      flexible_type_[at(j)] = flexible_type(j);
      const bool grow = none_pending() && flexible_type_[at(j)] >= 0;
      target[at(j)] = grow ? job(j).max_workers - fixed_[at(j)] : current_flexible(j);
    }
    return target;
  }

  // AFS: one worker at a time to the job with the largest throughput gain per
  // GPU, throughput being the fraction of the job done per second: adding a
  // worker to job j gains 1/T(k+1) - 1/T(k) at the speed it would run, divided
  // by its D GPUs. Gains <= 0 are never taken.
  void afs_grow(const std::vector<int>& jobs) {
    const auto gain = [&](int j) {
      const int t = flexible_type_[at(j)];
      const int k = extra_[at(j)];
      if (fixed_[at(j)] + k >= job(j).max_workers) return 0.0;  // full: never taken
      return (1.0 / time_with(j, k + 1, t) - 1.0 / time_with(j, k, t)) /
             job(j).gpus_per_worker;
    };
    // (gain, -position in jobs): ties to the job first in state order
    using Gain = std::pair<double, int>;
    std::priority_queue<Gain> heap;
    for (std::size_t k = 0; k < jobs.size(); ++k)
      if ((flexible_type_[at(jobs[k])] = flexible_type(jobs[k])) >= 0)
        heap.emplace(gain(jobs[k]), -static_cast<int>(k));
    keep_flexible(std::vector<int>(state_.jobs.size(), 0));  // re-placed below
    while (!heap.empty()) {
      const auto [value, negative_position] = heap.top();
      const int j = jobs[at(-negative_position)];
      heap.pop();
      if (!(value > 0.0) || fixed_[at(j)] + extra_[at(j)] >= job(j).max_workers)
        continue;
      if (!placer_.place(j, 1, true, decision_.start, flexible_type_[at(j)])) continue;
      ++extra_[at(j)];
      heap.emplace(gain(j), negative_position);
    }
  }

  [[nodiscard]] int current_flexible(int j) const { return released_[at(j)]; }

  // Keeps up to target[j] of each job's current flexible workers where they are
  // (if their server still has room after phase 1); the rest are stopped.
  void keep_flexible(const std::vector<int>& target) {
    for (std::size_t w = 0; w < state_.workers.size(); ++w) {
      if (!flexible_[w]) continue;
      const Worker& worker = state_.workers[w];
      const bool moved = !moved_.empty() && moved_[at(worker.job)] != 0;
      if (!moved && extra_[at(worker.job)] < target[at(worker.job)] &&
          placer_.keep(worker))
        ++extra_[at(worker.job)];
      else
        decision_.stop.push_back(static_cast<int>(w));
    }
  }

  // A flexible worker stopped and started again on the same server is no change
  // at all (a moved job's base workers really stop: move_one).
  void reuse_stopped_workers() {
    std::vector<int> stop;
    for (int w : decision_.stop) {
      const Worker& old = state_.workers[at(w)];
      if (!flexible_[at(w)]) {
        stop.push_back(w);
        continue;
      }
      const auto same = std::find_if(
          decision_.start.begin(), decision_.start.end(), [&](const Worker& n) {
            return n.flexible && n.job == old.job && n.server == old.server;
          });
      if (same != decision_.start.end())
        decision_.start.erase(same);
      else
        stop.push_back(w);
    }
    decision_.stop = stop;
  }

  Decision finish() {
    reuse_stopped_workers();
    decision_.allocation.assign(state_.jobs.size(), 0);
    const bool elastic = scales_elastic_jobs(options_.policy);
    for (int j = 0; j < static_cast<int>(state_.jobs.size()); ++j)
      decision_.allocation[at(j)] =
          elastic || !running(j) ? fixed_[at(j)] + extra_[at(j)] : count_[at(j)];
    return std::move(decision_);  // the epoch ends here
  }

  const ClusterState& state_;
  const ScheduleOptions& options_;
  Placer placer_;
  std::vector<int> count_;          // job -> workers before the decision
  std::vector<char> flexible_;      // worker -> released for this epoch
  std::vector<int> fixed_;          // job -> base workers after the decision
  std::vector<int> extra_;          // job -> flexible workers after the decision
  std::vector<int> released_;       // job -> flexible workers before the decision
  std::vector<double> base_speed_;  // job -> summed GPU speed of its base workers
  std::vector<int>
      base_type_;  // job -> GPU type of its base workers (-1 none, -2 mixed)
  std::vector<int> flexible_type_;  // job -> GPU type its extra workers go to (-1 none)
  QueueFeed::Releases releases_;    // see estimate_releases
  std::vector<char> moved_;  // job -> moved this epoch (start_on_loan; empty: none)
  // A feed's jobs: the first one's index, each one's arrival rank, and whether
  // queued jobs were left unpulled.
  std::size_t first_pulled_;
  std::vector<std::int64_t> pulled_rank_;
  bool left_queued_ = false;
  bool refused_for_faster_ = false;  // admit_one's last refusal (QueueFeed)
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
      "unknown allocation policy '{}'; expected one of: aryl, fifo, sjf, gandiva, afs",
      name));
}

bool scales_elastic_jobs(AllocationPolicy policy) {
  return policy == AllocationPolicy::aryl || policy == AllocationPolicy::gandiva ||
         policy == AllocationPolicy::afs;
}

int base_demand(const Job& job, AllocationPolicy policy) {
  return scales_elastic_jobs(policy) ? job.min_workers : job.max_workers;
}

void check_curves(const ClusterState& state,
                  const std::vector<std::vector<double>>& curves) {
  const std::size_t n = state.jobs.size();
  const auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (!curves.empty() && curves.size() != n)
    fail(fmt::format("throughput has {} curves for {} jobs", curves.size(), n));
  for (std::size_t j = 0; j < curves.size(); ++j) {
    const std::vector<double>& c = curves[j];
    if (!c.empty() && c.size() != at(state.jobs[j].max_workers))
      fail(fmt::format(
          "job '{}': throughput has {} values, expected one per worker count 1..{}",
          state.jobs[j].id, c.size(), state.jobs[j].max_workers));
    for (double v : c)
      if (!(v > 0.0 && std::isfinite(v)))
        fail(fmt::format("job '{}': throughput values must be finite and > 0",
                         state.jobs[j].id));
  }
}

double throughput(const std::vector<double>& curve, int workers) {
  return curve.empty() ? workers : curve[at(workers - 1)];
}

double running_time(const Job& job, int workers, double remaining,
                    const std::vector<double>& curve, double speed) {
  return job.estimated_duration * throughput(curve, job.reference()) /
         (throughput(curve, workers) * speed) * remaining;
}

Decision schedule(const ClusterState& state, const ScheduleOptions& options) {
  return Epoch(state, options).run();
}

}  // namespace aryl
