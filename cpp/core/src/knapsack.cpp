#include "aryl/knapsack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>

#include "index.hpp"

namespace aryl {
namespace {

using Index = std::size_t;

using detail::at;

constexpr double unreachable = -std::numeric_limits<double>::infinity();
constexpr double relative_tolerance = 1e-9;

// An item that may be chosen: it fits and is worth something.
struct Candidate {
  int weight;
  double value;
  int index;  // in its group
};

// The instance as the DP sees it. Stages add the groups last first, so that the
// traceback, which runs from the last stage back, decides group 0 first: that is
// what makes ties go to "none" / low indices in earlier groups.
struct Problem {
  // Stage s holds group n - 1 - s: candidates[stage_end[s - 1] .. stage_end[s]).
  std::vector<Candidate> candidates;
  std::vector<Index> stage_end;
  Index width = 1;         // weights 0 .. width - 1 are tracked
  double tolerance = 0.0;  // values closer than this are equal
  double scale = 0.0;      // the sum of every group's best value
  long long reach = 0;     // the heaviest total weight any choice can have
  int capacity = 0;
  Index max_candidates = 0;

  [[nodiscard]] Index stages() const { return stage_end.size(); }
  [[nodiscard]] Index group_of(Index stage) const { return stages() - 1 - stage; }
  [[nodiscard]] std::span<const Candidate> stage(Index s) const {
    const Index first = s == 0 ? 0 : stage_end[s - 1];
    return {candidates.data() + first, stage_end[s] - first};
  }
};

Problem prepare(const KnapsackGroups& groups, int capacity) {
  if (capacity < 0)
    throw std::invalid_argument(fmt::format("capacity must be >= 0, got {}", capacity));
  const auto fits = [capacity](const KnapsackItem& item) {
    return item.weight <= capacity && item.value > 0.0;
  };
  // In group order: the first bad item is the one named, and the scale is summed
  // in the same order whatever the layout.
  double scale = 0.0;
  for (Index g = 0; g < groups.size(); ++g) {
    const std::span<const KnapsackItem> items = groups.group(g);
    double best = 0.0;
    for (Index i = 0; i < items.size(); ++i) {
      const KnapsackItem& item = items[i];
      if (item.weight < 1)
        throw std::invalid_argument(fmt::format(
            "group {}, item {}: weight must be >= 1, got {}", g, i, item.weight));
      if (!std::isfinite(item.value))
        throw std::invalid_argument(fmt::format(
            "group {}, item {}: value must be finite, got {}", g, i, item.value));
      if (fits(item)) best = std::max(best, item.value);
    }
    scale += best;
  }
  Problem p;
  p.stage_end.reserve(groups.size());
  p.candidates.reserve(groups.items());
  long long reach = 0;  // the heaviest total weight any choice can have
  for (Index g = groups.size(); g-- > 0;) {  // the last group is stage 0
    const std::span<const KnapsackItem> items = groups.group(g);
    const Index first = p.candidates.size();
    int heaviest = 0;
    for (Index i = 0; i < items.size(); ++i) {
      const KnapsackItem& item = items[i];
      if (!fits(item)) continue;
      p.candidates.push_back({item.weight, item.value, static_cast<int>(i)});
      heaviest = std::max(heaviest, item.weight);
    }
    p.stage_end.push_back(p.candidates.size());
    reach += heaviest;
    p.max_candidates = std::max(p.max_candidates, p.candidates.size() - first);
  }
  // Weights beyond what the items can add up to stay unreachable: no need to track
  // them.
  p.width = at(std::min<long long>(capacity, reach)) + 1;
  if (p.width - 1 > knapsack_max_weight)
    throw std::invalid_argument(
        fmt::format("capacity {} with items that add up to {}: the knapsack tracks "
                    "total weights up to {}",
                    capacity, reach, knapsack_max_weight));
  if (static_cast<double>(p.candidates.size()) * static_cast<double>(p.width) >
      knapsack_work_limit)
    throw std::invalid_argument(
        fmt::format("{} items over total weights up to {} is more than the knapsack's "
                    "limit of {:.0e} "
                    "steps",
                    p.candidates.size(), p.width - 1, knapsack_work_limit));
  if (!std::isfinite(scale))
    throw std::invalid_argument(
        "the items' values add up to more than a double can hold");
  p.tolerance = relative_tolerance * scale;
  p.scale = scale;
  p.reach = reach;
  p.capacity = capacity;
  return p;
}

// Shortcut 1: every candidate weight is a multiple of g, so every reachable
// total weight is too and the other columns of the DP stay unreachable (-inf + v
// never beats -inf). Dividing weights and width by g drops exactly those
// columns: the same float operations on the same values, the same choices.
void divide_by_common_divisor(Problem& p) {
  int g = 0;
  for (const Candidate& c : p.candidates) g = std::gcd(g, c.weight);
  if (g <= 1) return;
  for (Candidate& c : p.candidates) c.weight /= g;
  p.width = (p.width - 1) / at(g) + 1;  // min(capacity, reach) / g: reach is a multiple
}

// Shortcut 2: when every group's heaviest candidate fits together, the DP's
// answer is "the heaviest of each group" provided that (a) each group's
// heaviest candidate is its only one of that weight, so the one way to reach
// the total weight W = reach is to take them all, and (b) it beats the group's
// every other option (none counts as 0) by more than the tolerance plus a bound
// on float rounding, so every lighter total is worth less than the best minus
// the tolerance and the traceback starts at W. Returns false (and leaves `out`)
// when that cannot be proved; the DP then decides.
bool take_heaviest(const Problem& p, std::vector<int>& out) {
  if (p.reach > p.capacity) return false;
  // Each DP value is a sum of at most n positive values adding up to <= scale:
  // rounded, it is off by less than n * eps * scale; so are best and best - tol.
  const double n = static_cast<double>(p.stages()) + 1.0;
  const double margin =
      p.tolerance + 4.0 * n * std::numeric_limits<double>::epsilon() * p.scale;
  std::vector<int> chosen(out.size(), -1);
  for (Index s = 0; s < p.stages(); ++s) {
    const std::span<const Candidate> stage = p.stage(s);
    if (stage.empty()) continue;
    const Candidate* heaviest = &stage.front();
    for (const Candidate& c : stage)
      if (c.weight > heaviest->weight) heaviest = &c;
    double rival = 0.0;  // none
    for (const Candidate& c : stage) {
      if (&c == heaviest) continue;
      if (c.weight == heaviest->weight) return false;
      rival = std::max(rival, c.value);
    }
    if (!(heaviest->value - rival > margin)) return false;
    chosen[p.group_of(s)] = heaviest->index;
  }
  out = std::move(chosen);
  return true;
}

// One DP stage. row[c] is the best value of the stages so far at total weight
// exactly c (unreachable if none); next[c] adds this stage's group, and choice[c]
// records what it took there: 0 for none, else 1 + the candidate's position.
// Options are tried in the order none, candidate 0, 1, ... and a later one wins
// only if it beats the best so far by more than the tolerance.
template <typename Slot>
void advance(std::span<const Candidate> items, const double* __restrict row,
             double* __restrict next, Slot* __restrict choice, Index width,
             double tolerance) {
  std::copy(row, row + width, next);
  std::fill(choice, choice + width, Slot{0});
  for (Index k = 0; k < items.size(); ++k) {
    const Index w = at(items[k].weight);
    const double v = items[k].value;
    const auto slot = static_cast<Slot>(k + 1);
    // Written so that GCC vectorises it even for plain SSE2 (no blend
    // instruction): the choice changes exactly when the value does, since a value
    // taken exceeds the one it replaces.
    for (Index c = w; c < width; ++c) {
      const double candidate = row[c - w] + v;
      const double current = next[c];
      const double best = candidate > current + tolerance ? candidate : current;
      next[c] = best;
      const Slot previous = choice[c];
      choice[c] = best == current ? previous : slot;
    }
  }
}

// The least total weight whose best value is within the tolerance of the optimum.
Index best_weight(const std::vector<double>& row, double tolerance) {
  const double best = *std::max_element(row.begin(), row.end());
  Index c = 0;
  while (row[c] < best - tolerance) ++c;
  return c;
}

// The choices of stages [lo, hi) from the DP row before stage lo, with a full
// choice table; `end` is the total weight after stage hi - 1 (none: the best).
template <typename Slot>
void solve_with_table(const Problem& p, Index lo, Index hi,
                      const std::vector<double>& first, std::optional<Index> end,
                      std::vector<int>& out) {
  const Index width = p.width;
  std::vector<Slot> table((hi - lo) * width);
  std::vector<double> row = first;
  std::vector<double> next(width);
  for (Index s = lo; s < hi; ++s) {
    advance(p.stage(s), row.data(), next.data(), table.data() + (s - lo) * width, width,
            p.tolerance);
    row.swap(next);
  }
  Index c = end ? *end : best_weight(row, p.tolerance);
  for (Index s = hi; s-- > lo;) {
    const Slot slot = table[(s - lo) * width + c];
    if (slot == 0) continue;
    const Candidate& item = p.stage(s)[at(slot) - 1];
    out[p.group_of(s)] = item.index;
    c -= at(item.weight);
  }
}

// Stages [lo, hi) as above, in O(width) memory per level of recursion when the
// table would exceed `limit` entries (Hirschberg-style). The DP runs forward to
// the middle stage, then on to hi while carrying, for every weight, the weight
// at which its traceback would cross the middle; the two halves are then solved
// for their own end weights. Rows are computed exactly as the table path does,
// so both paths make the same choices, ties included.
template <typename Slot>
void solve(const Problem& p, Index lo, Index hi, const std::vector<double>& first,
           std::optional<Index> end, Index limit, std::vector<int>& out) {
  if (hi == lo) return;
  const Index width = p.width;
  if (hi - lo == 1 || (hi - lo) * width <= limit) {
    solve_with_table<Slot>(p, lo, hi, first, end, out);
    return;
  }
  const Index mid = lo + (hi - lo) / 2;
  std::vector<double> middle = first;
  Index split = 0;
  Index last = 0;
  {
    std::vector<double> next(width);
    std::vector<std::uint32_t> choice(width);
    for (Index s = lo; s < mid; ++s) {
      advance(p.stage(s), middle.data(), next.data(), choice.data(), width,
              p.tolerance);
      middle.swap(next);
    }
    std::vector<double> row = middle;
    std::vector<int> crossing(width);  // weight at stage mid on the traceback from c
    std::vector<int> crossing_next(width);
    std::iota(crossing.begin(), crossing.end(), 0);
    for (Index s = mid; s < hi; ++s) {
      const std::span<const Candidate> stage = p.stage(s);
      advance(stage, row.data(), next.data(), choice.data(), width, p.tolerance);
      for (Index c = 0; c < width; ++c)
        crossing_next[c] = choice[c] == 0
                               ? crossing[c]
                               : crossing[c - at(stage[choice[c] - 1].weight)];
      row.swap(next);
      crossing.swap(crossing_next);
    }
    last = end ? *end : best_weight(row, p.tolerance);
    split = at(crossing[last]);
  }
  solve<Slot>(p, mid, hi, middle, last, limit, out);
  middle = {};  // the first half starts from `first`
  solve<Slot>(p, lo, mid, first, split, limit, out);
}

}  // namespace

namespace detail {

std::vector<int> knapsack(const KnapsackGroups& groups, int capacity,
                          std::size_t table_limit, bool shortcuts) {
  Problem p = prepare(groups, capacity);
  std::vector<int> out(groups.size(), -1);
  if (p.width == 1) return out;  // nothing fits
  if (shortcuts) {
    if (take_heaviest(p, out)) return out;
    divide_by_common_divisor(p);
  }
  std::vector<double> first(p.width, unreachable);
  first[0] = 0.0;
  // Table entries hold the candidate's position + 1: two bytes unless a group is huge.
  if (p.max_candidates < std::numeric_limits<std::uint16_t>::max())
    solve<std::uint16_t>(p, 0, p.stages(), first, std::nullopt, table_limit, out);
  else
    solve<std::uint32_t>(p, 0, p.stages(), first, std::nullopt, table_limit, out);
  return out;
}

}  // namespace detail

KnapsackGroups::KnapsackGroups(const std::vector<std::vector<KnapsackItem>>& groups) {
  for (const std::vector<KnapsackItem>& group : groups) {
    items_.insert(items_.end(), group.begin(), group.end());
    close_group();
  }
}

std::vector<int> knapsack(const KnapsackGroups& groups, int capacity) {
  return detail::knapsack(groups, capacity, knapsack_table_limit);
}

std::vector<int> knapsack(const std::vector<std::vector<KnapsackItem>>& groups,
                          int capacity) {
  return knapsack(KnapsackGroups(groups), capacity);
}

}  // namespace aryl
