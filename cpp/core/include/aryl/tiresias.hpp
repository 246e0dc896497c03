// Tiresias (Gu et al., NSDI'19) as the Pollux artifact's deterministic baseline
// runs it (simulator/tiresias.py): discretised two-queue least-attained-service.
// One call is one scheduling round; the caller keeps the queues, the executed
// time and the allocations between rounds.
#pragma once

#include <vector>

namespace aryl {

// The artifact's demotion threshold: 16 GPU-hours, in GPU-seconds.
inline constexpr double tiresias_default_threshold = 16 * 3600.0;

struct TiresiasJob {
  int gpus = 1;                // requested replicas (one GPU each), >= 1
  double executed_time = 0.0;  // seconds this job has run (wall clock, not GPU-s), >= 0
  std::vector<int>
      allocation;  // node index of each GPU it holds now (empty: not running)
};

struct TiresiasInput {
  std::vector<TiresiasJob> jobs;  // the active (submitted, unfinished) jobs
  std::vector<int> queue0;        // indices into jobs, queue 0 in order
  std::vector<int> queue1;        // queue 1 in order; every job in exactly one queue
  std::vector<int> node_gpus;     // GPUs of each node
  double threshold = tiresias_default_threshold;  // GPU-seconds for demotion
};

struct TiresiasDecision {
  std::vector<int> queue0, queue1;  // after demotion
  std::vector<bool> running;        // per job
  std::vector<std::vector<int>>
      allocations;           // per job: node of each GPU (empty if not running)
  std::vector<int> demoted;  // jobs moved from queue 0 to queue 1 this round
};

// One round:
//  1. demotion: each queue-0 job (in queue order) with executed_time x gpus >=
//     threshold moves to the back of queue 1;
//  2. admission: walk queue 0 then queue 1; a job runs if its GPUs fit in the
//     cluster's remaining total (a count, not per node); every other job is
//     stopped and loses its allocation (preemptive);
//  3. placement: running jobs keep their allocation; each newly running job, in
//     queue order, takes GPUs one node at a time from the node with the most free
//     GPUs (ties: the lowest node index), as many as that node has free.
// std::invalid_argument names the bad job/node: gpus < 1, negative or non-finite
// executed time, a job in no queue or in two, an index out of range, a node with
// fewer than 0 GPUs, an allocation on an unknown node or over-committing a node,
// or an allocation whose size differs from the job's GPUs.
TiresiasDecision tiresias_round(const TiresiasInput& input);

// Contiguous runs of the same node in an allocation, as GPUs per node: the
// artifact's placement tuple ({0, 0, 3} -> {2, 1}).
std::vector<int> allocation_placement(const std::vector<int>& allocation);

}  // namespace aryl
