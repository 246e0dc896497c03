#include "aryl/sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>
#include <stdexcept>

#include "../index.hpp"
#include <tuple>
#include <utility>

#include <xtensor/xadapt.hpp>

namespace aryl::sim {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
using detail::at;

// At equal times: arrivals, completions, loan decisions, then the epoch, so that
// an epoch sees everything that happened at its instant.
enum class Kind : std::uint8_t { arrival = 0, finish = 1, loan = 2, epoch = 3 };

struct Event {
  double time;
  Kind kind;
  std::uint64_t seq;
  int job;
  std::uint64_t version;
  bool operator>(const Event& o) const {
    return std::tie(time, kind, seq) > std::tie(o.time, o.kind, o.seq);
  }
};

enum class Status : std::uint8_t { future, queued, running, finished };

struct Placed {
  int server;
  bool flexible;
};

struct JobState {
  Status status = Status::future;
  std::vector<Placed> workers;
  double work = 0.0;     // total, in throughput-seconds at reference speed
  double done = 0.0;     // progress so far
  double rate = 0.0;     // progress per second with the current workers
  double updated = 0.0;  // when `done` was last brought up to date
  double paused_until = 0.0;  // restart overhead: no progress before this
  std::uint64_t version = 0;  // invalidates stale finish events
  bool restarted = false;     // preempted with a checkpoint: pays the overhead
};

class Simulator {
 public:
  Simulator(const std::vector<Server>& servers, const std::vector<SimJob>& jobs,
            const std::vector<LoadPoint>& load, const Config& config, const Progress& progress)
      : servers_(servers), jobs_(jobs), load_(load), config_(config), progress_(progress),
        state_(jobs.size()), used_(servers.size(), 0), on_loan_(servers.size(), 0) {
    check_inputs();
    for (const Server& s : servers) {
      if (s.pool == Pool::inference) {
        inference_.push_back(static_cast<int>(&s - servers.data()));
        inference_gpus_ += s.gpus;
      }
      speed_.push_back(config.gpu_speed.count(s.gpu_type) ? config.gpu_speed.at(s.gpu_type) : 1.0);
    }
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const Job& job = jobs[j].job;
      state_[j].work = job.duration * throughput(static_cast<int>(j), job.max_workers);
      push(job.submit_time, Kind::arrival, static_cast<int>(j));
      last_arrival_ = std::max(last_arrival_, job.submit_time);
    }
    unfinished_ = static_cast<int>(jobs.size());
    result_.start_time = xt::xtensor<double, 1>::from_shape({jobs.size()});
    result_.finish_time = xt::xtensor<double, 1>::from_shape({jobs.size()});
    result_.work_lost = xt::zeros<double>({jobs.size()});
    result_.preemptions = xt::zeros<std::int64_t>({jobs.size()});
    result_.scaling_ops = xt::zeros<std::int64_t>({jobs.size()});
    result_.ran_on_training = xt::zeros<std::uint8_t>({jobs.size()});
    result_.ran_on_inference = xt::zeros<std::uint8_t>({jobs.size()});
    result_.ran_mixed = xt::zeros<std::uint8_t>({jobs.size()});
    result_.start_time.fill(nan);
    result_.finish_time.fill(nan);
  }

  Result run() {
    if (!jobs_.empty()) {
      push(0.0, Kind::epoch);
      if (loaning()) push(0.0, Kind::loan);
    }
    while (!events_.empty() && unfinished_ > 0) {
      const Event e = events_.top();
      if (e.time > config_.horizon) break;
      events_.pop();
      advance_clock(e.time);
      switch (e.kind) {
        case Kind::arrival: on_arrival(e.job); break;
        case Kind::finish: on_finish(e.job, e.version); break;
        case Kind::loan: on_loan(); break;
        case Kind::epoch: on_epoch(); break;
      }
      if (config_.audit) audit();
      if (!report_progress()) break;
    }
    return finish();
  }

