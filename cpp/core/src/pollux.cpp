// The genetic search of the Pollux policy. An individual ("state") is a job x
// node matrix of replica counts, flattened row-major, jobs in priority order
// (least attained service first: the repair gives them the contested GPUs).
// Each generation breeds as many children as the population (binary tournament,
// single-point crossover over jobs, the artifact's three mutations, then the
// repair that restores the constraints), drops duplicates and keeps the best
// of parents and children (elitist; the artifact's NSGA-II also ranks a second,
// cluster-utility objective, which only matters for autoscaling).
#include "aryl/pollux.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace aryl {
namespace {

constexpr double kMutateRow = 0.1;    // chance a row resets, or is thinned
constexpr double kThinElement = 0.1;  // chance a thinned row's element is zeroed
constexpr double kCrossover = 0.9;    // pymoo's default crossover probability

using State = std::vector<int>;

// Duplicates are told apart by a 64-bit hash (FNV-1a): a collision would only
// drop one child, and keeping hashes instead of states saves a copy per child.
std::uint64_t state_hash(const State& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (int v : s) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL;
  return h;
}

struct Individual {
  State state;
  double value;
};

// One round's problem: jobs in search order, the nodes, and the operators.
class Search {
 public:
  Search(const std::vector<PolluxJob>& jobs, const std::vector<int>& order,
         const std::vector<int>& node_gpus, const PolluxOptions& options, Rng& rng)
      : jobs_(static_cast<int>(order.size())),
        nodes_(static_cast<int>(node_gpus.size())),
        gpus_(node_gpus),
        max_nodes_(options.max_nodes_per_job),
        rng_(rng) {
    const int total = std::accumulate(gpus_.begin(), gpus_.end(), 0);
    scale_ = static_cast<double>(nodes_) / total;
    const int fair = (total + jobs_ - 1) / jobs_;  // ceil(total GPUs / jobs)
    base_.assign(static_cast<std::size_t>(jobs_ * nodes_), 0);
    for (int j = 0; j < jobs_; ++j) {
      const PolluxJob& job = jobs[static_cast<std::size_t>(order[j])];
      caps_.push_back(job.max_replicas);
      speedups_.emplace_back(job.model, fair, std::min(max_nodes_, nodes_),
                             job.max_replicas);
      for (int n = 0; n < nodes_ && !job.current.empty(); ++n)
        base_[idx(j, n)] = job.current[static_cast<std::size_t>(n)];
      const double delay = options.restart_delay;
      penalty_.push_back(std::max(job.age - job.num_restarts * delay, 0.0) /
                         (job.age + delay));
    }
  }

  [[nodiscard]] const State& base() const { return base_; }
  [[nodiscard]] int jobs() const { return jobs_; }
  [[nodiscard]] std::size_t idx(int j, int n) const {
    return static_cast<std::size_t>(j * nodes_ + n);
  }

  double evaluate(const State& s) {
    double inverse = 0.0;
    for (int j = 0; j < jobs_; ++j) {
      int used_nodes = 0, replicas = 0;
      bool changed = false;
      for (int n = 0; n < nodes_; ++n) {
        const int v = s[idx(j, n)];
        used_nodes += v > 0;
        replicas += v;
        changed |= v != base_[idx(j, n)];
      }
      double scaled =
          speedups_[static_cast<std::size_t>(j)](used_nodes, replicas) * scale_;
      if (changed) scaled *= penalty_[static_cast<std::size_t>(j)];
      inverse += 1.0 / (scaled + 1e-3);
    }
    return jobs_ / inverse;
  }

  // Two children of a and b: jobs before a random point from one, the rest
  // from the other (or copies, with probability 1 - kCrossover).
  std::pair<State, State> crossover(const State& a, const State& b) {
    State c = a, d = b;
    if (rng_.uniform() < kCrossover) {
      const auto cut = static_cast<std::ptrdiff_t>(
          idx(static_cast<int>(rng_.below(static_cast<std::uint64_t>(jobs_))), 0));
      std::copy(b.begin() + cut, b.end(), c.begin() + cut);
      std::copy(a.begin() + cut, a.end(), d.begin() + cut);
    }
    return {std::move(c), std::move(d)};
  }

