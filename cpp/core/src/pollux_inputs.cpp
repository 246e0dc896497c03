// A Pollux round's inputs: their checks (the jobs and nodes a round takes, the
// constraints an allocation must meet), the jobs' search order, both shared with
// the reference search (pollux_reference.cpp), and the record of a round's inputs
// as a line of JSON (PolluxOptions::record) that benchmarks/pollux_replay.py
// replays through both searches.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "aryl/pollux.hpp"
#include "pollux_internal.hpp"

namespace aryl {

namespace pollux_detail {

void check_nodes(const std::vector<int>& node_gpus) {
  for (std::size_t n = 0; n < node_gpus.size(); ++n)
    if (node_gpus[n] < 0)
      throw std::invalid_argument(
          fmt::format("pollux: node {} has {} GPUs (must be >= 0)", n, node_gpus[n]));
}

void check_jobs(const std::vector<PolluxJob>& jobs, const std::vector<int>& node_gpus) {
  const int total_gpus = std::accumulate(node_gpus.begin(), node_gpus.end(), 0);
  std::set<std::int64_t> keys;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const PolluxJob& job = jobs[j];
    if (!keys.insert(job.key).second)
      throw std::invalid_argument(
          fmt::format("pollux: job {}: duplicate key {}", j, job.key));
    if (job.max_replicas < 0)
      throw std::invalid_argument(fmt::format(
          "pollux: job {}: max_replicas must be >= 0, got {}", j, job.max_replicas));
    if (job.min_replicas < 0 || job.min_replicas > job.max_replicas ||
        job.min_replicas > total_gpus)
      throw std::invalid_argument(
          fmt::format("pollux: job {}: min_replicas must be in [0, min(max_replicas "
                      "{}, cluster GPUs {})], got {}",
                      j, job.max_replicas, total_gpus, job.min_replicas));
    if (!std::isfinite(job.age) || job.age < 0.0 ||
        !std::isfinite(job.attained_service) || !std::isfinite(job.submit_time) ||
        job.num_restarts < 0)
      throw std::invalid_argument(
          fmt::format("pollux: job {}: age, attained_service and submit_time must be "
                      "finite (age >= 0) and "
                      "num_restarts >= 0",
                      j));
    if (!job.current.empty() && job.current.size() != node_gpus.size())
      throw std::invalid_argument(
          fmt::format("pollux: job {}: current has {} entries for {} nodes", j,
                      job.current.size(), node_gpus.size()));
  }
  std::vector<std::vector<int>> current;
  for (const PolluxJob& job : jobs)
    current.push_back(job.current.empty() ? std::vector<int>(node_gpus.size(), 0)
                                          : job.current);
  check_pollux_allocation(jobs, node_gpus, current, std::numeric_limits<int>::max(),
                          false);
}

// Search order: smallest minimum first (adaptdl's: jobs that want no guarantee
// get the contested GPUs), then least attained service, earliest submitted, key.
std::vector<int> priority_order(const std::vector<PolluxJob>& jobs) {
  std::vector<int> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const PolluxJob& x = jobs[static_cast<std::size_t>(a)];
    const PolluxJob& y = jobs[static_cast<std::size_t>(b)];
    return std::tie(x.min_replicas, x.attained_service, x.submit_time, x.key) <
           std::tie(y.min_replicas, y.attained_service, y.submit_time, y.key);
  });
  return order;
}

// One round's inputs as a line of JSON (options.record).
void record_round(const std::string& path, const std::vector<PolluxJob>& jobs,
                  const std::vector<int>& node_gpus) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr)
    throw std::invalid_argument(fmt::format("pollux: cannot append to {}", path));
  fmt::print(file, "{{\"node_gpus\": [{}], \"jobs\": [", fmt::join(node_gpus, ", "));
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const PolluxJob& job = jobs[j];
    std::string model = "null";
    if (job.model) {
      const BatchLimits& b = job.model->limits();
      model = fmt::format(
          "[[{}], {}, {}, {}, {}, {}, {}]", fmt::join(job.model->perf().array(), ", "),
          job.model->grad().sqr, job.model->grad().var, b.init_batch_size,
          b.max_batch_size, b.min_atomic_bsz, b.max_atomic_bsz);
    }
    fmt::print(file,
               "{}{{\"model\": {}, \"max_replicas\": {}, \"min_replicas\": {}, "
               "\"current\": [{}], \"attained_service\": {}, \"submit_time\": {}, "
               "\"age\": {}, \"num_restarts\": {}}}",
               j > 0 ? ", " : "", model, job.max_replicas, job.min_replicas,
               fmt::join(job.current, ", "), job.attained_service, job.submit_time,
               job.age, job.num_restarts);
  }
  fmt::print(file, "]}}\n");
  std::fclose(file);
}

}  // namespace pollux_detail

void check_pollux_allocation(const std::vector<PolluxJob>& jobs,
                             const std::vector<int>& node_gpus,
                             const std::vector<std::vector<int>>& allocation,
                             int max_nodes_per_job, bool check_min) {
  if (allocation.size() != jobs.size())
    throw std::invalid_argument(fmt::format("pollux: {} allocations for {} jobs",
                                            allocation.size(), jobs.size()));
  std::vector<int> used(node_gpus.size(), 0), distributed(node_gpus.size(), 0);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const std::vector<int>& row = allocation[j];
    if (row.size() != node_gpus.size())
      throw std::invalid_argument(fmt::format("pollux: job {}: {} entries for {} nodes",
                                              j, row.size(), node_gpus.size()));
    int replicas = 0, nodes = 0;
    for (std::size_t n = 0; n < row.size(); ++n) {
      if (row[n] < 0)
        throw std::invalid_argument(
            fmt::format("pollux: job {}: {} replicas on node {}", j, row[n], n));
      replicas += row[n];
      nodes += row[n] > 0;
      used[n] += row[n];
    }
    if (replicas > jobs[j].max_replicas || nodes > max_nodes_per_job)
      throw std::invalid_argument(
          fmt::format("pollux: job {}: {} replicas on {} nodes exceeds its caps ({} "
                      "replicas, {} nodes)",
                      j, replicas, nodes, jobs[j].max_replicas, max_nodes_per_job));
    if (check_min && replicas > 0 && replicas < jobs[j].min_replicas)
      throw std::invalid_argument(
          fmt::format("pollux: job {}: {} replicas, below its min_replicas {}", j,
                      replicas, jobs[j].min_replicas));
    for (std::size_t n = 0; n < row.size() && nodes > 1; ++n)
      distributed[n] += row[n] > 0;
  }
  for (std::size_t n = 0; n < node_gpus.size(); ++n) {
    if (used[n] > node_gpus[n])
      throw std::invalid_argument(fmt::format("pollux: node {}: {} replicas on {} GPUs",
                                              n, used[n], node_gpus[n]));
    if (distributed[n] > 1)
      throw std::invalid_argument(fmt::format(
          "pollux: node {} hosts {} distributed jobs (at most 1)", n, distributed[n]));
  }
}

}  // namespace aryl
