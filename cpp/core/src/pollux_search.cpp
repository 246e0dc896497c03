// How the Pollux search breeds: the operators of one thread (Breeder) that turn
// two parents into two scored children, following the artifact (petuum/adaptdl,
// osdi21-artifact): single-point crossover over jobs, its three mutations (a row
// reset to the current allocation, a row thinned, growth on nodes with free
// GPUs), then the repair that restores the constraints in its order, adaptdl's
// minimums included. The draws follow the artifact's distributions, not the dense
// search's stream (pollux_reference.cpp): growth picks the nodes a job does not
// use by a binomial count of distinct open nodes instead of one draw per node,
// and the repair shuffles a job's cells, not every node. The generations that
// call these are in pollux.cpp; what a child is worth, in pollux_objective.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "pollux_search.hpp"

namespace aryl::pollux_detail {

namespace {

// The duplicate check's hash of an individual's cells (FNV-1a, then folded).
std::uint64_t genome_hash(const Genome& s, int jobs) {
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

}  // namespace

// Children c and d of a and b: crossover, mutation, repair, score.
void Breeder::breed(const Genome& a, const Genome& b, Rng& rng, Genome& c, Genome& d) {
  int cut = p_.jobs;  // no crossover: copies
  if (rng.uniform() < kCrossover) cut = uniform_below(rng, p_.jobs);
  child(a, b, cut, rng, c);
  child(b, a, cut, rng, d);
}

// Rows before `cut` from x, the rest from y, mutated, repaired, scored.
void Breeder::child(const Genome& x, const Genome& y, int cut, Rng& rng, Genome& out) {
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

// The nodes with a free GPU: all but those without GPUs and those the child
// fills.
int Breeder::count_open() const {
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
void Breeder::grow(Rng& rng) {
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
void Breeder::draw_others(Rng& rng, int j, const std::vector<double>& cdf,
                          const Cell* first, const Cell* last) {
  const double u = rng.uniform();
  int k = 0;
  while (k + 1 < static_cast<int>(cdf.size()) && u >= cdf[static_cast<std::size_t>(k)])
    ++k;
  picks_.clear();  // k distinct open nodes, uniform: drawn among all, rejected
  while (static_cast<int>(picks_.size()) < k) {
    const int n = uniform_below(rng, p_.nodes);
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
const std::vector<double>& Breeder::binomial_cdf(int n) {
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
int Breeder::draw_count(Rng& rng, int j, int node, int current) const {
  const int from = std::max(current, p_.has_mins ? p_.lower_of(j, node) : 0);
  return from + uniform_below(rng, p_.gpus[static_cast<std::size_t>(node)] - from + 1);
}

// row_ := the cell-wise max of row_ and `other` (both ascending).
void Breeder::merge_max(const Row& other) {
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
void Breeder::repair(const Genome& raw, Rng& rng, Genome& out) {
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
  out.hash = genome_hash(out, p_.jobs);
}

// A distributed row leaves the nodes an earlier distributed row holds and
// takes the others it is on.
void Breeder::release_taken() {
  std::size_t kept = 0;
  for (const Cell& c : row_) {
    if (taken_.get(c.node) == 0) row_[kept++] = c;
    taken_.add(c.node, 1);
  }
  row_.resize(kept);
}

// Over the job's replica or node cap: its cells in random order keep what
// fits under both caps.
void Breeder::cap_job(Rng& rng, int j) {
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
}  // namespace aryl::pollux_detail
