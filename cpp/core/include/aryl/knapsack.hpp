// The multiple-choice knapsack of elastic scaling (paper §5.2, phase 2 of
// Algorithm 2): each elastic job is a group of items "w more
// workers" (weight = GPUs, value = running-time reduction); take at most one item
// per group, total weight <= capacity, maximise total value.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace aryl {

struct KnapsackItem {
  int weight;    // >= 1
  double value;  // finite; <= 0 is allowed but never taken
};

// Groups laid out flat: one buffer of items however many groups, which a
// scheduler refills at every epoch without allocating. Add a group's items,
// then close it.
class KnapsackGroups {
 public:
  KnapsackGroups() = default;
  explicit KnapsackGroups(const std::vector<std::vector<KnapsackItem>>& groups);
  void add(KnapsackItem item) { items_.push_back(item); }
  void close_group() { ends_.push_back(items_.size()); }
  void clear() {
    items_.clear();
    ends_.clear();
  }
  [[nodiscard]] std::size_t size() const { return ends_.size(); }
  [[nodiscard]] std::size_t items() const { return items_.size(); }
  [[nodiscard]] std::span<const KnapsackItem> group(std::size_t g) const {
    const std::size_t first = g == 0 ? 0 : ends_[g - 1];
    return {items_.data() + first, ends_[g] - first};
  }

 private:
  std::vector<KnapsackItem> items_;
  std::vector<std::size_t> ends_;  // group -> one past its last item
};

// Choice tables up to this many entries (groups x (capacity + 1)) are kept in
// full (2 bytes each); larger instances are solved by divide and conquer in
// O(capacity) memory per level of recursion, at one more pass of the DP per
// level (the levels stop once a part fits the limit). Both give the same answer.
inline constexpr std::size_t knapsack_table_limit = std::size_t{1} << 25;

// Bounded resources: instances whose reachable total weight (the capacity, or
// less when the fitting items add up to less) exceeds knapsack_max_weight, or
// whose DP would take more than knapsack_work_limit steps (fitting items x
// reachable weights), are refused with std::invalid_argument, as are values
// whose sum overflows a double.
inline constexpr std::size_t knapsack_max_weight = std::size_t{1} << 22;
inline constexpr double knapsack_work_limit = 4e9;

// Returns, per group, the index of the chosen item or -1 for none. Exact dynamic
// programming over total weight: O(items x capacity) time.
//
// Bad input is std::invalid_argument naming the first bad item ("group 3, item 1:
// weight must be >= 1, got 0"): capacity < 0, weight < 1, or a value that is not
// finite. Items heavier than the capacity, and items of value <= 0, are never
// chosen.
//
// Ties, in this order (deterministic, the same for every instance size):
//  1. Value: the largest total, where totals within a tolerance of
//     1e-9 x (sum over groups of the largest positive value that fits) count as
//     equal, so rounding in sums of doubles cannot decide.
//  2. Weight: among those, the least total weight (the smallest total weight
//     whose best value is within the tolerance of the optimum).
//  3. Choices: among those, the lexicographically first choice vector, group 0
//     first, ordering "none" before item 0 before item 1 ...; i.e. earlier
//     groups take nothing or low item indices, later groups take what remains.
//     (Values within the tolerance count as equal here too.)
std::vector<int> knapsack(const KnapsackGroups& groups, int capacity);
std::vector<int> knapsack(const std::vector<std::vector<KnapsackItem>>& groups,
                          int capacity);

namespace detail {
// knapsack() with the table limit as a parameter (0 forces divide and conquer
// down to single groups) and its exact shortcuts (dividing weights by their
// common divisor; taking every group's heaviest item when all fit and that is
// provably the DP's answer) optional; exposed so the tests can check that every
// path makes the same choices.
std::vector<int> knapsack(const KnapsackGroups& groups, int capacity,
                          std::size_t table_limit, bool shortcuts = true);
}  // namespace detail

}  // namespace aryl