  // The artifact's mutations: a row back to the current allocation; a row
  // thinned; and growth on nodes with free GPUs, likelier on nodes the job
  // already uses, to a uniform count between the current and the node's GPUs.
  void mutate(State& s) {
    for (int j = 0; j < jobs_; ++j)
      if (rng_.uniform() < kMutateRow)
        std::copy_n(base_.begin() + static_cast<std::ptrdiff_t>(idx(j, 0)), nodes_,
                    s.begin() + static_cast<std::ptrdiff_t>(idx(j, 0)));
    for (int j = 0; j < jobs_; ++j)
      if (rng_.uniform() < kMutateRow)
        for (int n = 0; n < nodes_; ++n)
          if (rng_.uniform() < kThinElement) s[idx(j, n)] = 0;
    std::vector<int>& free = free_;
    free = gpus_;
    for (int j = 0; j < jobs_; ++j)
      for (int n = 0; n < nodes_; ++n)
        free[static_cast<std::size_t>(n)] -= s[idx(j, n)];
    const auto open = [&](int n) { return free[static_cast<std::size_t>(n)] >= 1; };
    int open_nodes = 0;
    for (int n = 0; n < nodes_; ++n) open_nodes += open(n);
    if (open_nodes == 0) return;
    const double p1 = 1.0 / open_nodes;
    for (int j = 0; j < jobs_; ++j) {
      int mine = 0;
      for (int n = 0; n < nodes_; ++n) mine += open(n) && s[idx(j, n)] > 0;
      const double p2 = mine > 0 ? 1.0 / mine : 0.0;
      for (int n = 0; n < nodes_; ++n) {
        if (!open(n)) continue;
        int& v = s[idx(j, n)];
        const double p = v > 0 ? p1 + p2 - p1 * p2 : p1;
        if (rng_.uniform() < p) {
          const int room = gpus_[static_cast<std::size_t>(n)] - v;
          v += static_cast<int>(rng_.below(static_cast<std::uint64_t>(room) + 1));
        }
      }
    }
  }

  // Restores the constraints, in the artifact's order: one distributed job per
  // node (the first in priority order keeps it); each job's replica and node
  // caps (excess cut at random nodes); each node's GPUs (first jobs first).
  void repair(State& s) {
    std::vector<char> distributed(static_cast<std::size_t>(jobs_), 0);
    for (int j = 0; j < jobs_; ++j) {
      int used = 0;
      for (int n = 0; n < nodes_; ++n) used += s[idx(j, n)] > 0;
      distributed[static_cast<std::size_t>(j)] = used > 1;
    }
    for (int n = 0; n < nodes_; ++n) {
      bool taken = false;
      for (int j = 0; j < jobs_; ++j) {
        if (!distributed[static_cast<std::size_t>(j)] || s[idx(j, n)] == 0) continue;
        if (taken) s[idx(j, n)] = 0;
        taken = true;
      }
    }
    for (int j = 0; j < jobs_; ++j) cap_job(s, j);
    for (int n = 0; n < nodes_; ++n) {
      int left = gpus_[static_cast<std::size_t>(n)];
      for (int j = 0; j < jobs_; ++j) {
        int& v = s[idx(j, n)];
        v = std::min(v, left);
        left -= v;
      }
    }
  }

 private:
  void cap_job(State& s, int j) {
    const int cap = caps_[static_cast<std::size_t>(j)];
    int replicas = 0, used = 0;
    for (int n = 0; n < nodes_; ++n) {
      replicas += s[idx(j, n)];
      used += s[idx(j, n)] > 0;
    }
    if (replicas <= cap && used <= max_nodes_)
      return;  // the shuffle would change nothing
    std::vector<int>& visit = visit_;
    visit.resize(static_cast<std::size_t>(nodes_));
    std::iota(visit.begin(), visit.end(), 0);
    rng_.shuffle(visit);
    int kept = 0, kept_nodes = 0;
    for (int n : visit) {
      int& v = s[idx(j, n)];
      v = std::min(v, cap - kept);
      if (v > 0 && kept_nodes == max_nodes_) v = 0;
      kept += v;
      kept_nodes += v > 0;
    }
  }

