// The Pollux scheduling policy (Qiao et al., OSDI'21) as its artifact runs it
// (petuum/adaptdl, osdi21-artifact, simulator/pollux.py): a genetic search over
// allocations, i.e. replicas of each job on each node, maximising the power mean
// (p = -1) of the jobs' speedups relative to a fair share, with a penalty on jobs
// whose allocation would change (they pay a restart). One call of
// PolluxPolicy::optimize is one scheduling round; the policy keeps its final
// population to seed the next round, as the artifact does.
//
// The search stores a job's allocation as the nodes it uses, so that a child
// costs what it holds, not jobs x nodes; a job's goodput on (nodes, replicas) is
// computed once and kept while its model is unchanged (across rounds too); each
// try of a generation (tournament, crossover, mutation, repair, score) draws from
// its own random stream, so that tries run on several threads and the result
// does not depend on how many.
//
// Constraints of every allocation it returns: per node, at most its GPUs (one
// GPU per replica); per job, at most max_replicas replicas on at most
// max_nodes_per_job nodes; per node, at most one distributed (multi-node) job;
// per job, either nothing or at least min_replicas replicas.
//
// Minimums follow adaptdl's production policy (sched/adaptdl_sched/policy/
// pollux.py), which the artifact's simulator lacks: jobs are searched in order of
// min_replicas first; each job has a per-node lower bound (min_replicas spread
// over the nodes in order, each capped by its GPUs); every mutated state is
// floored at those bounds; and the repair, after its other steps, stops every
// job left with fewer replicas than its min_replicas (the GPUs it held stay idle
// in that state). min_replicas = 0 (the default) is the artifact's search,
// draw for draw.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aryl/goodput.hpp"
#include "aryl/rng.hpp"

namespace aryl {

struct PolluxJob {
  std::int64_t key = 0;  // stable across rounds (warm start); unique per round
  // The job's fitted goodput model; none before it has profiled anything (its
  // speedup is then taken as replicas / fair-share replicas, as the artifact does).
  std::optional<GoodputModel> model;
  int max_replicas = 1;           // >= 0
  int min_replicas = 0;           // 0: none; else <= max_replicas and the GPUs
  std::vector<int> current;       // replicas per node now (empty: none)
  double attained_service = 0.0;  // GPU-seconds held so far (priority, then submit)
  double submit_time = 0.0;
  double age = 0.0;      // s since submission (restart penalty)
  int num_restarts = 0;  // reallocations after its first start
};

struct PolluxOptions {
  int population = 100;   // the artifact's; >= 2
  int generations = 100;  // the artifact's (the paper says 250); >= 0
  int max_nodes_per_job = 16;
  double restart_delay = 30.0;  // s; the penalty's assumed restart cost
  std::uint64_t seed = 0;
  int threads = 1;  // >= 1; the result does not depend on it
  // Non-empty: every record_every-th round's inputs are appended to this file, a
  // JSON object per line (benchmarks/pollux_replay.py replays them).
  std::string record;
  int record_every = 1;
};

// One round's result: per job (input order) replicas per node, and the objective.
struct PolluxRound {
  std::vector<std::vector<int>> allocation;
  double objective = 0.0;
};

// One job's speedups on (nodes, replicas) relative to its fair share, computed
// on first use and kept for the round (the goodput optimisation is the cost).
// Used by the reference search; the new search keeps PolluxGoodputs.
class PolluxSpeedups {
 public:
  // fair_replicas >= 1 replicas on one node is the reference (speedup 1).
  PolluxSpeedups(std::optional<GoodputModel> model, int fair_replicas, int max_nodes,
                 int max_replicas);
  double operator()(int nodes, int replicas);

