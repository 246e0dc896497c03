// The engine: event handlers (arrival, completion, loan decision, epoch) that
// move jobs between queue and servers. Its rooms: events.hpp (queue and clock),
// loaning.hpp (how many servers are lent), progress.hpp (how jobs advance),
// snapshot.cpp (what the kernels see), accounting.hpp (records, usage,
// timeline, results); audit.cpp checks the invariants.
// Over the ~500-line bar on purpose: the event handlers below change the same
// engine state in one order, and reading them together is how that order is
// checked; what can stand apart already does (the rooms named above, feed.cpp).
#include "engine.hpp"

#include "aryl/capacity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

namespace aryl::sim {

Engine::Engine(const std::vector<Server>& servers, const std::vector<SimJob>& jobs,
               const std::vector<LoadPoint>& load, const Config& config,
               const Progress& progress, const std::vector<Application>& applications,
               const Hooks& hooks)
    : servers_(servers),
      jobs_(jobs),
      load_(load),
      config_(config),
      progress_(progress),
      hooks_(hooks),
      lender_(servers, load, config),
      accounting_(jobs.size()),
      history_(jobs.size(), config.history),
      state_(jobs.size()),
      used_(servers.size(), 0),
      on_loan_(servers.size(), 0),
      applications_(applications) {
  goodput_run_ = std::any_of(jobs.begin(), jobs.end(),
                             [](const SimJob& j) { return j.application >= 0; });
  check_inputs();
  if (!goodput_run_ && config.allocator != Allocator::kernel) check_las_inputs();
  if (goodput_run_) {
    if (hooks.any())
      throw std::invalid_argument(
          "a policy of your own schedules fixed-duration jobs; goodput-driven jobs "
          "run under policy 'tiresias', 'pollux' or 'aryl'");
    check_goodput_inputs();
    executed_.assign(jobs.size(), 0.0);
    attained_.assign(jobs.size(), 0.0);
    restarts_.assign(jobs.size(), -1);
    if (config.allocator == Allocator::pollux) {
      PolluxOptions options;
      options.population = config.pollux_population;
      options.generations = config.pollux_generations;
      options.restart_delay = config.reallocation_overhead;
      options.seed = config.seed;
      options.threads = config.pollux_threads;
      // A developer's tool (benchmarks/pollux_replay.py): the rounds' inputs.
      if (const char* path = std::getenv("ARYL_POLLUX_RECORD")) {
        options.record = path;
        if (const char* every = std::getenv("ARYL_POLLUX_RECORD_EVERY"))
          options.record_every = std::max(std::atoi(every), 1);
      }
      pollux_.emplace(options);
    }
  }
  for (const Server& s : servers) {
    node_gpus_ = std::max(node_gpus_, s.gpus);
    if (s.pool == Pool::training) usable_free_ += s.gpus;
    speed_.push_back(
        config.gpu_speed.count(s.gpu_type) ? config.gpu_speed.at(s.gpu_type) : 1.0);
  }
  options_.policy = config.policy;
  options_.placement = config.placement;
  options_.backfill = config.backfill;
  options_.hetero_efficiency = config.hetero_efficiency;
  // Rounds of goodput-driven jobs keep the kernel's counts, not its placement.
  options_.start_on_loan = config.start_on_loan && !goodput_run_;
  options_.move_overhead = config.restart_overhead;
  layout_ = std::make_shared<ServerLayout>(servers, speed_);
  for (std::size_t s = 0; s < servers.size(); ++s)  // none lent yet
    layout_->set_usable(static_cast<int>(s), servers[s].pool == Pool::training);
  options_.layout = layout_;  // with the speeds: options_.speed stays empty
  track_base_ = !goodput_run_;
  // start_on_loan orders movers among the whole queue: the kernel then sees it all
  pulls_ = !goodput_run_ && config.allocator == Allocator::kernel && !hooks.allocate &&
           !options_.start_on_loan;
  if (pulls_) {
    bucket_of_.assign(jobs.size(), 0);
    changeable_.reserve(jobs.size());  // a byte a job: read at every epoch
    for (const SimJob& j : jobs)
      changeable_.push_back(scales_elastic_jobs(config.policy) && j.job.elastic());
  }
  if (track_base_) {
    layout_->hold_base_workers();
    base_of_.resize(jobs.size());
    rebase_mark_.assign(jobs.size(), 0);
    snapshot_at_.assign(jobs.size(), 0);
  }
  bool linear = config.scaling == Scaling::linear;
  share_curves();
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j].job;
    linear &= jobs[j].throughput.empty();
    state_[j].work =
        job.duration * throughput(curve(static_cast<int>(j)), job.reference());
    if (goodput_run_) add_goodput_job(static_cast<int>(j));
    last_arrival_ = std::max(last_arrival_, job.submit_time);
  }
  // In time order, trace order at equal times: the queue keeps them apart from
  // its heap (events.hpp), and they run in the order they always did.
  std::vector<int> arrival_order(jobs.size());
  std::iota(arrival_order.begin(), arrival_order.end(), 0);
  std::stable_sort(arrival_order.begin(), arrival_order.end(), [&](int a, int b) {
    return jobs[at(a)].job.submit_time < jobs[at(b)].job.submit_time;
  });
  for (const int j : arrival_order)
    events_.push(jobs[at(j)].job.submit_time, Kind::arrival, j);
  linear_ = linear;  // the kernel's default curve then: no per-epoch copies
  check_span();
  unfinished_ = static_cast<int>(jobs.size());
}

