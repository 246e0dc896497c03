// The simulator's engine (private): the state of every job and server and the
// handlers that change it. simulator.cpp defines the handlers, snapshot.cpp the
// kernels' view of the state, rounds.cpp the round step of goodput-driven jobs,
// preemptive.cpp the Tiresias allocation, audit.cpp the invariant checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../index.hpp"
#include "accounting.hpp"
#include "aryl/pollux.hpp"
#include "aryl/schedule.hpp"
#include "aryl/sim/simulator.hpp"
#include "aryl/tiresias.hpp"
#include "events.hpp"
#include "goodput_progress.hpp"
#include "history.hpp"
#include "loaning.hpp"
#include "progress.hpp"
#include "running.hpp"

namespace aryl::sim {

using detail::at;

enum class Status : std::uint8_t { future, queued, running, finished, rejected };

// The queued jobs a snapshot holds: none (a reclaim), those that could start (an
// epoch of the kernel in rounds of goodput-driven jobs), all (a caller's policy
// sees the whole queue) or those the kernel pulls (an epoch of fixed-duration
// jobs: feed.cpp).
// A reclaim of fixed-duration jobs sees only the running jobs with a worker on
// a lent server (lent): the reclaim kernel reads no other.
enum class Queue : std::uint8_t { none, startable, all, pulled, lent };

// The engine is the kernel's queue feed (feed.cpp) at its epochs.
class Engine : private QueueFeed {
 public:
  Engine(const std::vector<Server>& servers, const std::vector<SimJob>& jobs,
         const std::vector<LoadPoint>& load, const Config& config,
         const Progress& progress, const std::vector<Application>& applications,
         const Hooks& hooks);
  Result run();

 private:
  using FifoKey =
      std::pair<double, int>;  // arrival order: submit time, then trace order

  // inputs
  void check_inputs() const;
  void check_span() const;
  void check_goodput_inputs() const;
  [[nodiscard]] int demand(const Job& j) const;
  // time
  [[nodiscard]] double now() const { return events_.now(); }
  [[nodiscard]] Usage usage(double t) const;
  bool report_progress();
  // job progress and workers
  [[nodiscard]] Status status_of(int j) const { return status_[at(j)]; }
  void advance(int j);
  void set_rate(int j);
  void add_worker(int j, int server, bool flexible);
  void remove_worker(int j, std::size_t k);
  void clear_workers(int j);
  // the base workers the layout holds (fixed-duration runs): see ServerLayout
  void base_changed(int j);
  void update_base();
  void base_servers(int j, std::vector<int>& out) const;
  // handlers
  void on_arrival(int j);
  void on_finish(int j, std::uint64_t version);
  void complete(int j, double t);
  void preempt(int j, Change why = Change::reclaim_preemption);
  void on_loan();
  [[nodiscard]] int lent_count() const;
  void take_back(int n);
  // The WorkAtRisk of a reclaim's state under the work-aware policies.
  WorkAtRisk work_at_stake(const ClusterState& state, const std::vector<int>& job_of);
  void on_epoch();
  void plan_epoch();
  void wake_epoch();  // an epoch now, unless one is already due
  [[nodiscard]] bool stuck() const;
  const ClusterState& snapshot(std::vector<int>& job_of, Queue queue);
  void copy_workers(int j, int index);
  void copy_run();
  void copy_records(const std::vector<int>& job_of);
  [[nodiscard]] int releasable_gpus() const;
  [[nodiscard]] bool lent_to(int j) const;
  [[nodiscard]] int beyond_min(int j) const;
  [[nodiscard]] bool usable(int server) const {
    return servers_[at(server)].pool == Pool::training || on_loan_[at(server)];
  }
  void set_loan(int server, bool lent);
  [[nodiscard]] FifoKey fifo_key(int j) const {
    return {jobs_[at(j)].job.submit_time, j};
  }
  [[nodiscard]] FifoKey fifo_blocker(int bound) const;
  // the queue in the kernel's admission order, pulled by it (feed.cpp)
  using AdmitKey = std::tuple<double, double, int>;  // base-demand time, submit, job
  [[nodiscard]] AdmitKey admit_key(int j) const;
  [[nodiscard]] int demand_gpus(int j) const;
  void enqueue(int j);
  void dequeue(int j);
  [[nodiscard]] bool kernel_would_run() const;
  void start_pulling(std::vector<int>& job_of);
  void stop_pulling();
  std::int64_t pull(const Room& room) override;
  [[nodiscard]] bool drained() const override;
  void refused_for_faster() override;
  void admitted() override;
  void left_out_releases(Releases& releases) const override;
  // A running job an epoch's kernel could not change: its snapshot leaves it out.
  [[nodiscard]] bool left_out(int j) const;
  std::vector<char> changeable_;  // job -> the kernel may change it (left_out)
  [[nodiscard]] std::vector<int> apply_order(const std::vector<int>& changed,
                                             const std::vector<int>& job_of) const;
  void apply(const Decision& d, const ClusterState& state,
             const std::vector<int>& job_of);
  // goodput-driven jobs, one round at each epoch (rounds.cpp)
  void add_goodput_job(int j);
  void on_round();
  void step_goodput(double from, double seconds);
  void reallocate(int j, const std::vector<int>& allocation);
  void reassign(int j, const std::vector<Placed>& workers);
  // aryl's kernel in rounds, tuned jobs' views (kernel_rounds.cpp)
  void kernel_allocate();
  [[nodiscard]] std::vector<Placed> place_replicas(int replicas, int min_workers,
                                                   std::vector<int>& free) const;
  [[nodiscard]] std::pair<double, std::vector<double>> kernel_view(int j);
  void note_learning(int j, std::size_t profiles, int epoch);
  // the Tiresias allocation of a round, and of an epoch of fixed-duration jobs
  // (preemptive.cpp)
  void tiresias_allocate(double interval);
  void tiresias_fixed();
  void check_las_inputs();
  [[nodiscard]] TiresiasDecision tiresias_decide(double interval,
                                                 std::vector<int>& active);
  void place_workers(int j, int index, std::vector<int>& free,
                     std::vector<Worker>& out) const;
  [[nodiscard]] std::vector<int> gpus_held(int j) const;
  // the Pollux allocation of a round (pollux_round.cpp)
  void pollux_allocate(double interval);
  // a caller's policy (hooks.cpp): its answers, checked before they are applied
  [[nodiscard]] Epoch epoch() const;
  [[nodiscard]] JobService service(const std::vector<int>& job_of) const;
  void hold(int j);  // books job j's service up to now (before its workers change)
  [[nodiscard]] Decision asked_decision(const ClusterState& state,
                                        const std::vector<int>& job_of);
  [[nodiscard]] ReclaimPlan asked_reclaim(const ClusterState& state,
                                          const std::vector<int>& job_of, int n);
  // invariants (audit.cpp)
  void audit();
  void audit_base();

