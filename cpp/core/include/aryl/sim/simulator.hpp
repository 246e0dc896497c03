// The discrete-event cluster simulator: a trace of jobs on training servers plus
// inference servers lent and reclaimed by an inference-load series, driven by the
// same kernels as aryl.schedule and aryl.reclaim. The engine's rooms live in
// src/sim/: events (queue and clock), loaning, progress (fixed-duration jobs),
// goodput_progress (goodput-driven jobs), rounds (stepping those), preemptive
// (the Tiresias round), accounting, audit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "aryl/application.hpp"
#include "aryl/model.hpp"
#include "aryl/placement.hpp"
#include "aryl/reclaim.hpp"
#include "aryl/schedule.hpp"

namespace aryl::sim {

enum class Scaling {
  linear,     // throughput(w) = w
  imperfect,  // the paper's §7.2 model: -10% of ideal per worker beyond the midpoint
};

// Who allocates GPUs at each scheduling epoch: the schedule() kernel under
// Config::policy, the Tiresias round (the Pollux artifact's baseline:
// two-queue least attained service, preemptive, the user's replica count), or
// the Pollux policy (aryl/pollux.hpp: a genetic search over replicas per node
// for goodput-driven jobs that learn their goodput model and choose their batch).
enum class Allocator {
  kernel,
  tiresias,
  pollux,
};

struct Config {
  Allocator allocator = Allocator::kernel;
  AllocationPolicy policy = AllocationPolicy::aryl;
  PlacementPolicy placement = PlacementPolicy::aryl;
  ReclaimPolicy reclaim = ReclaimPolicy::aryl;
  bool backfill = false;
  // Start on loan (the kernel's policies; off: today's rule): a queued job whose
  // only open GPUs are slower than its fastest type (loaned T4s) starts there
  // instead of waiting for that type, and moves to it once it has room for its
  // base demand, if the move pays: its time there plus restart_overhead is
  // shorter than its time where it runs. A move is checkpointed (its progress
  // kept, so its remaining work runs at the faster speed) and costs
  // restart_overhead s without progress; it counts as a scaling operation, as
  // every Change::move does. Movers take the freed GPUs in the queue's own
  // order (SJF: by remaining time) among the queued jobs (ScheduleOptions).
  bool start_on_loan = false;
  Scaling scaling = Scaling::linear;
  double schedule_interval = 60.0;  // s between scheduling epochs
  double loan_interval = 300.0;     // s between loan/reclaim decisions
  double restart_overhead = 63.0;   // s without progress after a checkpointed restart
  // s without progress when a fixed-duration job starts workers otherwise: its
  // first start, a scale-out or a move (live, containers take this long to join).
  double start_overhead = 0.0;
  // Goodput-driven jobs: s without progress after every (re)allocation, the
  // first start included (the Pollux artifact's 30 s).
  double reallocation_overhead = 30.0;
  double tiresias_threshold = 16 * 3600.0;  // GPU-s of executed time before demotion
  int pollux_population = 100;              // the Pollux search's population per round
  int pollux_generations = 100;  // its generations per round (the paper: 250)
  // Its threads (same result for any number): the machine's, at most 8.
  int pollux_threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  // Goodput-driven jobs under Allocator::kernel (Aryl+TunedJobs when set): each
  // job carries a Pollux agent that learns its goodput model from the steps it
  // runs; the knapsack values its extra replicas by the running times that model
  // predicts, and the job re-chooses its batch on every allocation. Unset: the
  // user's batch on every allocation, valued by its measured throughput.
  bool tuned = false;
  double headroom = 0.0;  // inference keeps ceil(load x (1 + headroom) x N) servers
  // A server is lent only once the load has left it spare for this long (s);
  // reclaiming stays immediate. Damps lending back and forth on load noise.
  double lend_hold = 3600.0;
  double hetero_efficiency = 0.7;  // throughput factor of a job spanning GPU types
  std::map<std::string, double> gpu_speed{{"V100", 1.0}, {"T4", 0.25}};  // unknown: 1.0
  double horizon = std::numeric_limits<double>::infinity();  // stop time (s)
  std::uint64_t seed = 0;  // of the random reclaim policy
  bool audit = false;      // check the invariants after every event (slow)
  bool history = false;    // record every job's allocation intervals (Result::history)
};

// One job of the trace. `throughput`, if not empty, gives the job's throughput with
// 1..max_workers workers (index w - 1) and overrides Config::scaling. The job's
// duration is its running time at job.reference() workers: the curve is anchored
// there, and the scheduler's estimates use the same curve.
//
// A goodput-driven job (`application` >= 0, an index into simulate()'s
// applications) ignores `duration` and `throughput`: it runs the user's
// job.max_workers replicas (one GPU each) at global batch `batch_size` and
// completes when its progress passes its application's last epoch (scaled by
// work_scale). Under Allocator::pollux it runs what the policy gives it, at most
// job.max_workers replicas, and chooses its batch (batch_size 0) or keeps
// batch_size (> 0). Under Allocator::kernel it is scheduled as any job, elastic
// in job.min_workers..max_workers replicas, its duration being the scheduler's
// estimate at job.reference() replicas.
struct SimJob {
  Job job;
  std::vector<double> throughput;
  int application = -1;
  double batch_size = 0.0;
  double work_scale = 1.0;  // the fraction of its application's work (> 0)
};

struct LoadPoint {
  double time;  // s
  double load;  // fraction of the inference cluster's capacity needed, in [0, 1]
};

// Why a job's allocation changed: what began or ended one of its intervals.
enum class Change : std::uint8_t {
  start,               // placed from the queue (its first start, or a restart)
  scale_out,           // more workers (the allocator's choice)
  scale_in,            // fewer workers (the allocator's choice)
  move,                // as many workers, placed elsewhere (a re-placement)
  reclaim_scale_in,    // its workers on reclaimed servers removed
  reclaim_preemption,  // all its workers removed by a reclaim: back to the queue
  preemption,          // stopped by the allocator (Tiresias, Pollux): back to the queue
  finish,              // completed
  end,                 // still running when the run stopped (horizon or cancelled)
};

// Every job's allocation intervals (Config::history), one row per (interval,
// server): job `job` held `workers` workers on `server` from `start` to `end`;
// `opened` and `closed` say why the interval began and ended (a Change). An
// interval's rows are consecutive and share its number `interval` (per job,
// from 0). A job's intervals tile the time it held GPUs: from its start to its
// finish, less the time it waited after each preemption.
struct History {
  std::vector<std::int64_t> job, interval, server, workers;
  std::vector<double> start, end;
  std::vector<std::uint8_t> opened, closed;
};

// Per-job columns (index = job) and a timeline sampled at every scheduling
// interval; NaN marks a time that never came (not started, not finished).
struct Result {
  xt::xtensor<double, 1> start_time, finish_time, work_lost;
  xt::xtensor<std::int64_t, 1> preemptions, scaling_ops;
  xt::xtensor<std::uint8_t, 1> ran_on_training, ran_on_inference, ran_mixed;
  xt::xtensor<std::uint8_t, 1> rejected;  // by Hooks::admit: never queued, never ran

