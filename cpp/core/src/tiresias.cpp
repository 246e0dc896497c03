#include "aryl/tiresias.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace aryl {
namespace {

std::size_t at(int i) { return static_cast<std::size_t>(i); }

void check(const TiresiasInput& in) {
  const int n = static_cast<int>(in.jobs.size());
  if (!std::isfinite(in.threshold) || in.threshold < 0.0)
    throw std::invalid_argument(
        fmt::format("tiresias: threshold must be >= 0, got {}", in.threshold));
  for (std::size_t k = 0; k < in.node_gpus.size(); ++k)
    if (in.node_gpus[k] < 0)
      throw std::invalid_argument(
          fmt::format("tiresias: node {} has {} GPUs, need >= 0", k, in.node_gpus[k]));
  std::vector<int> seen(in.jobs.size(), 0);
  for (const auto* queue : {&in.queue0, &in.queue1})
    for (int j : *queue) {
      if (j < 0 || j >= n)
        throw std::invalid_argument(fmt::format(
            "tiresias: queue entry {} is not a job index (0..{})", j, n - 1));
      if (++seen[at(j)] > 1)
        throw std::invalid_argument(fmt::format("tiresias: job {} is queued twice", j));
    }
  std::vector<int> used(in.node_gpus.size(), 0);
  for (int j = 0; j < n; ++j) {
    const TiresiasJob& job = in.jobs[at(j)];
    if (seen[at(j)] == 0)
      throw std::invalid_argument(fmt::format("tiresias: job {} is in no queue", j));
    if (job.gpus < 1)
      throw std::invalid_argument(
          fmt::format("tiresias: job {} requests {} GPUs, need >= 1", j, job.gpus));
    if (!std::isfinite(job.executed_time) || job.executed_time < 0.0)
      throw std::invalid_argument(
          fmt::format("tiresias: job {} has executed_time {}, need finite and >= 0", j,
                      job.executed_time));
    if (!job.allocation.empty() && static_cast<int>(job.allocation.size()) != job.gpus)
      throw std::invalid_argument(
          fmt::format("tiresias: job {} holds {} GPUs but requests {}", j,
                      job.allocation.size(), job.gpus));
    for (int node : job.allocation) {
      if (node < 0 || at(node) >= in.node_gpus.size())
        throw std::invalid_argument(
            fmt::format("tiresias: job {} holds a GPU on unknown node {}", j, node));
      if (++used[at(node)] > in.node_gpus[at(node)])
        throw std::invalid_argument(
            fmt::format("tiresias: node {} is over-committed", node));
    }
  }
}

}  // namespace

TiresiasDecision tiresias_round(const TiresiasInput& in) {
  check(in);
  const std::size_t n = in.jobs.size();
  TiresiasDecision out;
  out.running.assign(n, false);
  out.allocations.assign(n, {});
  out.queue1 = in.queue1;
  for (int j : in.queue0) {
    const TiresiasJob& job = in.jobs[at(j)];
    if (job.executed_time * job.gpus >= in.threshold) {
      out.queue1.push_back(j);
      out.demoted.push_back(j);
    } else {
      out.queue0.push_back(j);
    }
  }

  long long remaining = 0;
  for (int g : in.node_gpus) remaining += g;
  std::vector<int> order(out.queue0);
  order.insert(order.end(), out.queue1.begin(), out.queue1.end());
  for (int j : order)
    if (in.jobs[at(j)].gpus <= remaining) {
      out.running[at(j)] = true;
      remaining -= in.jobs[at(j)].gpus;
      out.allocations[at(j)] = in.jobs[at(j)].allocation;  // kept if it had one
    }

  std::vector<int> free = in.node_gpus;
  for (std::size_t j = 0; j < n; ++j)
    for (int node : out.allocations[j]) --free[at(node)];
  for (int j : order) {
    auto& alloc = out.allocations[at(j)];
    if (!out.running[at(j)] || !alloc.empty()) continue;
    const int want = in.jobs[at(j)].gpus;
    while (static_cast<int>(alloc.size()) < want) {
      std::size_t best = 0;
      for (std::size_t k = 1; k < free.size(); ++k)
        if (free[k] > free[best]) best = k;
      const int take = std::min(free[best], want - static_cast<int>(alloc.size()));
      alloc.insert(alloc.end(), static_cast<std::size_t>(take), static_cast<int>(best));
      free[best] -= take;
    }
  }
  return out;
}

std::vector<int> allocation_placement(const std::vector<int>& allocation) {
  std::vector<int> placement;
  for (std::size_t i = 0; i < allocation.size(); ++i) {
    if (i == 0 || allocation[i] != allocation[i - 1])
      placement.push_back(1);
    else
      ++placement.back();
  }
  return placement;
}

}  // namespace aryl
