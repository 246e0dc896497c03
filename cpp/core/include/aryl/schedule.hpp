// Job scheduling at one epoch (paper §5, Algorithm 2; DESIGN.md §4.2-4.3): how many
// workers each job gets and where they run.
#pragma once

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

struct ScheduleOptions {
  AllocationPolicy policy = AllocationPolicy::aryl;
  PlacementPolicy placement = PlacementPolicy::aryl;
  bool backfill = false;  // fifo: let later jobs start when the head does not fit
  // Fraction of each job's work still to do (index = job; empty = all of it).
  std::vector<double> remaining;
};

struct Decision {
  std::vector<Worker> start;   // workers to launch (flexible = beyond min_workers)
  std::vector<int> stop;       // indices into state.workers to remove (scale-ins)
  std::vector<int> allocation; // job -> workers after the decision (0 = not running)
  std::vector<int> pending;    // queued jobs left queued, in queue order
};

// Running jobs (those with workers) keep their base workers where they are; a
// running job's base workers are its first min_workers workers not marked
// flexible (then marked ones, in input order, if too few are unmarked). Queued
// jobs (no workers) are admitted by the policy's phase 1, each only if all its
// base workers can be placed at once (otherwise skipped, not blocking; strict
// fifo blocks). Elastic policies then distribute the remaining GPUs, including
// those now held by flexible workers, as extra workers. The state must be valid.
Decision schedule(const ClusterState& state, const ScheduleOptions& options);

// Estimated running time of job j with k workers on its remaining work, under
// linear scaling: estimated_duration x max_workers / k x remaining.
double running_time(const Job& job, int workers, double remaining = 1.0);

}  // namespace aryl
