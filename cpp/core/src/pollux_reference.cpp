// The Pollux policy's genetic search as it was before its sparse rewrite
// (pollux.cpp, pollux_search.cpp): an individual is a dense job x node matrix,
// every child copied, repaired and scored whole, one random stream for the
// round. Kept, unchanged but for the warm start (one round from the current
// allocations), so that tests and benchmarks/pollux_replay.py can compare the
// new search with it.
// Its speedup table, PolluxSpeedups, is here too (the new search keeps
// PolluxGoodputs, pollux_objective.cpp).
//
// An individual ("state") is a job x node matrix of replica counts, flattened
// row-major, jobs in priority order (least attained service first: the repair
// gives them the contested GPUs). Each generation breeds as many children as the
// population (binary tournament, single-point crossover over jobs, the artifact's
// three mutations, then the repair that restores the constraints), drops
// duplicates and keeps the best of parents and children.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <unordered_set>
#include <utility>  // std::index_sequence, std::swap

#include "aryl/pollux.hpp"
#include "pollux_internal.hpp"

namespace aryl {
namespace {

using State = std::vector<int>;

using pollux_detail::chance;
using pollux_detail::Individual;  // its slot: in the arena
using pollux_detail::kCrossover;
using pollux_detail::kMutateRow;
using pollux_detail::kThinElement;
using pollux_detail::mix64;
using pollux_detail::threshold;

// Rng::below for a bound known at compile time: the divisions become multiplies.
template <std::uint64_t Bound>
std::uint64_t below_const(Rng& rng) {
  constexpr std::uint64_t limit = UINT64_MAX - UINT64_MAX % Bound;
  std::uint64_t x = rng.next();
  while (x >= limit) x = rng.next();
  return x % Bound;
}

template <std::size_t... B>
constexpr std::array<std::uint64_t (*)(Rng&), sizeof...(B)> below_table(
    std::index_sequence<B...> /*bounds*/) {
  return {&below_const<B + 1>...};
}

// The bounds the search draws from: a node's GPUs + 1, the nodes of a shuffle.
constexpr auto kBelow = below_table(std::make_index_sequence<16>());

std::uint64_t below(Rng& rng, std::uint64_t bound) {
  return bound - 1 < kBelow.size() ? kBelow[bound - 1](rng) : rng.below(bound);
}

// Rng::shuffle, with the draws above.
void shuffle(Rng& rng, std::vector<int>& v) {
  for (std::size_t i = v.size(); i > 1; --i)
    std::swap(v[i - 1], v[static_cast<std::size_t>(below(rng, i))]);
}

// Duplicates are told apart by a 64-bit hash: a collision would only drop one
// child, and keeping hashes instead of states saves a copy per child. Four
// interleaved FNV-1a chains (elements k, k + 4, ...) run in parallel, and a
// SplitMix64 finaliser folds them, so that no lane's difference is lost.
std::uint64_t state_hash(const int* s, std::size_t size) {
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::array<std::uint64_t, 4> h{1469598103934665603ULL, 1ULL, 2ULL, 3ULL};
  std::size_t i = 0;
  for (; i + 4 <= size; i += 4)
    for (std::size_t k = 0; k < 4; ++k)
      h[k] = (h[k] ^ static_cast<std::uint32_t>(s[i + k])) * kPrime;
  for (; i < size; ++i) h[0] = (h[0] ^ static_cast<std::uint32_t>(s[i])) * kPrime;
  return mix64(h[0] ^ mix64(h[1] ^ mix64(h[2] ^ mix64(h[3]))));
}

// States live in one arena of fixed-size slots, recycled through a free list,
// so that breeding a child allocates nothing.
class Arena {
 public:
  explicit Arena(std::size_t stride) : stride_(stride) {}
  int acquire() {
    if (free_.empty()) {
      cells_.resize(cells_.size() + stride_);
      return static_cast<int>(cells_.size() / stride_) - 1;
    }
    const int slot = free_.back();
    free_.pop_back();
    return slot;
  }
  void release(int slot) { free_.push_back(slot); }
  // Valid until the next acquire().
  int* at(int slot) { return cells_.data() + static_cast<std::size_t>(slot) * stride_; }
  void reserve(std::size_t slots) { cells_.reserve(slots * stride_); }

