// Job scheduling at one epoch (paper §5, Algorithm 2): how many
// workers each job gets and where they run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aryl/model.hpp"
#include "aryl/placement.hpp"

namespace aryl {

enum class AllocationPolicy {
  aryl,     // SJF on base demand, then the multiple-choice knapsack for extra workers
  fifo,     // arrival order at max_workers, no elasticity (strict unless backfill)
  sjf,      // shortest estimated job first at max_workers, no elasticity
  gandiva,  // arrival order at base demand; grow elastic jobs only when none is pending
  afs,      // base demand first, then one worker at a time by throughput gain per GPU
};

AllocationPolicy parse_allocation_policy(std::string_view name);

// aryl, gandiva and afs scale elastic jobs; fifo and sjf run every job at max_workers.
bool scales_elastic_jobs(AllocationPolicy policy);

// Workers a queued job must get to start under `policy`: min_workers when the
// policy scales elastic jobs, otherwise max_workers.
int base_demand(const Job& job, AllocationPolicy policy);

// A queue the kernel pulls its queued jobs from, one at a time in the policy's
// admission order, instead of reading them from the state (the simulator's: its
// queue may be long while an epoch admits a few). The kernel stops pulling once
// no job left could be placed, so an epoch's work follows what it admits, not the
// queue's length; the decisions are those of the state holding every queued job.
class QueueFeed {
 public:
  // The most workers of `gpus_per_worker` GPUs a queued job requiring GPU type
  // `gpu_type` ("" = any), hetero or not, could be placed on now.
  using Room =
      std::function<int(const std::string& gpu_type, bool hetero, int gpus_per_worker)>;
  virtual ~QueueFeed() = default;
  // Appends the next queued job in the policy's order (shortest base-demand
  // running time first under aryl and sjf, then submit time; else arrival
  // order) whose base demand is within its `room`, passing over those that
  // could not be placed; under strict fifo the next job, or none if it is not
  // within. Appends the job to the state's jobs, and its entries to the
  // options' `remaining` and `throughput` where those hold one per job. Returns
  // a key >= 0 that orders jobs of equal submit time as they arrived (the
  // simulator's trace index), or -1 when there is no such job.
  virtual std::int64_t pull(const Room& room) = 0;
  // Whether every queued job was pulled.
  [[nodiscard]] virtual bool drained() const = 0;
  // The job just pulled was refused: it would be placed only on GPUs at least
  // refuse_margin slower than its fastest type, and finishes sooner waiting for
  // that type. Until admitted() the same rule refuses every later job of its
  // shape (GPU type, hetero, GPUs per worker, base workers, elastic) whose
  // base-demand running time is at least refuse_margin longer (same placement,
  // same wait, a larger gain from the faster GPUs; the margins hold far above
  // rounding), so a feed in shortest-first order may pass over them.
  virtual void refused_for_faster() {}
  // The job just pulled was admitted: the room changed.
  virtual void admitted() {}
  // The state may leave out running jobs the kernel could not change (their
  // workers all base workers that the options' layout holds: jobs that are not
  // elastic, or every job under a policy that does not scale). For the wait
  // for a GPU type (admit_one) the feed appends, per GPU type of the layout,
  // each such job's (estimated time left on its workers, GPUs of that type), as
  // the kernel estimates it for the running jobs in the state.
  using Releases = std::vector<std::vector<std::pair<double, int>>>;
  virtual void left_out_releases(Releases& /*releases*/) const {}
  // The relative margins of refused_for_faster.
  static constexpr double refuse_margin = 1e-6, slower_margin = 1e-3;
};

struct ScheduleOptions {
  AllocationPolicy policy = AllocationPolicy::aryl;
  PlacementPolicy placement = PlacementPolicy::aryl;
  bool backfill = false;  // fifo: let later jobs start when the head does not fit
  // Fraction of each job's work still to do (index = job; empty = all of it).
  std::vector<double> remaining;
  // Relative GPU speed per server (index = server; empty = the layout's speed
  // of each GPU type, all 1.0 without a layout): a worker on a server of speed
  // s progresses at s times a reference worker's rate.
  std::vector<double> speed;
  // Throughput factor of a job whose workers span GPU types (Appendix A).
  double hetero_efficiency = 0.7;
  // Throughput with 1..max_workers workers (index = job; empty, or an empty
  // entry, = linear scaling). The job's duration is anchored at its reference
  // worker count, so only ratios of the curve matter.
  std::vector<std::vector<double>> throughput;
  // A caller's own phase 1 (a policy built from the kernel's parts): the queued
  // jobs to admit, in this order, each at its base demand if it can be placed
  // (skipped otherwise); queued jobs not listed stay queued. Unset = the
  // policy's order (shortest first, or arrival order).
  std::optional<std::vector<int>> queue;
  // The jobs that may take extra workers in phase 2 (index = job, nonzero = may;
  // empty = every elastic job).
  std::vector<std::uint8_t> may_grow;
  // The servers as read before (types, GPUs, pools, loans), for a caller that
  // schedules the same servers epoch after epoch and keeps their loans current
  // in it (the simulator): each epoch then skips reading every server record.
  // It must describe the state's servers; null = read them.
  std::shared_ptr<const ServerLayout> layout;
  // Start on loan (sim::Config::start_on_loan; the policy's own queue order
  // only): a queued job whose only open GPUs are slower than its fastest type
  // starts there rather than wait; a running job whose base workers are slower
  // than its fastest type is a mover, offered that type in the same queue order
  // (by its remaining time), and moves there whole when its base demand fits and
  // the move pays: its time there at base demand plus `move_overhead` seconds
  // without progress is shorter than its time on all the workers it holds. Its
  // flexible workers then stop; Decision::moved lists the jobs moved.
  bool start_on_loan = false;
  double move_overhead = 0.0;
  // Set: the state holds only running jobs and phase 1 pulls the queued ones
  // from here (QueueFeed); `queue` must then be unset and `may_grow` empty.
  // Decision::pending lists only the jobs pulled and left queued.
  QueueFeed* feed = nullptr;
};

struct Decision {
  std::vector<Worker> start;    // workers to launch (flexible = beyond min_workers)
  std::vector<int> stop;        // indices into state.workers to remove (scale-ins)
  std::vector<int> allocation;  // job -> workers after the decision (0 = not running)
  std::vector<int> pending;     // queued jobs left queued, in queue order
  std::vector<int> moved;       // running jobs moved to faster GPUs (start_on_loan)
};

// Running jobs (those with workers) keep their base workers where they are
// (unless start_on_loan moves them: ScheduleOptions); a running job's base
// workers are its first min_workers workers not marked flexible (then marked
// ones, in input order, if too few are unmarked). Queued
// jobs (no workers) are admitted by the policy's phase 1, each only if all its
// base workers can be placed at once (otherwise skipped, not blocking; strict
// fifo blocks). Elastic policies then distribute the remaining GPUs, including
// those now held by flexible workers, as extra workers. The state must be valid.
//
// Every decision sees real GPU speeds: a job's base workers go to the fastest
// GPU type with room (Placer), and its extra workers to the GPU type that
// shortens it most (its own type unless hetero). The knapsack runs once per GPU
// type, capacity = that type's free GPUs, item values = running-time reductions
// at the speeds the workers would really get (so a slower worker, or a mixed-
// type job's efficiency loss, counts as it would run; items that would not
// shorten the job are never taken).
Decision schedule(const ClusterState& state, const ScheduleOptions& options);

// Refuses (std::invalid_argument, naming the job) throughput curves that are not
// one per job (or none), or whose curve is neither empty (linear) nor one finite
// value > 0 per worker count 1..max_workers: schedule and advance_remaining both ask.
void check_curves(const ClusterState& state,
                  const std::vector<std::vector<double>>& curves);

// Throughput with `workers` workers: curve[workers - 1], or `workers` (linear)
// when the curve is empty.
double throughput(const std::vector<double>& curve, int workers);

// Estimated running time of the job's remaining work with `workers` workers of
// mean relative speed `speed`: estimated_duration x T(reference) / T(workers) x
// remaining / speed, T being the throughput curve (linear if empty).
double running_time(const Job& job, int workers, double remaining = 1.0,
                    const std::vector<double>& curve = {}, double speed = 1.0);

// Each job's remaining work (a fraction in [0, 1]) after `seconds` more on its
// workers in `state`, moved as the simulator moves it (sim/progress.cpp): progress
// per second is throughput(workers) x the mean relative speed of their servers
// (x hetero_efficiency when they span GPU types), over the job's work, duration x
// throughput(reference workers). `speed`: per server (empty = all 1.0); `curves`:
// per job (empty, or an empty curve = linear). A job without workers keeps its
// remaining; one whose work is done gets 0.
std::vector<double> advance_remaining(const ClusterState& state,
                                      std::vector<double> remaining, double seconds,
                                      const std::vector<double>& speed,
                                      double hetero_efficiency,
                                      const std::vector<std::vector<double>>& curves);

}  // namespace aryl