 private:
  std::optional<GoodputModel> model_;
  double fair_replicas_, base_ = 1.0;
  int max_replicas_;
  std::vector<double> table_;  // (nodes, replicas) -> speedup; < 0: not yet
};

// One job's goodput (GoodputModel::optimize) per (nodes <= max_nodes, replicas
// <= max_replicas), each computed on first use and kept. Safe to call from
// several threads: a value two threads compute at once is the same value.
class PolluxGoodputs {
 public:
  PolluxGoodputs(GoodputModel model, int max_nodes, int max_replicas);
  // std::invalid_argument outside 1 <= nodes <= min(replicas, max_nodes),
  // replicas <= max_replicas.
  double operator()(int nodes, int replicas) const;
  // Whether this table holds `model`'s values for these bounds.
  bool serves(const GoodputModel& model, int max_nodes, int max_replicas) const;

 private:
  GoodputModel model_;
  int max_nodes_, max_replicas_;
  std::unique_ptr<std::atomic<double>[]> table_;  // < 0: not yet
};

// The search's objective for jobs (priority order) and an allocation (per job,
// replicas per node): each job's speedup scaled by nodes / total GPUs (a
// dominant share of one node is worth 1), times max(age - 30 restarts, 0) /
// (age + 30) when its allocation differs from `current`; then the power mean
// with p = -1 of (scaled + 1e-3). Public for tests.
double pollux_objective(const std::vector<PolluxJob>& jobs,
                        const std::vector<int>& node_gpus,
                        const std::vector<std::vector<int>>& allocation,
                        double restart_delay = 30.0);

// std::invalid_argument unless `allocation` (per job, replicas per node) meets
// the constraints above for these jobs and nodes (the minimums only if
// `check_min`: a job's current allocation may be below its minimum).
void check_pollux_allocation(const std::vector<PolluxJob>& jobs,
                             const std::vector<int>& node_gpus,
                             const std::vector<std::vector<int>>& allocation,
                             int max_nodes_per_job = 16, bool check_min = true);

// The search before its sparse rewrite, one round from the current allocations
// (no warm start), kept to compare the new search with (tests,
// benchmarks/pollux_replay.py). Same checks as PolluxPolicy::optimize.
PolluxRound pollux_reference_round(const std::vector<PolluxJob>& jobs,
                                   const std::vector<int>& node_gpus,
                                   const PolluxOptions& options);

class PolluxWorkers;  // the threads of a search (pollux.cpp)

class PolluxPolicy {
 public:
  // std::invalid_argument for population < 2, generations < 0,
  // max_nodes_per_job < 1, threads < 1 or a negative restart delay.
  explicit PolluxPolicy(PolluxOptions options = {});
  ~PolluxPolicy();
  PolluxPolicy(PolluxPolicy&&) noexcept;
  PolluxPolicy& operator=(PolluxPolicy&&) noexcept;

  // One round: the best allocation found (per job in input order, replicas per
  // node). Deterministic for the seed and the sequence of calls.
  // std::invalid_argument for a bad node or job (negative GPUs, duplicate keys,
  // max_replicas < 0, min_replicas < 0, above max_replicas or above the
  // cluster's GPUs, `current` of the wrong size, over its node or caps,
  // non-finite times).
  std::vector<std::vector<int>> optimize(const std::vector<PolluxJob>& jobs,
                                         const std::vector<int>& node_gpus);

  // The objective of the last round's result.
  double last_objective() const { return last_objective_; }

 private:
  PolluxOptions options_;
  Rng rng_;
  std::vector<std::int64_t> prev_keys_;  // jobs of the last round, search order
  // Its final population: per individual, per job, (node, replicas) pairs.
  std::vector<std::vector<std::vector<std::pair<int, int>>>> prev_states_;
  int prev_nodes_ = 0;
  double last_objective_ = 0.0;
  long long rounds_ = 0;  // calls of optimize (for options.record)
  std::map<std::int64_t, std::shared_ptr<const PolluxGoodputs>> goodputs_;  // by key
  std::unique_ptr<PolluxWorkers> workers_;
};

}  // namespace aryl
