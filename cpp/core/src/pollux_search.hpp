// The types of the Pollux search, shared by its three files: what a round values
// (pollux_objective.cpp: the round's problem, the goodput tables), how children
// are bred (pollux_search.cpp: crossover, mutation, repair) and the rounds that
// run the generations (pollux.cpp: PolluxPolicy).
//
// An individual (Genome) holds, per job in priority order (least attained service
// first: the repair gives them the contested GPUs), the cells (node, replicas) of
// the nodes it uses, ascending: a child costs what it holds, not jobs x nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "aryl/pollux.hpp"
#include "aryl/rng.hpp"
#include "pollux_internal.hpp"

namespace aryl::pollux_detail {

// A uniform integer in [0, bound).
inline int uniform_below(Rng& rng, int bound) {
  return static_cast<int>(rng.below(static_cast<std::uint64_t>(bound)));
}

// The stream of one try (or seed) of a generation.
inline Rng stream(std::uint64_t generation_seed, int index) {
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

// One round's problem, read-only while tries run: the jobs (search order), the
// nodes, and the objective (pollux_objective) of an individual.
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
               const std::vector<const PolluxGoodputs*>& tables);

  // What PolluxSpeedups measures against: fair_replicas on one node, else one GPU.
  static double reference_goodput(const GoodputModel& model, int share);

  // min_replicas spread over the nodes in order, each at most its GPUs.
  [[nodiscard]] Row spread(int min_replicas) const;

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

// A state given as replicas per node of each job (search order) as a Genome.
Genome genome_of(const std::vector<std::vector<int>>& allocation,
                 const std::vector<int>& order);

// The goodput tables of a round's jobs (search order): last round's where the
// job's model and bounds are unchanged, else new ones. `kept` becomes this
// round's.
std::vector<const PolluxGoodputs*> goodput_tables(
    const std::vector<PolluxJob>& jobs, const std::vector<int>& order, int max_nodes,
    std::map<std::int64_t, std::shared_ptr<const PolluxGoodputs>>& kept);

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

// The operators of one thread, with their scratch (pollux_search.cpp).
class Breeder {
 public:
  explicit Breeder(const RoundProblem& p)
      : p_(p), load_(p.nodes), left_(p.nodes), taken_(p.nodes) {}

  // Children c and d of a and b: crossover, mutation, repair, score.
  void breed(const Genome& a, const Genome& b, Rng& rng, Genome& c, Genome& d);

  // Repairs and scores a state (the first population).
  void admit_seed(const Genome& raw, Rng& rng, Genome& out) { repair(raw, rng, out); }

 private:
  void child(const Genome& x, const Genome& y, int cut, Rng& rng, Genome& out);
  [[nodiscard]] bool open(int node) const {
    return p_.gpus[static_cast<std::size_t>(node)] - load_.get(node) >= 1;
  }
  [[nodiscard]] int count_open() const;
  void grow(Rng& rng);
  void draw_others(Rng& rng, int j, const std::vector<double>& cdf, const Cell* first,
                   const Cell* last);
  const std::vector<double>& binomial_cdf(int n);
  int draw_count(Rng& rng, int j, int node, int current) const;
  void merge_max(const Row& other);
  void repair(const Genome& raw, Rng& rng, Genome& out);
  void release_taken();
  void cap_job(Rng& rng, int j);

  const RoundProblem& p_;
  Genome raw_, grown_;
  Row row_, extra_, merged_;
  NodeCounts load_;   // replicas per node of the child before growth
  NodeCounts left_;   // replicas per node the repair has placed (GPUs used)
  NodeCounts taken_;  // nodes an earlier distributed row holds (> 0)
  std::vector<int> picks_;
  std::vector<std::vector<double>> cdfs_;  // binomial_cdf(n)
};

}  // namespace aryl::pollux_detail