  int jobs_, nodes_;
  std::vector<int> gpus_;
  int max_nodes_;
  Rng& rng_;
  double scale_ = 1.0;
  State base_;
  std::vector<int> caps_;
  std::vector<PolluxSpeedups> speedups_;
  std::vector<double> penalty_;
  std::vector<int> free_, visit_;  // scratch of mutate() and cap_job()
};

void check_nodes(const std::vector<int>& node_gpus) {
  for (std::size_t n = 0; n < node_gpus.size(); ++n)
    if (node_gpus[n] < 0)
      throw std::invalid_argument(
          fmt::format("pollux: node {} has {} GPUs (must be >= 0)", n, node_gpus[n]));
}

void check_jobs(const std::vector<PolluxJob>& jobs, const std::vector<int>& node_gpus) {
  std::set<std::int64_t> keys;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const PolluxJob& job = jobs[j];
    if (!keys.insert(job.key).second)
      throw std::invalid_argument(
          fmt::format("pollux: job {}: duplicate key {}", j, job.key));
    if (job.max_replicas < 0)
      throw std::invalid_argument(fmt::format(
          "pollux: job {}: max_replicas must be >= 0, got {}", j, job.max_replicas));
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
  check_pollux_allocation(jobs, node_gpus, current, std::numeric_limits<int>::max());
}

// Search order: least attained service first, then earliest submitted, then key.
std::vector<int> priority_order(const std::vector<PolluxJob>& jobs) {
  std::vector<int> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const PolluxJob& x = jobs[static_cast<std::size_t>(a)];
    const PolluxJob& y = jobs[static_cast<std::size_t>(b)];
    return std::tie(x.attained_service, x.submit_time, x.key) <
           std::tie(y.attained_service, y.submit_time, y.key);
  });
  return order;
}

}  // namespace

PolluxSpeedups::PolluxSpeedups(std::optional<GoodputModel> model, int fair_replicas,
                               int max_nodes, int max_replicas)
    : model_(std::move(model)),
      fair_replicas_(std::max(fair_replicas, 1)),
      max_replicas_(std::max(max_replicas, 0)),
      table_(
          static_cast<std::size_t>((std::max(max_nodes, 0) + 1) * (max_replicas_ + 1)),
          -1.0) {
  if (!model_) return;
  base_ = model_->optimize(1, fair_replicas).goodput;
  // A fair share the job cannot use at all (its batch range rules it out):
  // measure against one GPU instead of dividing by zero.
  if (!(base_ > 0.0)) base_ = model_->optimize(1, 1).goodput;
  if (!(base_ > 0.0)) base_ = 1.0;
}

double PolluxSpeedups::operator()(int nodes, int replicas) {
  if (replicas <= 0) return 0.0;
  if (!model_) return replicas / fair_replicas_;
  const auto key = static_cast<std::size_t>(nodes * (max_replicas_ + 1) + replicas);
  if (replicas > max_replicas_ || key >= table_.size())
    return model_->optimize(nodes, replicas).goodput / base_;
  double& slot = table_[key];
  if (slot < 0.0) slot = model_->optimize(nodes, replicas).goodput / base_;
  return slot;
}

double pollux_objective(const std::vector<PolluxJob>& jobs,
                        const std::vector<int>& node_gpus,
                        const std::vector<std::vector<int>>& allocation,
                        double restart_delay) {
  check_nodes(node_gpus);
  check_jobs(jobs, node_gpus);
  check_pollux_allocation(jobs, node_gpus, allocation, std::numeric_limits<int>::max());
  if (jobs.empty() || std::accumulate(node_gpus.begin(), node_gpus.end(), 0) == 0)
    return 0.0;
  const std::vector<int> order = priority_order(jobs);
  Rng unused(0);
  PolluxOptions options;
  options.restart_delay = restart_delay;
  options.max_nodes_per_job = static_cast<int>(node_gpus.size());
  Search search(jobs, order, node_gpus, options, unused);
  State s;
  for (int j : order) {
    const auto& row = allocation[static_cast<std::size_t>(j)];
    s.insert(s.end(), row.begin(), row.end());
  }
  return search.evaluate(s);
}