  const std::vector<Server>& servers_;
  const std::vector<SimJob>& jobs_;
  const std::vector<LoadPoint>& load_;
  const Config& config_;
  const Progress& progress_;
  const Hooks& hooks_;
  EventQueue events_;
  ClusterState snapshot_;  // the kernels' view, rebuilt in place (snapshot)
  Lender lender_;
  Accounting accounting_;
  HistoryRecorder history_;  // every job's allocation intervals, if asked for
  ScheduleOptions options_;  // the kernel's options; remaining/throughput per epoch
  std::shared_ptr<ServerLayout> layout_;  // options_.layout, loans kept by set_loan
  // Fixed-duration runs: the layout also holds the base workers, job -> their
  // servers as it holds them (server x 2 + 1 if marked flexible), and the jobs
  // whose workers changed since.
  bool track_base_ = false;
  std::vector<std::vector<int>> base_of_;
  std::vector<int> rebase_;
  std::vector<char> rebase_mark_;
  // job -> where its workers start in the last snapshot (valid while they have
  // not changed), and that snapshot's workers (see copy_workers)
  std::vector<std::uint32_t> snapshot_at_;
  static constexpr std::uint32_t not_in_snapshot = 0xffffffffU;
  std::vector<Worker> last_workers_;
  struct {
    std::size_t from = 0, size = 0;  // last_workers_[from, from + size)
    int shift = 0;                   // added to their job indices
  } run_;                            // workers to copy at once (copy_run)
  std::vector<double> speed_;        // server -> GPU speed
  // Throughput with 1..max workers, one per distinct curve (jobs of one shape
  // share theirs), and job -> its curve.
  std::vector<std::vector<double>> curves_;
  std::vector<std::uint32_t> curve_of_;
  [[nodiscard]] const std::vector<double>& curve(int j) const {
    return curves_[curve_of_[at(j)]];
  }
  void share_curves();
  bool linear_ = true;              // every curve linear: the kernel's default
  std::vector<JobProgress> state_;  // job -> progress
  std::vector<Status> status_ = std::vector<Status>(jobs_.size(), Status::future);
  std::vector<std::vector<Placed>> workers_ =
      std::vector<std::vector<Placed>>(jobs_.size());
  RunningJobs running_ids_;  // running jobs, in trace order
  std::set<FifoKey> queue_;  // queued jobs in arrival order
  // Epochs of fixed-duration jobs under the kernel pull their queued jobs
  // (feed.cpp): the queue in the kernel's order, split by what placement sees
  // of a queued job (the GPU type it requires, "" any; hetero; GPUs per worker;
  // base workers; elastic), each bucket with where this epoch's pulls stand in
  // it and the base-demand time from which it is passed over (refused_for_faster);
  // each job's bucket; the job_of the pulls extend and the first pulled job's
  // state index.
  bool pulls_ = false;
  struct Bucket {
    std::string gpu_type;
    bool hetero = false;
    int gpus_per_worker = 1, workers = 1;
    bool elastic = false;
    std::set<AdmitKey> jobs;
    std::set<AdmitKey>::const_iterator next;
    double refused_from = std::numeric_limits<double>::infinity();
  };
  std::vector<Bucket> buckets_;
  std::vector<Bucket*> tried_;  // pull's scratch: the buckets with jobs left
  std::map<std::tuple<std::string, bool, int, int, bool>, std::uint32_t> bucket_named_;
  Bucket* pulled_from_ = nullptr;  // the last pull's bucket and job
  AdmitKey pulled_key_{};
  bool refusing_ = false;     // some bucket is passed over (refused_from)
  bool passed_over_ = false;  // jobs were passed over unpulled this epoch
  std::vector<std::uint32_t> bucket_of_;
  std::vector<int>* pull_job_of_ = nullptr;
  std::size_t first_pulled_ = 0;
  std::vector<int> used_;      // server -> GPUs held by training workers
  std::vector<char> on_loan_;  // server -> lent to training
  int lent_ = 0;               // servers lent
  std::int64_t training_used_ = 0, loaned_used_ = 0, loaned_gpus_ = 0;
  int usable_free_ = 0;      // free GPUs on usable servers (training or on loan)
  int beyond_min_gpus_ = 0;  // GPUs of running jobs' workers beyond min_workers
  std::vector<int> snapshot_job_of_;  // the last snapshot's job_of
  // job -> its record's index in the last snapshot (valid where
  // snapshot_job_of_ there is the job; see copy_records)
  std::vector<std::uint32_t> record_at_ = std::vector<std::uint32_t>(jobs_.size(), 0);
  double last_arrival_ = 0.0, next_report_ = 0.0;
  bool dirty_ = false;          // something changed since the last epoch planned
  bool epoch_pending_ = false;  // an epoch event is in the queue
  int quiet_events_ = 0;        // events since the last progress report
  std::chrono::steady_clock::time_point last_report_{};  // and its wall time
  int unfinished_ = 0;
  // goodput-driven runs: the applications, each job's state, the round clock
  const std::vector<Application>& applications_;
  bool goodput_run_ = false;
  std::vector<GoodputJob> goodput_;  // job -> state (empty in fixed-duration runs)
  double last_round_ = 0.0;
  int node_gpus_ = 1;  // the most GPUs of a server (placements of curves)
  // aryl's kernel with tuned jobs: each job's view while its agent has learnt
  // nothing new, and whether it has since
  std::vector<TunedView> views_;
  std::vector<char> stale_;
  // Tiresias: its two queues (trace job ids), each job's executed time (s of
  // holding an allocation), and the jobs arrived since the last round
  std::vector<int> queue0_, queue1_, arrived_;
  std::vector<double> executed_;
  // Pollux: the policy (its population carries over rounds), each job's
  // attained service (GPU-s held) and reallocations after its first start
  // Each job's service for a caller's policy (JobService): GPU-seconds held and
  // seconds holding workers up to held_since_ (hold, as its workers change).
  std::vector<double> held_gpu_s_ = std::vector<double>(jobs_.size(), 0.0);
  std::vector<double> held_s_ = std::vector<double>(jobs_.size(), 0.0);
  std::vector<double> held_since_ = std::vector<double>(jobs_.size(), 0.0);
  std::optional<PolluxPolicy> pollux_;
  std::vector<double> attained_;
  std::vector<int> restarts_;
};

}  // namespace aryl::sim