 private:
  std::size_t stride_;
  std::vector<int> cells_;
  std::vector<int> free_;
};

// What the objective needs of one row, gathered while repairing it.
struct RowStats {
  int nodes;
  int replicas;
  bool changed;
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
    lower_.assign(base_.size(), 0);
    for (int j = 0; j < jobs_; ++j) {
      const PolluxJob& job = jobs[static_cast<std::size_t>(order[j])];
      caps_.push_back(job.max_replicas);
      mins_.push_back(job.min_replicas);
      has_mins_ = has_mins_ || job.min_replicas > 0;
      spread_lower(j, job.min_replicas);
      speedups_.emplace_back(job.model, fair, std::min(max_nodes_, nodes_),
                             job.max_replicas);
      for (int n = 0; n < nodes_ && !job.current.empty(); ++n)
        base_[idx(j, n)] = job.current[static_cast<std::size_t>(n)];
      const double delay = options.restart_delay;
      penalty_.push_back(std::max(job.age - job.num_restarts * delay, 0.0) /
                         (job.age + delay));
    }
    rows_.resize(static_cast<std::size_t>(jobs_));
  }

  [[nodiscard]] const State& base() const { return base_; }
  [[nodiscard]] int jobs() const { return jobs_; }
  [[nodiscard]] std::size_t size() const { return base_.size(); }
  [[nodiscard]] std::size_t idx(int j, int n) const {
    return static_cast<std::size_t>(j * nodes_ + n);
  }

  // The objective of a repaired state (pollux_objective's formula).
  double evaluate(const int* s) {
    for (int j = 0; j < jobs_; ++j)
      rows_[static_cast<std::size_t>(j)] = row_stats(s, j);
    return value_of_rows();
  }

  // The objective of the state the last repair() left, from its row stats.
  double value_of_rows() {
    double inverse = 0.0;
    for (int j = 0; j < jobs_; ++j) {
      const RowStats& r = rows_[static_cast<std::size_t>(j)];
      double scaled =
          speedups_[static_cast<std::size_t>(j)](r.nodes, r.replicas) * scale_;
      if (r.changed) scaled *= penalty_[static_cast<std::size_t>(j)];
      inverse += 1.0 / (scaled + 1e-3);
    }
    return jobs_ / inverse;
  }

  // Children c and d of a and b: jobs before a random point from one, the rest
  // from the other (or copies, with probability 1 - kCrossover).
  void crossover(const int* a, const int* b, int* c, int* d) {
    std::size_t cut = size();  // each cell is written once
    if (rng_.uniform() < kCrossover)
      cut = idx(static_cast<int>(rng_.below(static_cast<std::uint64_t>(jobs_))), 0);
    std::copy(a, a + cut, c);
    std::copy(b + cut, b + size(), c + cut);
    std::copy(b, b + cut, d);
    std::copy(a + cut, a + size(), d + cut);
  }

  // The artifact's mutations: a row back to the current allocation; a row
  // thinned; and growth on nodes with free GPUs. Then adaptdl's floor: every
  // cell at least its lower bound.
  void mutate(int* s) {
    static const std::uint64_t row = threshold(kMutateRow);
    static const std::uint64_t element = threshold(kThinElement);
    for (int j = 0; j < jobs_; ++j)
      if (chance(rng_, row))
        std::copy_n(base_.begin() + static_cast<std::ptrdiff_t>(idx(j, 0)), nodes_,
                    s + idx(j, 0));
    for (int j = 0; j < jobs_; ++j)
      if (chance(rng_, row))
        for (int n = 0; n < nodes_; ++n)
          if (chance(rng_, element)) s[idx(j, n)] = 0;
    grow(s);
    if (has_mins_)
      for (std::size_t i = 0; i < size(); ++i) s[i] = std::max(s[i], lower_[i]);
  }