Result Engine::run() {
  if (!jobs_.empty()) {
    events_.push(goodput_run_ ? config_.schedule_interval : 0.0, Kind::epoch);
    epoch_pending_ = true;
    if (lender_.active()) events_.push(0.0, Kind::loan);
  }
  while (!events_.empty() && unfinished_ > 0) {
    if (events_.next().time > config_.horizon) break;
    const double before = events_.now();
    const Event e = events_.pop();
    accounting_.integrate(e.time - before, usage(before));
    accounting_.result().inference_short_server_seconds +=
        lender_.short_seconds(before, e.time, lent_);
    switch (e.kind) {
      case Kind::arrival:
        on_arrival(e.job);
        break;
      case Kind::finish:
        on_finish(e.job, e.version);
        break;
      case Kind::loan:
        on_loan();
        break;
      case Kind::epoch:
        on_epoch();
        break;
    }
    if (config_.audit) audit();
    if (!report_progress()) break;
  }
  double completed = 0.0;
  for (std::size_t j = 0; j < state_.size(); ++j) {
    advance(static_cast<int>(j));
    completed += state_[j].done;
  }
  history_.close_all(now());
  Result result = accounting_.finish(now(), completed);
  result.history = history_.take();
  return result;
}

// ---- inputs -----------------------------------------------------------------

// Fixed-duration jobs run under Tiresias (no Pollux policy for them) at a fixed
// size, on the training servers: nothing is lent.
void Engine::check_las_inputs() {
  if (config_.allocator != Allocator::tiresias)
    throw std::invalid_argument(
        "policy 'pollux' runs goodput-driven jobs (a Pollux workload)");
  if (hooks_.any())
    throw std::invalid_argument("a policy of your own replaces policy 'tiresias'");
  if (lender_.active())
    throw std::invalid_argument(
        "policy 'tiresias' runs on the training servers and lends nothing: run it "
        "without an inference load (or with loaning off)");
  for (const SimJob& j : jobs_)
    if (j.job.elastic())
      throw std::invalid_argument(
          fmt::format("job '{}': under Tiresias a job runs a fixed number of workers "
                      "(min_workers = max_workers)",
                      j.job.id));
  executed_.assign(jobs_.size(), 0.0);
}