 private:
  // ---- inputs -------------------------------------------------------------
  void check_inputs() const {
    ClusterState probe{servers_, {}, {}};
    for (const SimJob& j : jobs_) probe.jobs.push_back(j.job);
    validate(probe);
    for (const SimJob& j : jobs_) {
      if (!j.throughput.empty() && j.throughput.size() != at(j.job.max_workers))
        throw std::invalid_argument(fmt::format(
            "job '{}': throughput has {} values, expected one per worker count 1..{}", j.job.id,
            j.throughput.size(), j.job.max_workers));
      for (double v : j.throughput)
        if (!(v > 0.0) || !std::isfinite(v))
          throw std::invalid_argument(
              fmt::format("job '{}': throughput values must be finite and > 0", j.job.id));
      if (!fits_somewhere(j.job))
        throw std::invalid_argument(fmt::format(
            "job '{}' can never run: {} workers of {} GPUs do not fit on the servers it may use",
            j.job.id, demand(j.job), j.job.gpus_per_worker));
    }
    for (std::size_t i = 0; i < load_.size(); ++i) {
      const LoadPoint& p = load_[i];
      if (!std::isfinite(p.time) || !(p.load >= 0.0 && p.load <= 1.0))
        throw std::invalid_argument(fmt::format(
            "inference load row {}: time must be finite and load in [0, 1], got ({}, {})", i,
            p.time, p.load));
      if (i > 0 && p.time <= load_[i - 1].time)
        throw std::invalid_argument(
            fmt::format("inference load row {}: times must increase, got {} after {}", i, p.time,
                        load_[i - 1].time));
    }
    if (!(config_.schedule_interval > 0.0) || !(config_.loan_interval > 0.0))
      throw std::invalid_argument("schedule_interval and loan_interval must be > 0");
    if (!(config_.restart_overhead >= 0.0) || !(config_.headroom >= 0.0) ||
        !(config_.hetero_efficiency > 0.0 && config_.hetero_efficiency <= 1.0))
      throw std::invalid_argument(
          "restart_overhead and headroom must be >= 0 and hetero_efficiency in (0, 1]");
  }

  // The kernel's own rule, so that the queue filtering below matches its choices.
  [[nodiscard]] int demand(const Job& j) const { return base_demand(j, config_.policy); }
  [[nodiscard]] bool loaning() const { return !load_.empty() && !inference_.empty(); }

  // Could the job's base demand be placed in an empty cluster (all loanable lent)?
  [[nodiscard]] bool fits_somewhere(const Job& j) const {
    std::map<std::string, int> slots;
    int all = 0;
    for (const Server& s : servers_) {
      if (s.pool == Pool::inference && load_.empty()) continue;
      if (!j.gpu_type.empty() && s.gpu_type != j.gpu_type) continue;
      slots[s.gpu_type] += s.gpus / j.gpus_per_worker;
      all += s.gpus / j.gpus_per_worker;
    }
    if (j.hetero) return all >= demand(j);
    return std::any_of(slots.begin(), slots.end(), [&](const auto& kv) { return kv.second >= demand(j); });
  }

  // ---- events and time ----------------------------------------------------
  void push(double t, Kind kind, int job = -1, std::uint64_t version = 0) {
    events_.push({t, kind, seq_++, job, version});
  }

  void advance_clock(double t) {
    const double dt = t - now_;
    if (dt > 0.0) {
      result_.training_gpu_seconds += static_cast<double>(training_used_) * dt;
      result_.loaned_gpu_seconds += static_cast<double>(loaned_used_) * dt;
      result_.inference_gpu_seconds += load_at(now_) * inference_gpus_ * dt;
      result_.loaned_capacity_seconds += static_cast<double>(loaned_gpus_) * dt;
    }
    now_ = t;
  }

  [[nodiscard]] double load_at(double t) const {
    if (load_.empty()) return 0.0;
    auto it = std::upper_bound(load_.begin(), load_.end(), t,
                               [](double x, const LoadPoint& p) { return x < p.time; });
    return it == load_.begin() ? load_.front().load : std::prev(it)->load;
  }

  bool report_progress() {
    if (!progress_) return true;
    const double span = std::max(last_arrival_, config_.schedule_interval);
    const double fraction = std::min(1.0, now_ / span);
    if (fraction < next_report_) return true;
    next_report_ = fraction + 0.01;
    return progress_(fraction);
  }

  // ---- job progress -------------------------------------------------------
  [[nodiscard]] double throughput(int j, int workers) const {
    const SimJob& sj = jobs_[at(j)];
    if (!sj.throughput.empty()) return sj.throughput[at(workers - 1)];
    if (config_.scaling == Scaling::linear) return workers;
    const double mid = 0.5 * (sj.job.min_workers + sj.job.max_workers);
    const double beyond = std::max(0.0, workers - mid);
    return workers * std::max(0.1, 1.0 - 0.1 * beyond);
  }

  void advance(int j) {
    JobState& s = state_[at(j)];
    const double from = std::max(s.updated, s.paused_until);
    if (s.status == Status::running && now_ > from) {
      const double gained = std::min(s.rate * (now_ - from), s.work - s.done);
      s.done += gained;
      result_.work_delivered += gained;
    }
    s.updated = now_;
  }