  xt::xtensor<double, 1> t;
  xt::xtensor<std::int64_t, 1> training_gpus_used, loaned_gpus_used, on_loan,
      inference_needed, queue_length, running_jobs;

  double end_time = 0.0;
  double training_gpu_seconds =
      0.0;                          // GPU-seconds of training jobs on training servers
  double loaned_gpu_seconds = 0.0;  // ... on on-loan inference servers
  double inference_gpu_seconds = 0.0;  // occupied by inference (load x capacity)
  double loaned_capacity_seconds = 0.0;
  double work_delivered = 0.0;   // worker-seconds of progress at reference speed
  double work_completed = 0.0;   // work of finished jobs + progress of unfinished ones
  double work_lost_total = 0.0;  // progress discarded by preemptions without checkpoint
  double work_lost_gpu_seconds = 0.0;  // the same in GPU-seconds at reference speed
  // GPU-seconds held by checkpointed jobs while they pay the restart overhead after a
  // preemption (held, no progress): the other cost of a preemption.
  double restart_gpu_seconds = 0.0;
  // Server-seconds the inference side needed a server still on loan: its load rose
  // above what the lent servers left it between two loan decisions (reclaims happen
  // only at loan decisions, every loan_interval), so those servers came back late.
  double inference_short_server_seconds = 0.0;
  std::int64_t reclaims = 0, servers_reclaimed = 0, servers_reclaimed_free = 0;
  std::int64_t collateral_gpus = 0, reclaim_demand_gpus = 0, epochs_run = 0;
  // What the engine's scheduling epochs cost (for tests and benchmarks, not a
  // result): epoch events handled, those that touched no job (nothing changed,
  // or nothing the kernel could act on), jobs the others touched (handed to the
  // kernel: the running jobs it could change, the queued jobs it pulled), queued
  // jobs pulled, and the most jobs one epoch touched. Every running job is still
  // brought up to now at each planned epoch (a cheap step, kept so that progress
  // rounds as it always did).
  struct EngineCounters {
    std::int64_t epochs = 0, epochs_quiet = 0, jobs_touched = 0, jobs_pulled = 0,
                 most_touched = 0;
  } engine;
  std::vector<std::string>
      violations;   // audit findings (empty when all invariants held)
  History history;  // empty unless Config::history
};

// The run's progress in [0, 1] and the simulated time (s); return false to cancel.
using Progress = std::function<bool(double fraction, double now)>;

// Where the engine stands when it asks a caller's policy (Hooks).
struct Epoch {
  std::int64_t index = 0;  // scheduling epochs planned so far (Result::epochs_run)
  double now = 0.0;        // simulated time, s
};

// What each job of a hook's state has had so far (index = state job): GPU-seconds
// held (its attained service), seconds waited since its submission (not holding
// workers) and preemptions; for the reclaim hook also each job's fraction of work
// left at that moment (`remaining`, as the allocate hook's; empty otherwise), so
// that a policy can weigh the progress a preemption throws away.
struct JobService {
  std::vector<double> attained, waited;
  std::vector<std::int64_t> preemptions;
  std::vector<double> remaining;
};

// A caller's policy, asked instead of the engine's own (aryl.sim.simulate with a
// policy object). Each hook is optional; unset, the engine decides as Config says.
// Fixed-duration runs only. The `state` a hook sees is the engine's: the usable and
// inference servers with their loans, the running jobs in trace order, then every
// queued job in arrival order; job_of[i] is state job i's trace index. Every answer
// is checked before any of it is applied (a std::invalid_argument naming the epoch
// and the job or server otherwise); the run keeps its invariants and books.
struct Hooks {
  // At each scheduling epoch at which something changed (an arrival, a completion,
  // a loan or reclaim; as the built-in kernels are asked): what to start and stop
  // on `state` (Decision::start and stop; its other fields are not read). A running
  // job left without workers goes back to the queue (preempted: a checkpointed job
  // keeps its progress and pays the restart overhead when it starts again).
  // `remaining`: each state job's fraction of work left; `throughput`: each state
  // job's curve (empty when every curve is linear); `service`: each state job's
  // service so far.
  std::function<Decision(const ClusterState& state, const std::vector<int>& job_of,
                         const std::vector<double>& remaining,
                         const std::vector<std::vector<double>>& throughput,
                         const JobService& service, const Epoch& epoch)>
      allocate;
  // When the load needs n lent servers back: n distinct on-loan server indices;
  // the jobs on them are scaled in or preempted as reclaim() would (reclaim_servers).
  std::function<std::vector<int>(const ClusterState& state,
                                 const std::vector<int>& job_of,
                                 const JobService& service, int n, const Epoch& epoch)>
      reclaim;
  // An arriving job (its trace index): false rejects it; it never runs and is
  // reported in Result::rejected.
  std::function<bool(int job, const Epoch& epoch)> admit;