void Engine::check_inputs() const {
  validate_jobs(servers_, jobs_.size(),
                [this](std::size_t j) -> const Job& { return jobs_[j].job; });
  // The front doors' fit rule (capacity.hpp), with every inference server lent: a
  // job that fits only on servers this load never spares waits, unfinished (it would
  // run were they lent), as one whose only window closed does. Jobs of one shape are
  // counted once.
  std::map<std::tuple<int, std::string, bool>, int> rooms;
  const int lendable = static_cast<int>(servers_.size());
  for (const SimJob& j : jobs_) {
    if (!j.throughput.empty() &&
        j.throughput.size() != static_cast<std::size_t>(j.job.max_workers))
      throw std::invalid_argument(fmt::format(
          "job '{}': throughput has {} values, expected one per worker count 1..{}",
          j.job.id, j.throughput.size(), j.job.max_workers));
    for (double v : j.throughput)
      if (!(v > 0.0) || !std::isfinite(v))
        throw std::invalid_argument(fmt::format(
            "job '{}': throughput values must be finite and > 0", j.job.id));
    const auto shape =
        rooms.try_emplace({j.job.gpus_per_worker, j.job.gpu_type, j.job.hetero});
    if (shape.second) shape.first->second = job_room(servers_, j.job, lendable);
    if (shape.first->second < demand(j.job))
      throw std::invalid_argument(fmt::format(
          "job '{}' can never run: {} workers of {} GPUs do not fit on the servers it "
          "may use "
          "(training servers plus every inference server lent)",
          j.job.id, demand(j.job), j.job.gpus_per_worker));
  }
  for (std::size_t i = 0; i < load_.size(); ++i) {
    const LoadPoint& p = load_[i];
    if (!std::isfinite(p.time) || !(p.load >= 0.0 && p.load <= 1.0))
      throw std::invalid_argument(fmt::format(
          "inference load row {}: time must be finite and load in [0, 1], got ({}, {})",
          i, p.time, p.load));
    if (i > 0 && p.time <= load_[i - 1].time)
      throw std::invalid_argument(
          fmt::format("inference load row {}: times must increase, got {} after {}", i,
                      p.time, load_[i - 1].time));
  }
  if (!(config_.schedule_interval > 0.0) || !(config_.loan_interval > 0.0))
    throw std::invalid_argument("schedule_interval and loan_interval must be > 0");
  if (!(config_.restart_overhead >= 0.0) || !(config_.start_overhead >= 0.0) ||
      !(config_.headroom >= 0.0) || !(config_.lend_hold >= 0.0) ||
      !(config_.hetero_efficiency > 0.0 && config_.hetero_efficiency <= 1.0))
    throw std::invalid_argument(
        "restart_overhead, start_overhead, headroom and lend_hold must be >= 0 and "
        "hetero_efficiency "
        "in (0, 1]");
  for (const auto& [type, speed] : config_.gpu_speed)
    if (!(speed > 0.0) || !std::isfinite(speed))
      throw std::invalid_argument(
          fmt::format("gpu_speed of '{}' must be finite and > 0, got {}", type, speed));
}

// Refuses a run that must take more than max_steps epochs or loan decisions (after
// the curves are built, before any event is handled): the
// span is at least each job's submit time plus its shortest possible running
// time (its best throughput on the fastest GPUs; a goodput-driven job's first
// restart plus its work at its application's highest rate), up to the horizon.
// on_round stops a goodput-driven run that passes max_steps rounds all the same.
void Engine::check_span() const {
  double fastest = 0.0;
  for (const Server& s : servers_)
    fastest = std::max(fastest, config_.gpu_speed.count(s.gpu_type)
                                    ? config_.gpu_speed.at(s.gpu_type)
                                    : 1.0);
  double span = 0.0;
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    double shortest = 0.0;
    if (goodput_run_) {  // its first restart, then its work at the highest rate
      const Application& app = applications_[at(jobs_[j].application)];
      shortest = config_.reallocation_overhead +
                 state_[j].work / app.max_progress_rate() / std::max(fastest, 1.0);
    } else {
      const std::vector<double>& c = curve(static_cast<int>(j));
      const double best = *std::max_element(c.begin(), c.end());
      const double work =
          jobs_[j].job.duration * throughput(c, jobs_[j].job.reference());
      shortest = work / best / fastest;
    }
    span = std::max(span, jobs_[j].job.submit_time + shortest);
  }
  span = std::min(span, config_.horizon);
  std::vector<std::pair<const char*, double>> steps{
      {"schedule_interval", config_.schedule_interval}};
  if (lender_.active()) steps.emplace_back("loan_interval", config_.loan_interval);
  for (const auto& [name, interval] : steps)
    if (span / interval > max_steps)
      throw std::invalid_argument(
          fmt::format("the simulation would span at least {:.4g} s, {:.3g} steps of {} "
                      "= {:g} s; the limit is "
                      "{}: use a longer {}, a horizon, or shorter times",
                      span, span / interval, name, interval, max_steps, name));
}