  // Rate from the workers held: throughput x mean GPU speed (x hetero efficiency
  // when the workers span GPU types); then (re)schedules the completion.
  void set_rate(int j) {
    JobState& s = state_[at(j)];
    ++s.version;
    if (s.workers.empty()) {
      s.rate = 0.0;
      return;
    }
    double speed = 0.0;
    bool mixed = false;
    for (const Placed& p : s.workers) {
      speed += speed_[at(p.server)];
      mixed |= servers_[at(p.server)].gpu_type != servers_[at(s.workers.front().server)].gpu_type;
    }
    speed /= static_cast<double>(s.workers.size());
    if (mixed) {
      speed *= config_.hetero_efficiency;
      result_.ran_mixed(at(j)) = 1;
    }
    s.rate = throughput(j, static_cast<int>(s.workers.size())) * speed;
    const double left = std::max(0.0, s.work - s.done);
    push(std::max(now_, s.paused_until) + left / s.rate, Kind::finish, j, s.version);
  }

  void add_worker(int j, int server, bool flexible) {
    state_[at(j)].workers.push_back({server, flexible});
    const int gpus = jobs_[at(j)].job.gpus_per_worker;
    used_[at(server)] += gpus;
    if (servers_[at(server)].pool == Pool::training) {
      training_used_ += gpus;
      result_.ran_on_training(at(j)) = 1;
    } else {
      loaned_used_ += gpus;
      result_.ran_on_inference(at(j)) = 1;
    }
  }

  void remove_worker(int j, std::size_t k) {
    std::vector<Placed>& w = state_[at(j)].workers;
    const int server = w[k].server;
    const int gpus = jobs_[at(j)].job.gpus_per_worker;
    used_[at(server)] -= gpus;
    (servers_[at(server)].pool == Pool::training ? training_used_ : loaned_used_) -= gpus;
    w.erase(w.begin() + static_cast<std::ptrdiff_t>(k));
  }

  void clear_workers(int j) {
    while (!state_[at(j)].workers.empty()) remove_worker(j, state_[at(j)].workers.size() - 1);
  }

  // ---- handlers -----------------------------------------------------------
  void on_arrival(int j) {
    state_[at(j)].status = Status::queued;
    queue_.insert(fifo_key(j));
    ++queued_;
    dirty_ = true;
  }

  void on_finish(int j, std::uint64_t version) {
    JobState& s = state_[at(j)];
    if (s.status != Status::running || version != s.version) return;
    advance(j);
    result_.work_delivered += s.work - s.done;  // rounding of the last step
    s.done = s.work;
    clear_workers(j);
    s.status = Status::finished;
    running_ids_.erase(std::lower_bound(running_ids_.begin(), running_ids_.end(), j));
    --running_;
    ++s.version;
    result_.finish_time(at(j)) = now_;
    --unfinished_;
    dirty_ = true;
  }

  // Sends a running job back to the queue: with a checkpoint it keeps its
  // progress and pays the restart overhead later; without, it starts over.
  void preempt(int j) {
    JobState& s = state_[at(j)];
    advance(j);
    clear_workers(j);
    ++result_.preemptions(at(j));
    if (jobs_[at(j)].job.checkpoint) {
      s.restarted = true;
    } else {
      result_.work_lost(at(j)) += s.done;
      result_.work_lost_total += s.done;
      s.done = 0.0;
    }
    s.status = Status::queued;
    running_ids_.erase(std::lower_bound(running_ids_.begin(), running_ids_.end(), j));
    queue_.insert(fifo_key(j));
    --running_;
    ++queued_;
    set_rate(j);
  }

  void on_loan() {
    const int n = static_cast<int>(inference_.size());
    const double need = std::min(1.0, load_at(now_) * (1.0 + config_.headroom)) * n;
    const int loanable = n - std::min(n, static_cast<int>(std::ceil(need - 1e-9)));
    int lent = 0;
    for (int s : inference_) lent += on_loan_[at(s)];
    if (lent < loanable) {
      for (int s : inference_)
        if (!on_loan_[at(s)] && lent < loanable) {
          on_loan_[at(s)] = 1;
          loaned_gpus_ += servers_[at(s)].gpus;
          ++lent;
        }
      dirty_ = true;
    } else if (lent > loanable) {
      take_back(lent - loanable);
    }
    if (unfinished_ > 0) push(now_ + config_.loan_interval, Kind::loan);
  }

