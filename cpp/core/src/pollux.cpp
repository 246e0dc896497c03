// The genetic search of the Pollux policy, its cost following what changes.
// An individual holds, per job in priority order (least attained service first:
// the repair gives them the contested GPUs), the cells (node, replicas) of the
// nodes it uses, ascending. Each generation makes as many tries as it needs to
// breed a population of children (binary tournament, single-point crossover over
// jobs, the artifact's three mutations, the repair that restores the constraints,
// the score), drops duplicates and keeps the best of parents and children
// (elitist; the artifact's NSGA-II also ranks a second, cluster-utility
// objective, which only matters for autoscaling). Minimum replica counts add
// adaptdl's lower bounds to the mutation and its last step to the repair.
//
// A try draws from its own stream (the generation's seed and the try's index), so
// tries run on any number of threads with the same result; the children are
// admitted in try order. The draws follow the artifact's distributions, not the
// dense search's stream (pollux_reference.cpp): growth picks the nodes a job does
// not use by geometric skips over the open nodes instead of one draw per node,
// and the repair shuffles a job's cells, not every node.
#include "aryl/pollux.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

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

}  // namespace pollux_detail

// Fork-join over the items of a batch: the calling thread and threads - 1
// workers take items in turn; run() returns when every item is done.
class PolluxWorkers {
 public:
  explicit PolluxWorkers(int threads) {
    for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { loop(w); });
  }
  PolluxWorkers(const PolluxWorkers&) = delete;
  PolluxWorkers& operator=(const PolluxWorkers&) = delete;
  ~PolluxWorkers() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  [[nodiscard]] int size() const { return static_cast<int>(threads_.size()) + 1; }

  // task(worker, item) for every item in [0, count); the first exception a task
  // throws is rethrown here, after all have stopped.
  void run(int count, const std::function<void(int, int)>& task) {
    if (threads_.empty() || count < 2) {
      for (int i = 0; i < count; ++i) task(0, i);
      return;
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      count_ = count;
      next_ = 0;
      busy_ = static_cast<int>(threads_.size());
      ++epoch_;
    }
    wake_.notify_all();
    work(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void work(int worker) {
    for (int i = next_++; i < count_; i = next_++) {
      try {
        (*task_)(worker, i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  void loop(int worker) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || epoch_ != seen; });
        if (stop_) return;
        seen = epoch_;
      }
      work(worker);
      const std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* task_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0};
  int busy_ = 0;
  std::uint64_t epoch_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

namespace {

constexpr double kMutateRow = 0.1;    // chance a row resets, or is thinned
constexpr double kThinElement = 0.1;  // chance a thinned row's cell is zeroed
constexpr double kCrossover = 0.9;    // pymoo's default crossover probability
constexpr int kParallelJobs = 32;     // fewer jobs: one thread (measured)

using pollux_detail::chance;
using pollux_detail::threshold;

int below(Rng& rng, int bound) {
  return static_cast<int>(rng.below(static_cast<std::uint64_t>(bound)));
}

std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

// The stream of one try (or seed) of a generation.
Rng stream(std::uint64_t generation_seed, int index) {
  return Rng(generation_seed ^ mix64(static_cast<std::uint64_t>(index) + 1));
}

struct Cell {
  int node;
  int count;  // > 0
  bool operator==(const Cell&) const = default;
};

using Row = std::vector<Cell>;

// An individual: job j's cells are cells[start[j], start[j + 1]).
struct Genome {
  std::vector<Cell> cells;
  std::vector<int> start{0};
  double value = 0.0;
  std::uint64_t hash = 0;

  [[nodiscard]] const Cell* begin(int j) const {
    return cells.data() + start[static_cast<std::size_t>(j)];
  }
  [[nodiscard]] const Cell* end(int j) const {
    return cells.data() + start[static_cast<std::size_t>(j) + 1];
  }
  void clear() {
    cells.clear();
    start.assign(1, 0);
  }
  void close_row() { start.push_back(static_cast<int>(cells.size())); }
};

// One round's problem, read-only while tries run.
struct RoundProblem {
  int jobs = 0, nodes = 0, max_nodes = 0;
  std::vector<int> gpus;
  std::vector<int> no_gpus;  // the nodes without GPUs, ascending
  double scale = 1.0;        // nodes / total GPUs
  double fair = 1.0;         // fair-share replicas
  std::vector<int> caps, mins;
  std::vector<Row> lower;  // per job, adaptdl's lower bounds (the first nodes)
  bool has_mins = false;
  Genome base;  // the current allocation
  std::vector<double> penalty;
  std::vector<const PolluxGoodputs*> goodputs;  // per job; null: no model
  std::vector<double> reference;                // per job, goodput of the fair share

  RoundProblem(const std::vector<PolluxJob>& jobs_in, const std::vector<int>& order,
               const std::vector<int>& node_gpus, const PolluxOptions& options,
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

  // What PolluxSpeedups measures against: fair_replicas on one node, else one GPU.
  static double reference_goodput(const GoodputModel& model, int share) {
    double base = model.optimize(1, std::max(share, 1)).goodput;
    if (!(base > 0.0)) base = model.optimize(1, 1).goodput;
    return base > 0.0 ? base : 1.0;
  }

  // min_replicas spread over the nodes in order, each at most its GPUs.
  [[nodiscard]] Row spread(int min_replicas) const {
    Row row;
    for (int n = 0; n < nodes && min_replicas > 0; ++n) {
      const int here = std::min(min_replicas, gpus[static_cast<std::size_t>(n)]);
      if (here > 0) row.push_back({n, here});
      min_replicas -= here;
    }
    return row;
  }

  [[nodiscard]] int lower_of(int j, int node) const {
    for (const Cell& c : lower[static_cast<std::size_t>(j)])
      if (c.node == node) return c.count;
    return 0;
  }

  [[nodiscard]] double speedup(int j, int used_nodes, int replicas) const {
    if (replicas <= 0) return 0.0;
    const PolluxGoodputs* table = goodputs[static_cast<std::size_t>(j)];
    if (table == nullptr) return replicas / fair;
    return (*table)(used_nodes, replicas) / reference[static_cast<std::size_t>(j)];
  }

  // 1 / (scaled speedup + 1e-3) of job j's row: the objective's term.
  [[nodiscard]] double term(int j, const Cell* first, const Cell* last) const {
    int replicas = 0;
    for (const Cell* c = first; c != last; ++c) replicas += c->count;
    const int used = static_cast<int>(last - first);
    double scaled = speedup(j, used, replicas) * scale;
    if (!std::equal(first, last, base.begin(j), base.end(j)))
      scaled *= penalty[static_cast<std::size_t>(j)];
    return 1.0 / (scaled + 1e-3);
  }

  // The power mean (p = -1) of the scaled speedups (pollux_objective).
  [[nodiscard]] double value(const Genome& s) const {
    double inverse = 0.0;
    for (int j = 0; j < jobs; ++j) inverse += term(j, s.begin(j), s.end(j));
    return jobs / inverse;
  }
};

std::uint64_t hash_of(const Genome& s, int jobs) {
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::uint64_t h = 1469598103934665603ULL;
  for (int j = 0; j < jobs; ++j)
    for (const Cell* c = s.begin(j); c != s.end(j); ++c)
      h = (h ^ ((static_cast<std::uint64_t>(j) << 42U) |
                (static_cast<std::uint64_t>(c->node) << 21U) |
                static_cast<std::uint64_t>(c->count))) *
          kPrime;
  return mix64(h);
}

// A count per node, all zero again in O(1): next() starts a new generation of
// counts, and a node's count belongs to the current one only if stamped so.
class NodeCounts {
 public:
  explicit NodeCounts(int nodes)
      : count_(static_cast<std::size_t>(nodes), 0),
        stamp_(static_cast<std::size_t>(nodes), 0) {}
  void next() {
    touched_.clear();
    if (++now_ != 0) return;
    std::fill(stamp_.begin(), stamp_.end(), 0U);  // wrapped: start afresh
    now_ = 1;
  }
  [[nodiscard]] int get(int node) const {
    const auto n = static_cast<std::size_t>(node);
    return stamp_[n] == now_ ? count_[n] : 0;
  }
  void add(int node, int v) {
    const auto n = static_cast<std::size_t>(node);
    if (stamp_[n] != now_) {
      stamp_[n] = now_;
      count_[n] = 0;
      touched_.push_back(node);
    }
    count_[n] += v;
  }
  [[nodiscard]] const std::vector<int>& touched() const { return touched_; }

 private:
  std::vector<int> count_;
  std::vector<unsigned> stamp_;
  unsigned now_ = 0;
  std::vector<int> touched_;
};

// The operators of one thread, with their scratch.
class Breeder {
 public:
  explicit Breeder(const RoundProblem& p)
      : p_(p), load_(p.nodes), left_(p.nodes), taken_(p.nodes) {}

  // Children c and d of a and b: crossover, mutation, repair, score.
  void breed(const Genome& a, const Genome& b, Rng& rng, Genome& c, Genome& d) {
    int cut = p_.jobs;  // no crossover: copies
    if (rng.uniform() < kCrossover) cut = below(rng, p_.jobs);
    child(a, b, cut, rng, c);
    child(b, a, cut, rng, d);
  }

  // Repairs and scores a state (the first population).
  void admit_seed(const Genome& raw, Rng& rng, Genome& out) { repair(raw, rng, out); }

 private:
  // Rows before `cut` from x, the rest from y, mutated, repaired, scored.
  void child(const Genome& x, const Genome& y, int cut, Rng& rng, Genome& out) {
    static const std::uint64_t row_chance = threshold(kMutateRow);
    static const std::uint64_t cell_chance = threshold(kThinElement);
    raw_.clear();
    load_.next();
    for (int j = 0; j < p_.jobs; ++j) {
      const Genome& from = j < cut ? x : y;
      const bool reset = chance(rng, row_chance);
      const Genome& src = reset ? p_.base : from;
      const bool thin = chance(rng, row_chance);
      for (const Cell* c = src.begin(j); c != src.end(j); ++c) {
        if (thin && chance(rng, cell_chance)) continue;
        raw_.cells.push_back(*c);
        load_.add(c->node, c->count);
      }
      raw_.close_row();
    }
    grow(rng);
    repair(grown_, rng, out);
  }

  [[nodiscard]] bool open(int node) const {
    return p_.gpus[static_cast<std::size_t>(node)] - load_.get(node) >= 1;
  }

  // The nodes with a free GPU: all but those without GPUs and those the child
  // fills.
  [[nodiscard]] int count_open() const {
    int full = 0;
    for (const int n : load_.touched())
      full += !open(n) && p_.gpus[static_cast<std::size_t>(n)] > 0;
    return p_.nodes - static_cast<int>(p_.no_gpus.size()) - full;
  }

  // Growth on the nodes with free GPUs, likelier on nodes the job already uses
  // (chance p1 + p2 - p1 p2, p2 = 1 / its open nodes), else p1 = 1 / open nodes,
  // to a uniform count between the current (at least the lower bound) and the
  // node's GPUs; then adaptdl's floor. The open nodes a job does not use that it
  // grows on are drawn as a binomial count of distinct uniform open nodes (the
  // same law as a chance p1 per node).
  void grow(Rng& rng) {
    grown_.clear();
    const int open_n = count_open();
    const double p1 = open_n > 0 ? 1.0 / open_n : 0.0;
    const std::vector<double>& cdf = binomial_cdf(open_n);
    for (int j = 0; j < p_.jobs; ++j) {
      const Cell* first = raw_.begin(j);
      const Cell* last = raw_.end(j);
      int mine = 0;
      for (const Cell* c = first; c != last; ++c) mine += open(c->node);
      const double p2 = mine > 0 ? 1.0 / mine : 0.0;
      const std::uint64_t used = threshold(p1 + p2 - p1 * p2);
      row_.clear();
      for (const Cell* c = first; c != last; ++c) {
        Cell cell = *c;
        if (open(c->node) && chance(rng, used))
          cell.count = draw_count(rng, j, c->node, c->count);
        row_.push_back(cell);
      }
      if (open_n > 0) draw_others(rng, j, cdf, first, last);
      if (p_.has_mins) merge_max(p_.lower[static_cast<std::size_t>(j)]);
      grown_.cells.insert(grown_.cells.end(), row_.begin(), row_.end());
      grown_.close_row();
    }
  }

  // The open nodes job j does not use (cells [first, last)) that it grows on.
  void draw_others(Rng& rng, int j, const std::vector<double>& cdf, const Cell* first,
                   const Cell* last) {
    const double u = rng.uniform();
    int k = 0;
    while (k + 1 < static_cast<int>(cdf.size()) &&
           u >= cdf[static_cast<std::size_t>(k)])
      ++k;
    picks_.clear();  // k distinct open nodes, uniform: drawn among all, rejected
    while (static_cast<int>(picks_.size()) < k) {
      const int n = below(rng, p_.nodes);
      if (open(n) && std::find(picks_.begin(), picks_.end(), n) == picks_.end())
        picks_.push_back(n);
    }
    if (picks_.empty()) return;
    std::sort(picks_.begin(), picks_.end());
    extra_.clear();
    const Cell* mine_at = first;
    for (const int n : picks_) {
      while (mine_at != last && mine_at->node < n) ++mine_at;
      if (mine_at != last && mine_at->node == n) continue;  // drawn above
      const int v = draw_count(rng, j, n, 0);
      if (v > 0) extra_.push_back({n, v});
    }
    merge_max(extra_);
  }

  // P(Binomial(n, 1 / n) <= k) for k = 0, 1, ...; the last entry is 1.
  const std::vector<double>& binomial_cdf(int n) {
    if (static_cast<int>(cdfs_.size()) <= n)
      cdfs_.resize(static_cast<std::size_t>(n) + 1);
    std::vector<double>& cdf = cdfs_[static_cast<std::size_t>(n)];
    if (!cdf.empty() || n == 0) return cdf;
    if (n == 1) {
      cdf = {0.0, 1.0};
      return cdf;
    }
    const double p = 1.0 / n;
    double pmf = std::pow(1.0 - p, n), sum = 0.0;
    for (int k = 0; k < n && sum + pmf < 1.0 - 1e-16; ++k) {
      sum += pmf;
      cdf.push_back(sum);
      pmf *= (n - k) / (k + 1.0) * p / (1.0 - p);
    }
    cdf.push_back(1.0);
    return cdf;
  }

  // Uniform between max(current, lower bound) and the node's GPUs.
  int draw_count(Rng& rng, int j, int node, int current) const {
    const int from = std::max(current, p_.has_mins ? p_.lower_of(j, node) : 0);
    return from + below(rng, p_.gpus[static_cast<std::size_t>(node)] - from + 1);
  }

  // row_ := the cell-wise max of row_ and `other` (both ascending).
  void merge_max(const Row& other) {
    if (other.empty()) return;
    merged_.clear();
    std::size_t i = 0, k = 0;
    while (i < row_.size() || k < other.size()) {
      if (k == other.size() || (i < row_.size() && row_[i].node < other[k].node)) {
        merged_.push_back(row_[i++]);
      } else if (i == row_.size() || other[k].node < row_[i].node) {
        merged_.push_back(other[k++]);
      } else {
        merged_.push_back({row_[i].node, std::max(row_[i].count, other[k].count)});
        ++i;
        ++k;
      }
    }
    row_.swap(merged_);
  }

  // Restores the constraints, in the artifact's order, one row at a time in
  // priority order: one distributed job per node (the first keeps it); the
  // job's replica and node caps (excess cut at random cells); each node's GPUs
  // (first jobs first); adaptdl's minimum (a job below its own stops; what it
  // held is not handed on). Then scores and hashes the result.
  void repair(const Genome& raw, Rng& rng, Genome& out) {
    out.clear();
    taken_.next();
    left_.next();
    double inverse = 0.0;
    for (int j = 0; j < p_.jobs; ++j) {
      row_.assign(raw.begin(j), raw.end(j));
      if (row_.size() > 1) release_taken();
      cap_job(rng, j);
      int replicas = 0;
      std::size_t kept = 0;
      for (const Cell& c : row_) {
        const int v = std::min(
            c.count, p_.gpus[static_cast<std::size_t>(c.node)] - left_.get(c.node));
        left_.add(c.node, v);
        replicas += v;
        if (v > 0) row_[kept++] = {c.node, v};
      }
      row_.resize(kept);
      if (replicas > 0 && replicas < p_.mins[static_cast<std::size_t>(j)]) row_.clear();
      out.cells.insert(out.cells.end(), row_.begin(), row_.end());
      out.close_row();
      inverse += p_.term(j, out.begin(j), out.end(j));
    }
    out.value = p_.jobs / inverse;
    out.hash = hash_of(out, p_.jobs);
  }

  // A distributed row leaves the nodes an earlier distributed row holds and
  // takes the others it is on.
  void release_taken() {
    std::size_t kept = 0;
    for (const Cell& c : row_) {
      if (taken_.get(c.node) == 0) row_[kept++] = c;
      taken_.add(c.node, 1);
    }
    row_.resize(kept);
  }

  // Over the job's replica or node cap: its cells in random order keep what
  // fits under both caps.
  void cap_job(Rng& rng, int j) {
    const int cap = p_.caps[static_cast<std::size_t>(j)];
    int replicas = 0;
    for (const Cell& c : row_) replicas += c.count;
    if (replicas <= cap && static_cast<int>(row_.size()) <= p_.max_nodes) return;
    for (std::size_t i = row_.size(); i > 1; --i)
      std::swap(row_[i - 1], row_[static_cast<std::size_t>(rng.below(i))]);
    int kept = 0, kept_nodes = 0;
    std::size_t out = 0;
    for (const Cell& c : row_) {
      int v = std::min(c.count, cap - kept);
      if (kept_nodes == p_.max_nodes) v = 0;
      kept += v;
      kept_nodes += v > 0;
      if (v > 0) row_[out++] = {c.node, v};
    }
    row_.resize(out);
    std::sort(row_.begin(), row_.end(),
              [](const Cell& x, const Cell& y) { return x.node < y.node; });
  }

  const RoundProblem& p_;
  Genome raw_, grown_;
  Row row_, extra_, merged_;
  NodeCounts load_;   // replicas per node of the child before growth
  NodeCounts left_;   // replicas per node the repair has placed (GPUs used)
  NodeCounts taken_;  // nodes an earlier distributed row holds (> 0)
  std::vector<int> picks_;
  std::vector<std::vector<double>> cdfs_;  // binomial_cdf(n)
};

// A state given as replicas per node of each job (search order) as a Genome.
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

// The goodput tables of a round's jobs (search order): last round's where the
// job's model and bounds are unchanged, else new ones. `kept` becomes this
// round's.
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
  const RoundProblem problem(
      jobs, order, node_gpus, options,
      goodput_tables(jobs, order, options.max_nodes_per_job, tables));
  return problem.value(genome_of(allocation, order));
}

PolluxPolicy::PolluxPolicy(PolluxOptions options)
    : options_(options), rng_(options.seed) {
  if (options.population < 2 || options.generations < 0 ||
      options.max_nodes_per_job < 1 || options.threads < 1 ||
      !(options.restart_delay >= 0.0))
    throw std::invalid_argument(fmt::format(
        "pollux: need population >= 2, generations >= 0, max_nodes_per_job >= 1, "
        "threads >= 1 and restart_delay >= 0, got {}, {}, {}, {}, {}",
        options.population, options.generations, options.max_nodes_per_job,
        options.threads, options.restart_delay));
}

PolluxPolicy::~PolluxPolicy() = default;
PolluxPolicy::PolluxPolicy(PolluxPolicy&&) noexcept = default;
PolluxPolicy& PolluxPolicy::operator=(PolluxPolicy&&) noexcept = default;

namespace {

struct Individual {
  int slot;  // in the pool of genomes
  double value;
  std::uint64_t hash;
};

// The genomes of a round, recycled through a free list.
class GenomePool {
 public:
  int acquire() {
    if (free_.empty()) {
      genomes_.emplace_back();
      return static_cast<int>(genomes_.size()) - 1;
    }
    const int slot = free_.back();
    free_.pop_back();
    return slot;
  }
  void release(int slot) { free_.push_back(slot); }
  Genome& operator[](int slot) { return genomes_[static_cast<std::size_t>(slot)]; }

 private:
  std::deque<Genome> genomes_;  // stable addresses while tries run
  std::vector<int> free_;
};

}  // namespace

namespace {

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

}  // namespace

std::vector<std::vector<int>> PolluxPolicy::optimize(
    const std::vector<PolluxJob>& jobs, const std::vector<int>& node_gpus) {
  pollux_detail::check_nodes(node_gpus);
  pollux_detail::check_jobs(jobs, node_gpus);
  if (!options_.record.empty() && rounds_++ % std::max(options_.record_every, 1) == 0)
    record_round(options_.record, jobs, node_gpus);
  const int nodes = static_cast<int>(node_gpus.size());
  std::vector<std::vector<int>> result(jobs.size(),
                                       std::vector<int>(node_gpus.size(), 0));
  const int total = std::accumulate(node_gpus.begin(), node_gpus.end(), 0);
  if (jobs.empty() || total == 0) {
    prev_states_.clear();
    prev_keys_.clear();
    goodputs_.clear();
    last_objective_ = 0.0;
    return result;
  }
  const std::vector<int> order = pollux_detail::priority_order(jobs);
  const RoundProblem problem(
      jobs, order, node_gpus, options_,
      goodput_tables(jobs, order, std::min(options_.max_nodes_per_job, nodes),
                     goodputs_));
  const int jobs_n = problem.jobs;
  if (!workers_) workers_ = std::make_unique<PolluxWorkers>(options_.threads);
  // Waking threads costs more than a small round's batch of tries.
  const bool parallel = workers_->size() > 1 && jobs_n >= kParallelJobs;
  std::vector<Breeder> breeders(
      static_cast<std::size_t>(parallel ? workers_->size() : 1), Breeder(problem));

  // The first population: last round's, its rows moved to this round's jobs
  // (new jobs start with nothing); the current allocation on the first round.
  std::vector<Genome> seeds;
  if (prev_states_.empty() || prev_nodes_ != nodes) {
    seeds.push_back(problem.base);
  } else {
    std::unordered_map<std::int64_t, std::size_t> prev_row;
    for (std::size_t i = 0; i < prev_keys_.size(); ++i) prev_row[prev_keys_[i]] = i;
    for (const auto& old : prev_states_) {
      Genome s;
      for (const int j : order) {
        const auto it = prev_row.find(jobs[static_cast<std::size_t>(j)].key);
        if (it != prev_row.end())
          for (const auto& [node, count] : old[it->second])
            s.cells.push_back({node, count});
        s.close_row();
      }
      seeds.push_back(std::move(s));
    }
  }
  GenomePool pool;
  std::vector<Individual> population, children;
  std::unordered_set<std::uint64_t> seen;
  // Keeps the scored child in `slot` (in `into`) unless a duplicate.
  const auto admit = [&](int slot, std::vector<Individual>& into) {
    const Genome& s = pool[slot];
    if (!seen.insert(s.hash).second) {
      pool.release(slot);
      return;
    }
    into.push_back({slot, s.value, s.hash});
  };
  const std::uint64_t seed_stream = rng_.next();
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const int slot = pool.acquire();
    Rng rng = stream(seed_stream, static_cast<int>(i));
    breeders[0].admit_seed(seeds[i], rng, pool[slot]);
    admit(slot, population);
  }

  const auto size = static_cast<std::size_t>(options_.population);
  const auto better = [](const Individual& a, const Individual& b) {
    return a.value > b.value;
  };
  std::vector<std::pair<int, int>> slots;  // children of each try of a batch
  for (int g = 0; g < options_.generations; ++g) {
    children.clear();
    const std::uint64_t generation_seed = rng_.next();
    // Tries in batches of as many as could still fill the children, at most
    // `size` in all; a try's children are admitted in try order.
    for (std::size_t tries = 0; children.size() < size && tries < size;) {
      const std::size_t batch =
          std::min((size - children.size() + 1) / 2, size - tries);
      slots.clear();
      for (std::size_t t = 0; t < batch; ++t)
        slots.emplace_back(pool.acquire(), pool.acquire());
      const std::function<void(int, int)> try_one = [&](int worker, int t) {
        // Its own stream: the same children on any number of threads.
        Rng rng = stream(generation_seed, static_cast<int>(tries) + t);
        const auto pick = [&]() -> int {  // binary tournament
          const Individual& a = population[rng.below(population.size())];
          const Individual& b = population[rng.below(population.size())];
          return (b.value > a.value ? b : a).slot;
        };
        const int b = pick(), a = pick();
        const auto [c, d] = slots[static_cast<std::size_t>(t)];
        breeders[static_cast<std::size_t>(worker)].breed(pool[a], pool[b], rng, pool[c],
                                                         pool[d]);
      };
      if (parallel)
        workers_->run(static_cast<int>(batch), try_one);
      else
        for (int t = 0; t < static_cast<int>(batch); ++t) try_one(0, t);
      for (const auto& [c, d] : slots) {
        for (const int slot : {c, d})
          if (children.size() < size)
            admit(slot, children);
          else
            pool.release(slot);
      }
      tries += batch;
    }
    pollux_detail::keep_best(population, children, size, g == 0,
                             [&](const Individual& i) {
                               seen.erase(i.hash);
                               pool.release(i.slot);
                             });
  }
  std::stable_sort(population.begin(), population.end(), better);

  const Genome& best = pool[population.front().slot];
  for (int j = 0; j < jobs_n; ++j)
    for (const Cell* c = best.begin(j); c != best.end(j); ++c)
      result[static_cast<std::size_t>(order[j])][static_cast<std::size_t>(c->node)] =
          c->count;
  last_objective_ = population.front().value;
  prev_states_.clear();
  for (const Individual& i : population) {
    const Genome& s = pool[i.slot];
    auto& rows = prev_states_.emplace_back(static_cast<std::size_t>(jobs_n));
    for (int j = 0; j < jobs_n; ++j)
      for (const Cell* c = s.begin(j); c != s.end(j); ++c)
        rows[static_cast<std::size_t>(j)].emplace_back(c->node, c->count);
  }
  prev_keys_.clear();
  for (const int j : order) prev_keys_.push_back(jobs[static_cast<std::size_t>(j)].key);
  prev_nodes_ = nodes;
  return result;
}

}  // namespace aryl