int Engine::demand(const Job& j) const { return base_demand(j, config_.policy); }

// ---- time -------------------------------------------------------------------

Usage Engine::usage(double t) const {
  return {training_used_, loaned_used_, loaned_gpus_,
          lender_.load_at(t) * lender_.gpus()};
}

// About every 1% of the arrivals' span, and every 4,096 events whatever the
// clock says, so that a caller can always stop a run (after the last arrival
// the fraction stays at 1 while running jobs finish).
// Progress is half the simulated time up to the last arrival and half the share of
// jobs finished: it keeps moving while a queue drains after the last arrival (time
// alone sat at 1 there for hours of a Pollux run) and reaches 1 with the last job.
// Reported every 1% of it, every 4096 events and at least every quarter second of
// wall time, so that a slow run shows life and Ctrl-C is heard.
bool Engine::report_progress() {
  if (!progress_) return true;
  const double span = std::max(last_arrival_, config_.schedule_interval);
  const double arrived = std::min(1.0, now() / span);
  const double jobs = static_cast<double>(jobs_.size());
  const double finished = jobs > 0 ? (jobs - unfinished_) / jobs : 1.0;
  const double fraction = 0.5 * (arrived + finished);
  const auto clock = std::chrono::steady_clock::now();
  if (fraction < next_report_ && ++quiet_events_ < 4096 &&
      clock - last_report_ < std::chrono::milliseconds(250))
    return true;
  next_report_ = fraction + 0.01;
  quiet_events_ = 0;
  last_report_ = clock;
  return progress_(fraction, now());
}

// One curve per distinct (min, max) shape, or per distinct curve given: at 500k
// jobs a curve each would cost ~50 MB for a few hundred distinct ones.
void Engine::share_curves() {
  std::map<std::pair<int, int>, std::uint32_t> by_shape;
  std::map<std::vector<double>, std::uint32_t> by_values;
  curve_of_.reserve(jobs_.size());
  for (const SimJob& j : jobs_) {
    const auto next = static_cast<std::uint32_t>(curves_.size());
    const std::uint32_t index =
        j.throughput.empty()
            ? by_shape.try_emplace({j.job.min_workers, j.job.max_workers}, next)
                  .first->second
            : by_values.try_emplace(j.throughput, next).first->second;
    if (index == next) curves_.push_back(throughput_curve(j, config_.scaling));
    curve_of_.push_back(index);
  }
}

// ---- job progress -------------------------------------------------------------

void Engine::advance(int j) {
  JobProgress& s = state_[at(j)];
  const bool running = status_of(j) == Status::running;
  // A checkpointed job restarting holds its GPUs without progress until
  // paused_until: that stall is what its preemption cost beyond lost progress.
  const double stalled = std::min(now(), s.paused_until) - s.updated;
  if (running && stalled > 0.0)
    accounting_.restarting(stalled * static_cast<double>(workers_[at(j)].size()) *
                           jobs_[at(j)].job.gpus_per_worker);
  accounting_.delivered(s.advance(now(), running));
}