  void take_back(int n) {
    std::vector<int> job_of;
    const ClusterState state = snapshot(job_of, false);
    const ReclaimPlan plan = reclaim(state, n, config_.reclaim, config_.seed + static_cast<std::uint64_t>(result_.reclaims));
    ++result_.reclaims;
    result_.collateral_gpus += plan.collateral_gpus;
    result_.reclaim_demand_gpus += plan.demand_gpus;
    std::vector<char> preempted(state.jobs.size(), 0);
    for (int j : plan.preempted) preempted[at(j)] = 1;
    for (int s : plan.servers) {
      bool free = true;
      for (const Worker& w : state.workers) free &= !(w.server == s && preempted[at(w.job)]);
      result_.servers_reclaimed_free += free;
    }
    result_.servers_reclaimed += static_cast<std::int64_t>(plan.servers.size());
    for (int j : plan.preempted) preempt(job_of[at(j)]);
    for (const auto& [j, removed] : plan.scaled_in) {
      const int sj = job_of[at(j)];
      advance(sj);
      std::vector<Placed>& w = state_[at(sj)].workers;
      for (std::size_t k = w.size(); k-- > 0;)
        if (std::find(plan.servers.begin(), plan.servers.end(), w[k].server) != plan.servers.end())
          remove_worker(sj, k);
      ++result_.scaling_ops(at(sj));
      set_rate(sj);
    }
    for (int s : plan.servers) {
      on_loan_[at(s)] = 0;
      loaned_gpus_ -= servers_[at(s)].gpus;
    }
    dirty_ = true;
  }

  // An epoch with no arrival, completion or loan change since the last is
  // skipped: only remaining work has moved, which may shift the knapsack's values
  // a little; the next event re-plans. This keeps long quiet stretches cheap.
  void on_epoch() {
    if (dirty_) {
      dirty_ = false;
      std::vector<int> job_of;
      const ClusterState state = snapshot(job_of, true);
      if (!state.jobs.empty()) {
        ScheduleOptions options;
        options.policy = config_.policy;
        options.placement = config_.placement;
        options.backfill = config_.backfill;
        for (int j : job_of) {
          const JobState& s = state_[at(j)];
          options.remaining.push_back(std::clamp(1.0 - s.done / s.work, 1e-9, 1.0));
        }
        apply(schedule(state, options), state, job_of);
        ++result_.epochs_run;
      }
    }
    sample();
    if (unfinished_ > 0 && !stuck()) push(now_ + config_.schedule_interval, Kind::epoch);
  }

  // Nothing runs, nothing will arrive and the loans will not change: jobs still
  // queued can never start.
  [[nodiscard]] bool stuck() const {
    if (now_ < last_arrival_ || dirty_) return false;
    if (loaning() && now_ <= load_.back().time) return false;
    return running_ == 0;
  }

  // The state the kernels see: usable servers, the running jobs in trace order
  // and, for an epoch, the queued ones in arrival order; job_of maps state job
  // index -> trace job index.
  // Queued jobs whose base demand exceeds every GPU that is free or held by a
  // flexible worker are left out: the placer would reject them anyway, and long
  // queues would otherwise be copied and sorted at every epoch. Under strict
  // FIFO only the head of the queue that could start counts (fifo_blocker).
  ClusterState snapshot(std::vector<int>& job_of, bool with_queue) const {
    ClusterState state{servers_, {}, {}};
    state.jobs.reserve(running_ids_.size() + (with_queue ? queue_.size() : 0));
    for (std::size_t s = 0; s < servers_.size(); ++s) state.servers[s].on_loan = on_loan_[s] != 0;
    const int bound = with_queue ? releasable_gpus() : 0;
    const FifoKey blocker = with_queue ? fifo_blocker(bound) : FifoKey{};
    // Gandiva grows only when nothing is pending: keep one hopeless job to say so.
    bool keep_hopeless = config_.policy == AllocationPolicy::gandiva;
    const auto add = [&](int j) {
      const int index = static_cast<int>(state.jobs.size());
      job_of.push_back(j);
      state.jobs.push_back(jobs_[at(j)].job);
      for (const Placed& p : state_[at(j)].workers) state.workers.push_back({index, p.server, p.flexible});
    };
    for (const int j : running_ids_) add(j);
    if (!with_queue) return state;
    for (const FifoKey& key : queue_) {  // in arrival order
      if (!(key < blocker)) break;
      const Job& job = jobs_[at(key.second)].job;
      if (demand(job) * job.gpus_per_worker <= bound || std::exchange(keep_hopeless, false))
        add(key.second);
    }
    return state;
  }