void check_pollux_allocation(const std::vector<PolluxJob>& jobs,
                             const std::vector<int>& node_gpus,
                             const std::vector<std::vector<int>>& allocation,
                             int max_nodes_per_job) {
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

PolluxPolicy::PolluxPolicy(PolluxOptions options)
    : options_(options), rng_(options.seed) {
  if (options.population < 2 || options.generations < 0 ||
      options.max_nodes_per_job < 1 || !(options.restart_delay >= 0.0))
    throw std::invalid_argument(fmt::format(
        "pollux: need population >= 2, generations >= 0, max_nodes_per_job >= 1 and "
        "restart_delay >= 0, got {}, {}, {}, {}",
        options.population, options.generations, options.max_nodes_per_job,
        options.restart_delay));
}

std::vector<std::vector<int>> PolluxPolicy::optimize(
    const std::vector<PolluxJob>& jobs, const std::vector<int>& node_gpus) {
  check_nodes(node_gpus);
  check_jobs(jobs, node_gpus);
  const int nodes = static_cast<int>(node_gpus.size());
  std::vector<std::vector<int>> result(jobs.size(),
                                       std::vector<int>(node_gpus.size(), 0));
  const int total = std::accumulate(node_gpus.begin(), node_gpus.end(), 0);
  if (jobs.empty() || total == 0) {
    prev_states_.clear();
    prev_keys_.clear();
    last_objective_ = 0.0;
    return result;
  }
  const std::vector<int> order = priority_order(jobs);
  Search search(jobs, order, node_gpus, options_, rng_);
  const int jobs_n = search.jobs();

  // The first population: last round's, its rows moved to this round's jobs
  // (new jobs start with nothing); the current allocation on the first round.
  std::vector<State> seeds;
  if (prev_states_.empty() || prev_nodes_ != nodes) {
    seeds.push_back(search.base());
  } else {
    std::map<std::int64_t, int> prev_row;
    for (std::size_t i = 0; i < prev_keys_.size(); ++i)
      prev_row[prev_keys_[i]] = static_cast<int>(i);
    for (const State& old : prev_states_) {
      State s(search.base().size(), 0);
      for (int j = 0; j < jobs_n; ++j) {
        const auto it = prev_row.find(jobs[static_cast<std::size_t>(order[j])].key);
        if (it == prev_row.end()) continue;
        std::copy_n(old.begin() + static_cast<std::ptrdiff_t>(it->second * nodes),
                    nodes, s.begin() + static_cast<std::ptrdiff_t>(search.idx(j, 0)));
      }
      seeds.push_back(std::move(s));
    }
  }
  std::vector<Individual> population;
  std::unordered_set<std::uint64_t> seen;
  const auto admit = [&](State s, std::vector<Individual>& into) {
    search.repair(s);
    if (!seen.insert(state_hash(s)).second) return;
    const double value = search.evaluate(s);
    into.push_back({std::move(s), value});
  };
  for (State& s : seeds) admit(std::move(s), population);

  const auto size = static_cast<std::size_t>(options_.population);
  const auto pick = [&]() -> const State& {  // binary tournament
    const auto& a = population[rng_.below(population.size())];
    const auto& b = population[rng_.below(population.size())];
    return (b.value > a.value ? b : a).state;
  };
  const auto better = [](const Individual& a, const Individual& b) {
    return a.value > b.value;
  };
  for (int g = 0; g < options_.generations; ++g) {
    std::vector<Individual> children;
    children.reserve(size);
    for (std::size_t tries = 0; children.size() < size && tries < size; ++tries) {
      auto [c, d] = search.crossover(pick(), pick());
      search.mutate(c);
      search.mutate(d);
      admit(std::move(c), children);
      if (children.size() < size) admit(std::move(d), children);
    }
    for (Individual& child : children) population.push_back(std::move(child));
    std::stable_sort(population.begin(), population.end(), better);
    if (population.size() > size) {
      for (std::size_t i = size; i < population.size(); ++i)
        seen.erase(state_hash(population[i].state));
      population.resize(size);
    }
  }
  std::stable_sort(population.begin(), population.end(), better);

  const State& best = population.front().state;
  for (int j = 0; j < jobs_n; ++j)
    std::copy_n(best.begin() + static_cast<std::ptrdiff_t>(search.idx(j, 0)), nodes,
                result[static_cast<std::size_t>(order[j])].begin());
  last_objective_ = population.front().value;
  prev_states_.clear();
  for (Individual& i : population) prev_states_.push_back(std::move(i.state));
  prev_keys_.clear();
  for (int j : order) prev_keys_.push_back(jobs[static_cast<std::size_t>(j)].key);
  prev_nodes_ = nodes;
  return result;
}

}  // namespace aryl