// Rate from the workers held; then (re)schedules the completion.
void Engine::set_rate(int j) {
  JobProgress& s = state_[at(j)];
  ++s.version;
  bool mixed = false;
  s.rate = progress_rate(curve(j), workers_[at(j)], servers_, speed_,
                         config_.hetero_efficiency, mixed);
  if (mixed) accounting_.ran_mixed(j);
  if (s.rate > 0.0) events_.push(s.finish_time(now()), Kind::finish, j, s.version);
}

void Engine::add_worker(int j, int server, bool flexible) {
  hold(j);
  beyond_min_gpus_ -= beyond_min(j);
  workers_[at(j)].push_back({server, flexible});
  beyond_min_gpus_ += beyond_min(j);
  base_changed(j);
  const int gpus = jobs_[at(j)].job.gpus_per_worker;
  used_[at(server)] += gpus;
  if (usable(server)) usable_free_ -= gpus;
  const Pool pool = servers_[at(server)].pool;
  (pool == Pool::training ? training_used_ : loaned_used_) += gpus;
  accounting_.ran_on(j, pool);
}

void Engine::remove_worker(int j, std::size_t k) {
  hold(j);
  std::vector<Placed>& w = workers_[at(j)];
  const int server = w[k].server;
  base_changed(j);
  const int gpus = jobs_[at(j)].job.gpus_per_worker;
  used_[at(server)] -= gpus;
  if (usable(server)) usable_free_ += gpus;
  (servers_[at(server)].pool == Pool::training ? training_used_ : loaned_used_) -= gpus;
  beyond_min_gpus_ -= beyond_min(j);
  w.erase(w.begin() + static_cast<std::ptrdiff_t>(k));
  beyond_min_gpus_ += beyond_min(j);
}

void Engine::clear_workers(int j) {
  while (!workers_[at(j)].empty()) remove_worker(j, workers_[at(j)].size() - 1);
}

// ---- handlers -------------------------------------------------------------------

void Engine::on_arrival(int j) {
  if (hooks_.admit && !hooks_.admit(j, epoch())) {
    status_[at(j)] = Status::rejected;
    accounting_.rejected(j);
    --unfinished_;
    return;
  }
  status_[at(j)] = Status::queued;
  enqueue(j);
  if (goodput_run_ || config_.allocator == Allocator::tiresias) arrived_.push_back(j);
  dirty_ = true;
}

void Engine::on_finish(int j, std::uint64_t version) {
  if (status_of(j) != Status::running || version != state_[at(j)].version) return;
  advance(j);
  complete(j, now());
}

// The running job j completed at time t: it leaves its servers.
void Engine::complete(int j, double t) {
  JobProgress& s = state_[at(j)];
  accounting_.delivered(s.work - s.done);  // rounding of the last step
  s.done = s.work;
  clear_workers(j);
  history_.changed(j, t, Change::finish, {});
  status_[at(j)] = Status::finished;
  running_ids_.stopped(j);
  ++s.version;
  accounting_.finished(j, t);
  --unfinished_;
  dirty_ = true;
}

// Sends a running job back to the queue (`why`: a reclaim, or a caller's policy
// that stopped all its workers): with a checkpoint it keeps its progress and pays
// the restart overhead when it starts again; without, it starts over.
void Engine::preempt(int j, Change why) {
  JobProgress& s = state_[at(j)];
  advance(j);
  clear_workers(j);
  history_.changed(j, now(), why, {});
  if (jobs_[at(j)].job.checkpoint) {
    s.restarted = true;
    accounting_.preempted(j, 0.0);
  } else {
    accounting_.preempted(j, s.done, jobs_[at(j)].job.gpus_per_worker);
    s.done = 0.0;
  }
  status_[at(j)] = Status::queued;
  running_ids_.stopped(j);
  enqueue(j);
  set_rate(j);
}