  // Free GPUs on usable servers plus those an epoch may take from flexible workers.
  [[nodiscard]] int releasable_gpus() const {
    int gpus = 0;
    for (std::size_t s = 0; s < servers_.size(); ++s)
      if (servers_[s].pool == Pool::training || on_loan_[s]) gpus += servers_[s].gpus - used_[s];
    if (scales_elastic_jobs(config_.policy))
      for (const int j : running_ids_) {
        const Job& job = jobs_[at(j)].job;
        const int extra = static_cast<int>(state_[at(j)].workers.size()) - job.min_workers;
        if (extra > 0) gpus += extra * job.gpus_per_worker;
      }
    return gpus;
  }

  [[nodiscard]] bool strict() const {
    return config_.policy == AllocationPolicy::fifo && !config_.backfill;
  }

  // Arrival order: submit time, then trace order.
  using FifoKey = std::pair<double, int>;
  [[nodiscard]] FifoKey fifo_key(int j) const { return {jobs_[at(j)].job.submit_time, j}; }

  // Under strict FIFO: the arrival key of the first queued job that surely
  // cannot start — the jobs ahead of it, if all admitted, already take more than
  // the `bound` GPUs, and if one is not admitted it blocks the rest anyway (past
  // every job when there is none, or under any other policy).
  [[nodiscard]] FifoKey fifo_blocker(int bound) const {
    const FifoKey none{std::numeric_limits<double>::infinity(), 0};
    if (!strict()) return none;
    for (const FifoKey& key : queue_) {
      const Job& job = jobs_[at(key.second)].job;
      bound -= demand(job) * job.gpus_per_worker;
      if (bound < 0) return key;
    }
    return none;
  }

  void apply(const Decision& d, const ClusterState& state, const std::vector<int>& job_of) {
    std::vector<int> touched;
    std::vector<std::vector<std::size_t>> stops(job_of.size());
    // Workers of one job appear in the snapshot in the job's own order.
    std::vector<std::size_t> position(state.workers.size());
    std::vector<std::size_t> seen(job_of.size(), 0);
    for (std::size_t w = 0; w < state.workers.size(); ++w)
      position[w] = seen[at(state.workers[w].job)]++;
    for (int w : d.stop) stops[at(state.workers[at(w)].job)].push_back(position[at(w)]);
    std::vector<char> starts(job_of.size(), 0);
    for (const Worker& w : d.start) starts[at(w.job)] = 1;
    for (std::size_t i = 0; i < job_of.size(); ++i) {
      if (stops[i].empty() && !starts[i]) continue;
      const int j = job_of[i];
      advance(j);
      const bool was_running = !state_[at(j)].workers.empty();
      std::sort(stops[i].rbegin(), stops[i].rend());
      for (std::size_t k : stops[i]) remove_worker(j, k);
      if (was_running) ++result_.scaling_ops(at(j));
      touched.push_back(j);
    }
    for (const Worker& w : d.start) add_worker(job_of[at(w.job)], w.server, w.flexible);
    for (int j : touched) {
      JobState& s = state_[at(j)];
      if (s.status == Status::queued && !s.workers.empty()) {
        s.status = Status::running;
        queue_.erase(fifo_key(j));
        running_ids_.insert(std::upper_bound(running_ids_.begin(), running_ids_.end(), j), j);
        --queued_;
        ++running_;
        s.updated = now_;
        if (std::isnan(result_.start_time(at(j)))) result_.start_time(at(j)) = now_;
        if (s.restarted) s.paused_until = now_ + config_.restart_overhead;
        s.restarted = false;
      }
      set_rate(j);
    }
  }

  void sample() {
    timeline_t_.push_back(now_);
    timeline_training_.push_back(training_used_);
    timeline_loaned_.push_back(loaned_used_);
    std::int64_t lent = 0;
    for (int s : inference_) lent += on_loan_[at(s)];
    timeline_on_loan_.push_back(lent);
    const int n = static_cast<int>(inference_.size());
    timeline_needed_.push_back(n - static_cast<int>(lent) < 0 ? 0 : n - lent);
    timeline_queue_.push_back(queued_);
    timeline_running_.push_back(running_);
  }

  // ---- invariants ---------------------------------------------------------
  void violation(std::string what) {
    if (result_.violations.size() < 20)
      result_.violations.push_back(fmt::format("t={}: {}", now_, what));
  }