  [[nodiscard]] bool any() const { return allocate || reclaim || admit; }
};

// The most epochs (or loan decisions) a run may need: a run whose span would need
// more is refused up front (its timeline alone would not fit in memory).
inline constexpr double max_steps = 5'000'000;

// Runs the trace to completion (or the horizon). Throws std::invalid_argument on
// bad input: a job that no server could ever host, a bad load series, or a state
// that fails validate(). `progress`, if set, is called with the run's progress in
// [0, 1] (half simulated time up to the last arrival, half jobs finished) and the
// simulated time every ~1% of it and at least every quarter second of wall time.
//
// With goodput-driven jobs (all of the trace's, indexing `applications`) the
// run is round-based, as the Pollux artifact's: the first round is at
// schedule_interval; each round first advances every running job over the last
// interval, then allocates (Allocator::tiresias or Allocator::pollux). Their work
// columns count M0-equivalent steps.
//
// `hooks`, if any is set, ask a caller's policy instead (Hooks; fixed-duration
// runs only).
Result simulate(const std::vector<Server>& servers, const std::vector<SimJob>& jobs,
                const std::vector<LoadPoint>& load, const Config& config,
                const Progress& progress = {},
                const std::vector<Application>& applications = {},
                const Hooks& hooks = {});

}  // namespace aryl::sim