// Lends what the hold allows; reclaims at once what the load needs back. The
// decisions stop once the load series has settled: nothing can change after.
void Engine::on_loan() {
  const int lent = lent_count();
  const int spare = lender_.spare(now());
  const int lendable = std::min(spare, lender_.lendable(now()));
  if (lent > spare) {
    take_back(lent - spare);
  } else if (lent < lendable) {
    int more = lendable - lent;
    for (int s : lender_.servers())
      if (!on_loan_[at(s)] && more > 0) {
        set_loan(s, true);
        --more;
      }
    dirty_ = true;
  }
  if (dirty_) wake_epoch();  // epochs may have stopped while nothing could change
  if (unfinished_ > 0 && now() < lender_.settled())
    events_.push(now() + config_.loan_interval, Kind::loan);
}

void Engine::wake_epoch() {
  if (epoch_pending_ || unfinished_ == 0) return;
  events_.push(now(), Kind::epoch);
  epoch_pending_ = true;
}

// Only the lender's servers are ever lent (on_loan, take_back): a count kept
// by set_loan, not a scan of them at every epoch.
int Engine::lent_count() const { return lent_; }

// What a preemption of each job of a reclaim's state would throw away, for the
// work-aware reclaim policies (empty for the others): a job without checkpoint
// loses all its progress (as preempt() books it, in GPU-seconds); a checkpointed
// one keeps it and pays config_.restart_overhead (reclaim.hpp, WorkAtRisk).
WorkAtRisk Engine::work_at_stake(const ClusterState& state,
                                 const std::vector<int>& job_of) {
  WorkAtRisk work;
  if (config_.reclaim != ReclaimPolicy::least_work &&
      config_.reclaim != ReclaimPolicy::exact_work)
    return work;
  work.restart_overhead = config_.restart_overhead;
  work.unsaved.assign(state.jobs.size(), 0.0);
  for (std::size_t k = 0; k < state.jobs.size(); ++k) {
    const int j = job_of[k];
    if (jobs_[at(j)].job.checkpoint || status_of(j) != Status::running) continue;
    work.unsaved[k] =
        state_[at(j)].done_at(now(), true) * jobs_[at(j)].job.gpus_per_worker;
  }
  return work;
}

void Engine::take_back(int n) {
  std::vector<int> job_of;
  const ClusterState& state = snapshot(job_of, hooks_.reclaim ? Queue::all
                                               : track_base_  ? Queue::lent
                                                              : Queue::none);
  Result& r = accounting_.result();
  const ReclaimPlan plan =
      hooks_.reclaim ? asked_reclaim(state, job_of, n)
                     : reclaim(state, n, config_.reclaim,
                               config_.seed + static_cast<std::uint64_t>(r.reclaims),
                               work_at_stake(state, job_of));
  ++r.reclaims;
  r.collateral_gpus += plan.collateral_gpus;
  r.reclaim_demand_gpus += plan.demand_gpus;
  // A server reclaimed free: none of the jobs it preempts ran there.
  std::vector<char> preempted(state.jobs.size(), 0);
  for (int j : plan.preempted) preempted[at(j)] = 1;
  std::vector<int> hosts;  // servers of preempted jobs' workers
  for (const Worker& w : state.workers)
    if (preempted[at(w.job)]) hosts.push_back(w.server);
  std::sort(hosts.begin(), hosts.end());
  for (int s : plan.servers)
    r.servers_reclaimed_free += !std::binary_search(hosts.begin(), hosts.end(), s);
  r.servers_reclaimed += static_cast<std::int64_t>(plan.servers.size());
  for (int j : plan.preempted) preempt(job_of[at(j)]);
  for (const auto& [j, removed] : plan.scaled_in) {
    const int sj = job_of[at(j)];
    advance(sj);
    std::vector<Placed>& w = workers_[at(sj)];
    for (std::size_t k = w.size(); k-- > 0;)
      if (std::find(plan.servers.begin(), plan.servers.end(), w[k].server) !=
          plan.servers.end())
        remove_worker(sj, k);
    history_.changed(sj, now(), Change::reclaim_scale_in, w);
    accounting_.scaled(sj);
    set_rate(sj);
  }
  for (int s : plan.servers) set_loan(s, false);
  dirty_ = true;
}