  void audit() {
    std::vector<int> used(servers_.size(), 0);
    for (std::size_t j = 0; j < state_.size(); ++j) {
      const JobState& s = state_[j];
      const Job& job = jobs_[j].job;
      const int n = static_cast<int>(s.workers.size());
      if (s.status == Status::running && (n < job.min_workers || n > job.max_workers))
        violation(fmt::format("job '{}' runs {} workers outside [{}, {}]", job.id, n,
                              job.min_workers, job.max_workers));
      if (s.status != Status::running && n > 0)
        violation(fmt::format("job '{}' holds workers while not running", job.id));
      if (s.done > s.work * (1 + 1e-9)) violation(fmt::format("job '{}' did more than its work", job.id));
      for (const Placed& p : s.workers) {
        used[at(p.server)] += job.gpus_per_worker;
        const Server& srv = servers_[at(p.server)];
        if (srv.pool == Pool::inference && !on_loan_[at(p.server)])
          violation(fmt::format("job '{}' runs on inference server '{}', not on loan", job.id, srv.id));
      }
    }
    const auto count = [&](Status st) {
      return std::count_if(state_.begin(), state_.end(), [st](const JobState& s) { return s.status == st; });
    };
    if (count(Status::queued) != queued_ || count(Status::running) != running_ ||
        static_cast<std::size_t>(running_) != running_ids_.size() ||
        static_cast<std::size_t>(queued_) != queue_.size())
      violation("queued/running book-keeping is off");
    for (std::size_t s = 0; s < servers_.size(); ++s)
      if (used[s] > servers_[s].gpus || used[s] != used_[s])
        violation(fmt::format("server '{}' holds {} GPUs of {} (book: {})", servers_[s].id, used[s],
                              servers_[s].gpus, used_[s]));
  }

  Result finish() {
    for (std::size_t j = 0; j < state_.size(); ++j) {
      advance(static_cast<int>(j));
      result_.work_completed += state_[j].done;
    }
    const double gap = std::abs(result_.work_delivered - result_.work_completed - result_.work_lost_total);
    if (gap > 1e-6 * std::max(1.0, result_.work_delivered))
      violation(fmt::format("work delivered {} != completed {} + lost {}", result_.work_delivered,
                            result_.work_completed, result_.work_lost_total));
    result_.end_time = now_;
    result_.t = xt::adapt(timeline_t_, {timeline_t_.size()});
    result_.training_gpus_used = xt::adapt(timeline_training_, {timeline_training_.size()});
    result_.loaned_gpus_used = xt::adapt(timeline_loaned_, {timeline_loaned_.size()});
    result_.on_loan = xt::adapt(timeline_on_loan_, {timeline_on_loan_.size()});
    result_.inference_needed = xt::adapt(timeline_needed_, {timeline_needed_.size()});
    result_.queue_length = xt::adapt(timeline_queue_, {timeline_queue_.size()});
    result_.running_jobs = xt::adapt(timeline_running_, {timeline_running_.size()});
    return std::move(result_);
  }

  const std::vector<Server>& servers_;
  const std::vector<SimJob>& jobs_;
  const std::vector<LoadPoint>& load_;
  const Config& config_;
  const Progress& progress_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  double now_ = 0.0, last_arrival_ = 0.0, next_report_ = 0.0;
  bool dirty_ = false;
  int unfinished_ = 0;
  std::vector<int> running_ids_;  // running jobs, in trace order
  std::set<std::pair<double, int>> queue_;  // queued jobs in arrival order
  std::int64_t queued_ = 0, running_ = 0;
  std::vector<JobState> state_;
  std::vector<int> used_;       // server -> GPUs held by training workers
  std::vector<char> on_loan_;   // server -> lent to training
  std::vector<int> inference_;  // inference server indices
  std::vector<double> speed_;   // server -> GPU speed
  int inference_gpus_ = 0;
  std::int64_t training_used_ = 0, loaned_used_ = 0, loaned_gpus_ = 0;
  std::vector<double> timeline_t_;
  std::vector<std::int64_t> timeline_training_, timeline_loaned_, timeline_on_loan_,
      timeline_needed_, timeline_queue_, timeline_running_;
  Result result_;
};

}  // namespace

Result simulate(const std::vector<Server>& servers, const std::vector<SimJob>& jobs,
                const std::vector<LoadPoint>& load, const Config& config, const Progress& progress) {
  return Simulator(servers, jobs, load, config, progress).run();
}

}  // namespace aryl::sim