  // Growth on the nodes with free GPUs, likelier on nodes the job already uses,
  // to a uniform count between the current (at least the lower bound) and the
  // node's GPUs.
  void grow(int* s) {
    free_ = gpus_;
    for (int j = 0; j < jobs_; ++j) subtract_row(s + idx(j, 0));
    open_.clear();  // the nodes with a free GPU, ascending (fixed while growing)
    for (int n = 0; n < nodes_; ++n)
      if (free_[static_cast<std::size_t>(n)] >= 1) open_.push_back(n);
    if (open_.empty()) return;
    const double p1 = 1.0 / static_cast<int>(open_.size());
    const std::uint64_t other = threshold(p1);
    for (int j = 0; j < jobs_; ++j) {
      int* row = s + idx(j, 0);
      int mine = 0;
      for (const int n : open_) mine += row[n] > 0;
      const double p2 = mine > 0 ? 1.0 / mine : 0.0;
      const std::uint64_t used = threshold(p1 + p2 - p1 * p2);
      for (const int n : open_) {
        int& v = row[n];
        if (chance(rng_, v > 0 ? used : other)) {
          const int from = std::max(v, lower_[idx(j, n)]);
          const int room = gpus_[static_cast<std::size_t>(n)] - from;
          v = from +
              static_cast<int>(below(rng_, static_cast<std::uint64_t>(room) + 1));
        }
      }
    }
  }

  void subtract_row(const int* __restrict row) {
    int* __restrict free = free_.data();
    const int width = nodes_;  // a local bound, or the stores force its reload
    for (int n = 0; n < width; ++n) free[n] -= row[n];
  }

  // Restores the constraints, in the artifact's order: one distributed job per
  // node (the first in priority order keeps it); each job's replica and node
  // caps (excess cut at random nodes); each node's GPUs (first jobs first);
  // then adaptdl's minimums (a job below its own stops; what it held is not
  // handed on). Each step only looks at rows before the current one, so one
  // pass over the rows in priority order does all four with the same random
  // draws; it also records the rows' stats for value_of_rows().
  void repair(int* s) {
    taken_.assign(static_cast<std::size_t>(nodes_), 0);
    left_ = gpus_;
    for (int j = 0; j < jobs_; ++j) {
      int* row = s + idx(j, 0);
      if (count_nodes(row) > 1) release_taken(row);
      cap_job(row, j);
      const int* base = base_.data() + idx(j, 0);
      RowStats stats = fit_nodes(row, base);
      if (stats.replicas > 0 && stats.replicas < mins_[static_cast<std::size_t>(j)])
        stats = stop(row, base);
      rows_[static_cast<std::size_t>(j)] = stats;
    }
  }

 private:
  // Plain loops over restrict pointers, without branches, bounded by a local
  // copy of nodes_ (a store through an int* could change the member, so the
  // compiler would reload it every iteration and not vectorise).
  [[nodiscard]] int count_nodes(const int* __restrict row) const {
    int used = 0;
    const int width = nodes_;
    for (int n = 0; n < width; ++n) used += row[n] > 0;
    return used;
  }

  // A distributed row leaves the nodes an earlier distributed row holds and
  // takes the others it is on.
  void release_taken(int* __restrict row) {
    int* __restrict taken = taken_.data();
    const int width = nodes_;
    for (int n = 0; n < width; ++n) {
      const int on = row[n] != 0;
      row[n] = taken[n] ? 0 : row[n];
      taken[n] |= on;
    }
  }

  // min_replicas spread over the nodes in order, each at most its GPUs.
  void spread_lower(int j, int min_replicas) {
    for (int n = 0; n < nodes_ && min_replicas > 0; ++n) {
      const int here = std::min(min_replicas, gpus_[static_cast<std::size_t>(n)]);
      lower_[idx(j, n)] = here;
      min_replicas -= here;
    }
  }

  // Zeroes the row; its stats then.
  RowStats stop(int* row, const int* base) const {
    std::fill_n(row, nodes_, 0);
    const bool ran = std::any_of(base, base + nodes_, [](int v) { return v > 0; });
    return {0, 0, ran};
  }

  // Caps the row at the GPUs earlier rows left and returns its stats.
  RowStats fit_nodes(int* __restrict row, const int* __restrict base) {
    int* __restrict left = left_.data();
    int nodes = 0, replicas = 0, changed = 0;
    const int width = nodes_;
    for (int n = 0; n < width; ++n) {
      const int v = std::min(row[n], left[n]);
      row[n] = v;
      left[n] -= v;
      nodes += v > 0;
      replicas += v;
      changed |= v != base[n];
    }
    return {nodes, replicas, changed != 0};
  }

  RowStats row_stats(const int* __restrict s, int j) const {
    const int* __restrict row = s + idx(j, 0);
    const int* __restrict base = base_.data() + idx(j, 0);
    int nodes = 0, replicas = 0, changed = 0;
    const int width = nodes_;
    for (int n = 0; n < width; ++n) {
      nodes += row[n] > 0;
      replicas += row[n];
      changed |= row[n] != base[n];
    }
    return {nodes, replicas, changed != 0};
  }