// Lends or returns an inference server, keeping the usable free GPUs and the
// kernels' snapshot of the servers in step.
void Engine::set_loan(int server, bool lent) {
  const int free = servers_[at(server)].gpus - used_[at(server)];
  usable_free_ += lent ? free : -free;
  loaned_gpus_ += lent ? servers_[at(server)].gpus : -servers_[at(server)].gpus;
  lent_ += (lent ? 1 : 0) - on_loan_[at(server)];
  on_loan_[at(server)] = lent ? 1 : 0;
  layout_->set_usable(server, lent);
  if (!snapshot_.servers.empty()) snapshot_.servers[at(server)].on_loan = lent;
}

// An epoch with no arrival, completion or loan change since the last is
// skipped: only remaining work has moved, which may shift the knapsack's values
// a little; the next event re-plans. This keeps long quiet stretches cheap.
void Engine::on_epoch() {
  epoch_pending_ = false;
  if (goodput_run_) {
    on_round();
  } else if (config_.allocator == Allocator::tiresias) {
    dirty_ = false;  // every epoch: attained service grows with time
    tiresias_fixed();
    ++accounting_.result().epochs_run;
  } else if (dirty_) {
    dirty_ = false;
    plan_epoch();
  } else {
    ++accounting_.result().engine.epochs_quiet;
  }
  ++accounting_.result().engine.epochs;
  const int lent = lent_count();
  const int n = static_cast<int>(lender_.servers().size());
  accounting_.sample(now(), usage(now()), lent, std::max(0, n - lent),
                     static_cast<std::int64_t>(queue_.size()),
                     static_cast<std::int64_t>(running_ids_.size()));
  if (unfinished_ > 0 && !stuck()) {
    events_.push(now() + config_.schedule_interval, Kind::epoch);
    epoch_pending_ = true;
  }
}

// An epoch's plan by the kernel or a caller's policy. The kernel pulls its queued
// jobs (feed.cpp); it runs when it could act, as when the snapshot held the
// queued jobs that could start (Queue::startable), so that epochs_run counts the
// same epochs.
void Engine::plan_epoch() {
  Result::EngineCounters& counters = accounting_.result().engine;
  if (pulls_ && !kernel_would_run()) {
    ++counters.epochs_quiet;
    return;
  }
  std::vector<int> job_of;
  const ClusterState& state = snapshot(job_of, hooks_.allocate ? Queue::all
                                               : pulls_        ? Queue::pulled
                                                               : Queue::startable);
  first_pulled_ = job_of.size();
  if (!state.jobs.empty() || pulls_) {
    options_.remaining.clear();
    options_.throughput.clear();
    for (int j : job_of) {
      options_.remaining.push_back(state_[at(j)].remaining_fraction());
      if (!linear_) options_.throughput.push_back(curve(j));
    }
    if (pulls_) start_pulling(job_of);
    const Decision d =
        hooks_.allocate ? asked_decision(state, job_of) : schedule(state, options_);
    stop_pulling();
    apply(d, state, job_of);
    ++accounting_.result().epochs_run;
  }
  const auto touched = static_cast<std::int64_t>(job_of.size());
  counters.jobs_touched += touched;
  counters.most_touched = std::max(counters.most_touched, touched);
  if (touched == 0) ++counters.epochs_quiet;
}

// Nothing runs, nothing will arrive and the loans will not change: jobs still
// queued can never start.
bool Engine::stuck() const {
  if (now() < last_arrival_ || dirty_) return false;
  if (lender_.active() && now() < lender_.settled()) return false;
  return running_ids_.empty();
}

// GPUs of job j's workers beyond its min_workers.
int Engine::beyond_min(int j) const {
  const Job& job = jobs_[at(j)].job;
  const int extra = static_cast<int>(workers_[at(j)].size()) - job.min_workers;
  return extra > 0 ? extra * job.gpus_per_worker : 0;
}

