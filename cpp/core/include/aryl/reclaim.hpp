// Which on-loan inference servers to return (paper §4, Algorithm 1).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "aryl/model.hpp"

namespace aryl {

enum class ReclaimPolicy { aryl, scf, random, exact, least_work, exact_work };

// "aryl", "scf", "random", "exact", "least-work" or "exact-work"; anything else is
// std::invalid_argument.
ReclaimPolicy parse_reclaim_policy(std::string_view name);

// What preempting each job throws away, for the work-aware policies (least-work,
// exact-work; the others ignore it). A job's preemption costs its `unsaved` work
// plus, with a checkpoint, `restart_overhead` x the GPUs it holds in the state
// (the restart it then pays before it makes progress again); a scale-in costs
// nothing.
struct WorkAtRisk {
  // Per state job (index = job): GPU-seconds of progress a preemption discards,
  // the progress since its last checkpoint (all of it for a job without one).
  // Empty: none for every job, so only the restart overheads count.
  std::vector<double> unsaved;
  double restart_overhead = 0.0;  // s
};

// Each job's preemption cost in GPU-seconds under `work` (index = job):
// unsaved[j] + (checkpoint ? restart_overhead x its GPUs in the state : 0).
// An `unsaved` of the wrong length, or a negative or non-finite number, is
// std::invalid_argument.
std::vector<double> work_at_risk(const ClusterState& state, const WorkAtRisk& work);

struct ReclaimPlan {
  std::vector<int> servers;    // returned servers, in the order chosen
  std::vector<int> preempted;  // jobs preempted, in order of preemption
  std::vector<std::pair<int, int>>
      scaled_in;            // (job, workers removed), job keeps >= min
  int demand_gpus = 0;      // GPUs of the returned servers
  int collateral_gpus = 0;  // GPUs freed by preempted jobs on servers not returned
  // GPU-seconds the preempted jobs throw away under the WorkAtRisk given (the sum
  // of their work_at_risk; 0 when none was given), whatever the policy.
  double work_lost = 0.0;
};

// `exact` refuses instances whose search space exceeds this many server sets:
// the sum over k = 0 .. min(idle, n) of C(busy on-loan servers, n - k) (idle
// servers are interchangeable, so only the first k of them are ever tried).
inline constexpr double exact_subset_limit = 1e7;

// Chooses `n` on-loan servers of `state` to return under `policy`. Like every
// kernel it takes a state that passed validate() (the Python layer validates
// when it builds the state). n < 0 or n > the number of on-loan servers is
// std::invalid_argument, as is an `exact` instance beyond exact_subset_limit.
//
// Policies:
//  - aryl: greedy on preemption cost, cost(s) = sum over the jobs that returning s
//    would preempt of 1/|S_j| (S_j = the on-loan servers job j still spans). A job
//    that keeps >= min_workers after losing s's workers is scaled in and costs 0,
//    so servers that preempt nothing (the flexible group, idle servers) go first.
//    Costs are recomputed after every pick. Order: (cost, jobs preempted, workers
//    scaled in, input order); costs within 1e-9 are equal. The last pick (and so
//    the N_R = 1 case of Algorithm 1) minimises jobs preempted first, then cost.
//  - scf: the n servers hosting the fewest jobs (ties: input order), ranked once.
//  - random: n servers drawn uniformly with the seeded SplitMix64 generator.
//  - exact: fewest preempted jobs, ties broken by fewer collateral GPUs, then fewer
//    workers scaled in, then the lexicographically first set in input order; by
//    branch and bound over all on-loan servers (idle ones are not assumed to be
//    part of the answer: returning two servers that hold all of a job's workers
//    preempts it with less collateral than returning an idle one and one of
//    them). The oracle the heuristics are tested against.
//  - least-work: greedy on the work a pick throws away (WorkAtRisk). cost(s) =
//    sum over the jobs that returning s would preempt of w_j / min(|S_j|, k),
//    w_j = the job's preemption cost (work_at_risk), |S_j| as for aryl and k =
//    the picks left, this one included: a job's cost is shared among the servers
//    that could still all be returned with it, so on the last pick (k = 1) a
//    server costs exactly the work it throws away. Scale-ins cost 0, so servers
//    that preempt nothing go first, as in Algorithm 1's first step. Costs are
//    recomputed after every pick (a preempted job no longer counts on its other
//    servers; a scaled-in job may now be preempted by them). Order: (cost, work
//    thrown away, jobs preempted, workers scaled in, input order); costs within
//    1e-9 x (1 + the larger) are equal.
//  - exact-work: least total work thrown away (the sum of w_j over the preempted
//    jobs), ties broken by fewer preempted jobs, then as `exact`; by the same
//    branch and bound (work only grows as servers are added), under the same
//    exact_subset_limit. The oracle of least-work.
// Algorithm 1's preemption cost of each on-loan server in the given state (in
// server order): sum over the jobs that returning it would preempt of 1/|S_j|.
std::vector<double> preemption_costs(const ClusterState& state);

ReclaimPlan reclaim(const ClusterState& state, int n, ReclaimPolicy policy,
                    std::uint64_t seed = 0, const WorkAtRisk& work = {});

// The same choice among the given on-loan servers only (a caller's filter, in any
// order): the others stay on loan and do not count in a job's |S_j|; whether a job
// is preempted or scaled in still counts all of its workers. A server index out of
// range, not on loan or given twice is std::invalid_argument naming it, as is n
// larger than the servers given.
ReclaimPlan reclaim(const ClusterState& state, int n, ReclaimPolicy policy,
                    std::uint64_t seed, const std::vector<int>& among,
                    const WorkAtRisk& work = {});

// The plan of returning the given on-loan servers in the given order (a caller's
// choice): what each does to the jobs on it, as the policies above account it.
// A server index out of range, not on loan or given twice is
// std::invalid_argument naming it.
ReclaimPlan reclaim_servers(const ClusterState& state, const std::vector<int>& servers);

}  // namespace aryl
