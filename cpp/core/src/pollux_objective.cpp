// What a Pollux round values: the jobs' goodput tables (each job's goodput on
// (nodes, replicas) computed once from its fitted model and kept while the model
// is unchanged, across rounds too), the round's problem built from the jobs (the
// fair share each speedup is measured against, the restart penalties, adaptdl's
// lower bounds) and the objective of an allocation, pollux_objective: the power
// mean (p = -1) of the jobs' scaled speedups. The search that maximises it is in
// pollux_search.cpp and pollux.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "aryl/pollux.hpp"
#include "pollux_internal.hpp"
#include "pollux_search.hpp"

namespace aryl {

namespace pollux_detail {

RoundProblem::RoundProblem(const std::vector<PolluxJob>& jobs_in,
                           const std::vector<int>& order,
                           const std::vector<int>& node_gpus,
                           const PolluxOptions& options,
                           const std::vector<const PolluxGoodputs*>& tables)
    : jobs(static_cast<int>(order.size())),
      nodes(static_cast<int>(node_gpus.size())),
      max_nodes(std::min(options.max_nodes_per_job, nodes)),
      gpus(node_gpus),
      goodputs(tables) {
  const int total = std::accumulate(gpus.begin(), gpus.end(), 0);
  scale = static_cast<double>(nodes) / total;
  for (int n = 0; n < nodes; ++n)
    if (gpus[static_cast<std::size_t>(n)] == 0) no_gpus.push_back(n);
  const int share = (total + jobs - 1) / jobs;  // ceil(total GPUs / jobs)
  fair = std::max(share, 1);
  for (int j = 0; j < jobs; ++j) {
    const PolluxJob& job = jobs_in[static_cast<std::size_t>(order[j])];
    caps.push_back(job.max_replicas);
    mins.push_back(job.min_replicas);
    has_mins = has_mins || job.min_replicas > 0;
    lower.push_back(spread(job.min_replicas));
    for (int n = 0; n < nodes && !job.current.empty(); ++n)
      if (job.current[static_cast<std::size_t>(n)] > 0)
        base.cells.push_back({n, job.current[static_cast<std::size_t>(n)]});
    base.close_row();
    const double delay = options.restart_delay;
    penalty.push_back(std::max(job.age - job.num_restarts * delay, 0.0) /
                      (job.age + delay));
    reference.push_back(job.model ? reference_goodput(*job.model, share) : 1.0);
  }
}

double RoundProblem::reference_goodput(const GoodputModel& model, int share) {
  double base = model.optimize(1, std::max(share, 1)).goodput;
  if (!(base > 0.0)) base = model.optimize(1, 1).goodput;
  return base > 0.0 ? base : 1.0;
}

Row RoundProblem::spread(int min_replicas) const {
  Row row;
  for (int n = 0; n < nodes && min_replicas > 0; ++n) {
    const int here = std::min(min_replicas, gpus[static_cast<std::size_t>(n)]);
    if (here > 0) row.push_back({n, here});
    min_replicas -= here;
  }
  return row;
}

Genome genome_of(const std::vector<std::vector<int>>& allocation,
                 const std::vector<int>& order) {
  Genome s;
  for (const int j : order) {
    const std::vector<int>& row = allocation[static_cast<std::size_t>(j)];
    for (std::size_t n = 0; n < row.size(); ++n)
      if (row[n] > 0) s.cells.push_back({static_cast<int>(n), row[n]});
    s.close_row();
  }
  return s;
}

std::vector<const PolluxGoodputs*> goodput_tables(
    const std::vector<PolluxJob>& jobs, const std::vector<int>& order, int max_nodes,
    std::map<std::int64_t, std::shared_ptr<const PolluxGoodputs>>& kept) {
  std::map<std::int64_t, std::shared_ptr<const PolluxGoodputs>> now;
  std::vector<const PolluxGoodputs*> tables;
  for (const int j : order) {
    const PolluxJob& job = jobs[static_cast<std::size_t>(j)];
    if (!job.model) {
      tables.push_back(nullptr);
      continue;
    }
    auto it = kept.find(job.key);
    std::shared_ptr<const PolluxGoodputs> table =
        it != kept.end() && it->second->serves(*job.model, max_nodes, job.max_replicas)
            ? it->second
            : std::make_shared<const PolluxGoodputs>(*job.model, max_nodes,
                                                     job.max_replicas);
    tables.push_back(table.get());
    now.emplace(job.key, std::move(table));
  }
  kept.swap(now);
  return tables;
}

}  // namespace pollux_detail

PolluxGoodputs::PolluxGoodputs(GoodputModel model, int max_nodes, int max_replicas)
    : model_(std::move(model)),
      max_nodes_(std::max(max_nodes, 0)),
      max_replicas_(std::max(max_replicas, 0)),
      table_(std::make_unique<std::atomic<double>[]>(
          static_cast<std::size_t>((max_nodes_ + 1) * (max_replicas_ + 1)))) {
  for (int i = 0; i < (max_nodes_ + 1) * (max_replicas_ + 1); ++i)
    table_[static_cast<std::size_t>(i)].store(-1.0, std::memory_order_relaxed);
}

double PolluxGoodputs::operator()(int nodes, int replicas) const {
  if (nodes < 1 || nodes > std::min(replicas, max_nodes_) || replicas > max_replicas_)
    throw std::invalid_argument(fmt::format(
        "pollux: goodput of {} replicas on {} nodes is outside the table ({} nodes, "
        "{} replicas)",
        replicas, nodes, max_nodes_, max_replicas_));
  std::atomic<double>& slot =
      table_[static_cast<std::size_t>(nodes * (max_replicas_ + 1) + replicas)];
  double v = slot.load(std::memory_order_relaxed);
  if (v < 0.0) {
    v = model_.optimize(nodes, replicas).goodput;
    slot.store(v, std::memory_order_relaxed);
  }
  return v;
}

bool PolluxGoodputs::serves(const GoodputModel& model, int max_nodes,
                            int max_replicas) const {
  const BatchLimits& a = model_.limits();
  const BatchLimits& b = model.limits();
  return max_nodes == max_nodes_ && max_replicas == max_replicas_ &&
         model_.perf().array() == model.perf().array() &&
         model_.grad().sqr == model.grad().sqr &&
         model_.grad().var == model.grad().var &&
         a.init_batch_size == b.init_batch_size &&
         a.max_batch_size == b.max_batch_size && a.min_atomic_bsz == b.min_atomic_bsz &&
         a.max_atomic_bsz == b.max_atomic_bsz;
}

double pollux_objective(const std::vector<PolluxJob>& jobs,
                        const std::vector<int>& node_gpus,
                        const std::vector<std::vector<int>>& allocation,
                        double restart_delay) {
  pollux_detail::check_nodes(node_gpus);
  pollux_detail::check_jobs(jobs, node_gpus);
  check_pollux_allocation(jobs, node_gpus, allocation, std::numeric_limits<int>::max());
  if (jobs.empty() || std::accumulate(node_gpus.begin(), node_gpus.end(), 0) == 0)
    return 0.0;
  const std::vector<int> order = pollux_detail::priority_order(jobs);
  PolluxOptions options;
  options.restart_delay = restart_delay;
  options.max_nodes_per_job = static_cast<int>(node_gpus.size());
  std::map<std::int64_t, std::shared_ptr<const PolluxGoodputs>> tables;
  const pollux_detail::RoundProblem problem(
      jobs, order, node_gpus, options,
      pollux_detail::goodput_tables(jobs, order, options.max_nodes_per_job, tables));
  return problem.value(pollux_detail::genome_of(allocation, order));
}

}  // namespace aryl