void Engine::apply(const Decision& d, const ClusterState& state,
                   const std::vector<int>& job_of) {
  // Only the jobs the decision touches are visited, in state order. A job's
  // workers sit together in the snapshot in the job's own order (copy_workers),
  // so a worker's position in its job is its distance from the job's first.
  std::vector<std::pair<int, std::size_t>> stops;  // (state job, position)
  stops.reserve(d.stop.size());
  for (const int w : d.stop) {
    const int i = state.workers[at(w)].job;
    std::size_t first = at(w);
    while (first > 0 && state.workers[first - 1].job == i) --first;
    stops.emplace_back(i, at(w) - first);
  }
  std::sort(stops.begin(), stops.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;  // last first
  });
  std::vector<int> changed;
  changed.reserve(stops.size() + d.start.size());
  for (const auto& stop : stops) changed.push_back(stop.first);
  for (const Worker& w : d.start) changed.push_back(w.job);
  std::vector<int> started;  // state jobs that start workers
  started.reserve(d.start.size());
  for (const Worker& w : d.start) started.push_back(w.job);
  std::sort(started.begin(), started.end());
  std::vector<int> moved = d.moved;  // state jobs moved whole (start_on_loan)
  std::sort(moved.begin(), moved.end());
  dirty_ |= !moved.empty();  // the GPUs they left may start a job left out
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  std::vector<int> touched;
  touched.reserve(changed.size());
  std::vector<std::size_t> held;  // touched job -> workers before
  held.reserve(changed.size());
  changed = apply_order(changed, job_of);
  auto stop = stops.begin();
  for (const int i : changed) {
    const int j = job_of[at(i)];
    advance(j);
    held.push_back(workers_[at(j)].size());
    for (; stop != stops.end() && stop->first == i; ++stop)
      remove_worker(j, stop->second);
    touched.push_back(j);
  }
  for (const Worker& w : d.start) add_worker(job_of[at(w.job)], w.server, w.flexible);
  for (std::size_t k = 0; k < touched.size(); ++k) {
    const int j = touched[k];
    JobProgress& s = state_[at(j)];
    if (status_of(j) == Status::running && workers_[at(j)].empty()) {
      preempt(j, Change::preemption);  // a caller's policy stopped all its workers
      dirty_ = true;                   // the next epoch may start it elsewhere
      continue;
    }
    const bool moves = std::binary_search(moved.begin(), moved.end(), changed[k]);
    if (held[k] > 0) accounting_.scaled(j);  // a move too, as history counts it
    if (history_.on())
      history_.changed(j, now(),
                       status_of(j) == Status::queued ? Change::start
                       : moves ? Change::move
                               : resized(held[k], workers_[at(j)].size()),
                       workers_[at(j)]);
    const bool starts = std::binary_search(started.begin(), started.end(), changed[k]);
    if (status_of(j) == Status::queued && !workers_[at(j)].empty()) {
      status_[at(j)] = Status::running;
      dequeue(j);
      running_ids_.started(j);
      s.updated = now();
      accounting_.started(j, now());
      s.paused_until =
          now() + (s.restarted ? config_.restart_overhead : config_.start_overhead);
      s.restarted = false;
    } else if (moves) {  // checkpointed, then restarted where it moved
      s.paused_until = std::max(s.paused_until, now() + config_.restart_overhead);
    } else if (starts && config_.start_overhead > 0.0) {
      s.paused_until = std::max(s.paused_until, now() + config_.start_overhead);
    }
    set_rate(j);
  }
}

Result simulate(const std::vector<Server>& servers, const std::vector<SimJob>& jobs,
                const std::vector<LoadPoint>& load, const Config& config,
                const Progress& progress, const std::vector<Application>& applications,
                const Hooks& hooks) {
  return Engine(servers, jobs, load, config, progress, applications, hooks).run();
}

}  // namespace aryl::sim