  void cap_job(int* row, int j) {
    const int cap = caps_[static_cast<std::size_t>(j)];
    const int* __restrict cells = row;
    int replicas = 0, used = 0;
    const int width = nodes_;
    for (int n = 0; n < width; ++n) {
      replicas += cells[n];
      used += cells[n] > 0;
    }
    if (replicas <= cap && used <= max_nodes_)
      return;  // the shuffle would change nothing
    visit_.resize(static_cast<std::size_t>(nodes_));
    std::iota(visit_.begin(), visit_.end(), 0);
    shuffle(rng_, visit_);
    int kept = 0, kept_nodes = 0;
    for (int n : visit_) {
      int& v = row[n];
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
  State lower_;  // per job and node, adaptdl's lower bound
  std::vector<int> caps_, mins_;
  bool has_mins_ = false;
  std::vector<PolluxSpeedups> speedups_;
  std::vector<double> penalty_;
  std::vector<RowStats> rows_;                   // of the last repaired state
  std::vector<int> free_, open_, visit_, left_;  // scratch of the operators
  std::vector<int> taken_;
};

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
PolluxRound pollux_reference_round(const std::vector<PolluxJob>& jobs,
                                   const std::vector<int>& node_gpus,
                                   const PolluxOptions& options) {
  pollux_detail::check_nodes(node_gpus);
  pollux_detail::check_jobs(jobs, node_gpus);
  const int nodes = static_cast<int>(node_gpus.size());
  PolluxRound out;
  out.allocation.assign(jobs.size(), std::vector<int>(node_gpus.size(), 0));
  const int total = std::accumulate(node_gpus.begin(), node_gpus.end(), 0);
  if (jobs.empty() || total == 0) return out;
  Rng rng(options.seed);
  using pollux_detail::priority_order;
  const std::vector<int> order = priority_order(jobs);
  Search search(jobs, order, node_gpus, options, rng);
  const int jobs_n = search.jobs();

  Arena arena(search.size());
  arena.reserve(2 * static_cast<std::size_t>(options.population) + 2);
  std::vector<Individual> population, children;
  std::unordered_set<std::uint64_t> seen;
  // Repairs the state in `slot` and keeps it (in `into`) unless a duplicate.
  const auto admit = [&](int slot, std::vector<Individual>& into) {
    int* s = arena.at(slot);
    search.repair(s);
    const std::uint64_t hash = state_hash(s, search.size());
    if (!seen.insert(hash).second) {
      arena.release(slot);
      return;
    }
    into.push_back({slot, search.value_of_rows(), hash});
  };
  const int first = arena.acquire();
  std::copy(search.base().begin(), search.base().end(), arena.at(first));
  admit(first, population);

  const auto size = static_cast<std::size_t>(options.population);
  const auto pick = [&]() -> int {  // binary tournament
    const auto& a = population[rng.below(population.size())];
    const auto& b = population[rng.below(population.size())];
    return (b.value > a.value ? b : a).slot;
  };
  const auto better = [](const Individual& a, const Individual& b) {
    return a.value > b.value;
  };
  for (int g = 0; g < options.generations; ++g) {
    children.clear();
    for (std::size_t tries = 0; children.size() < size && tries < size; ++tries) {
      const int c = arena.acquire(), d = arena.acquire();
      // The second parent is drawn first: the order GCC evaluated the
      // arguments of the former crossover(pick(), pick()) in, kept so that
      // seeded runs repeat their recorded decisions.
      const int b = pick(), a = pick();
      search.crossover(arena.at(a), arena.at(b), arena.at(c), arena.at(d));
      search.mutate(arena.at(c));
      search.mutate(arena.at(d));
      admit(c, children);
      if (children.size() < size)
        admit(d, children);
      else
        arena.release(d);
    }
    pollux_detail::keep_best(population, children, size, g == 0,
                             [&](const Individual& i) {
                               seen.erase(i.hash);
                               arena.release(i.slot);
                             });
  }
  std::stable_sort(population.begin(), population.end(), better);

  const int* best = arena.at(population.front().slot);
  for (int j = 0; j < jobs_n; ++j)
    std::copy_n(best + search.idx(j, 0), nodes,
                out.allocation[static_cast<std::size_t>(order[j])].begin());
  out.objective = population.front().value;
  return out;
}

}  // namespace aryl
