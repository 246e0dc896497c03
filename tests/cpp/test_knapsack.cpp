#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "aryl/knapsack.hpp"
#include "aryl/rng.hpp"

using namespace aryl;
using Catch::Matchers::Equals;
using Groups = std::vector<std::vector<KnapsackItem>>;

namespace {

std::size_t at(int i) { return static_cast<std::size_t>(i); }

double total_value(const Groups& groups, const std::vector<int>& choice) {
  double v = 0.0;
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (choice[g] >= 0) v += groups[g][at(choice[g])].value;
  return v;
}

int total_weight(const Groups& groups, const std::vector<int>& choice) {
  int w = 0;
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (choice[g] >= 0) w += groups[g][at(choice[g])].weight;
  return w;
}

// The kernel's tolerance: 1e-9 x the sum over groups of the best positive value that
// fits.
double tolerance(const Groups& groups, int capacity) {
  double scale = 0.0;
  for (const auto& group : groups) {
    double best = 0.0;
    for (const KnapsackItem& item : group)
      if (item.weight <= capacity) best = std::max(best, item.value);
    scale += best;
  }
  return 1e-9 * scale;
}

// Every choice vector, in lexicographic order (group 0 first, none before item 0):
// the first with the largest value, then the least weight. With integer values
// (exact sums) that is the documented tie rule itself.
std::vector<int> brute_force(const Groups& groups, int capacity) {
  std::vector<int> choice(groups.size(), -1);
  std::vector<int> best = choice;
  double best_value = 0.0;
  int best_weight = 0;
  while (true) {
    const int w = total_weight(groups, choice);
    const double v = total_value(groups, choice);
    if (w <= capacity && (v > best_value || (v == best_value && w < best_weight))) {
      best = choice;
      best_value = v;
      best_weight = w;
    }
    // Next choice vector: the last group counts fastest.
    std::size_t g = groups.size();
    while (g > 0 && choice[g - 1] + 1 == static_cast<int>(groups[g - 1].size()))
      choice[--g] = -1;
    if (g == 0) return best;
    ++choice[g - 1];
  }
}

// 0-5 groups of 0-4 items, weights 1-8; integer values (many ties) or real ones,
// a few of them zero or negative.
Groups random_groups(Rng& rng, bool integer_values, int groups = -1, int items = 5,
                     int max_weight = 8) {
  const int n = groups >= 0 ? groups : static_cast<int>(rng.below(6));
  Groups out(at(n));
  for (auto& group : out) {
    const auto k = rng.below(static_cast<std::uint64_t>(items));
    for (std::uint64_t i = 0; i < k; ++i) {
      const int w =
          1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(max_weight)));
      double v =
          integer_values ? static_cast<double>(rng.below(12)) : 100.0 * rng.uniform();
      if (rng.below(10) == 0) v = -v;
      group.push_back({w, v});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("paper example: capacity 4 takes A and B's 2-GPU item", "[knapsack]") {
  const Groups groups = {{{2, 50}}, {{1, 20}, {2, 30}, {3, 36}, {4, 40}}};
  const std::vector<int> choice = knapsack(groups, 4);
  REQUIRE_THAT(choice, Equals(std::vector<int>{0, 1}));
  REQUIRE(total_value(groups, choice) == 80);
}

TEST_CASE("paper example: other capacities by hand", "[knapsack]") {
  const Groups groups = {{{2, 50}}, {{1, 20}, {2, 30}, {3, 36}, {4, 40}}};
  using V = std::vector<int>;
  REQUIRE_THAT(knapsack(groups, 0), Equals(V{-1, -1}));
  REQUIRE_THAT(knapsack(groups, 1), Equals(V{-1, 0}));  // 20
  REQUIRE_THAT(knapsack(groups, 2), Equals(V{0, -1}));  // 50 beats B's 30
  REQUIRE_THAT(knapsack(groups, 3), Equals(V{0, 0}));   // 70 beats B's 36
  REQUIRE_THAT(knapsack(groups, 5), Equals(V{0, 2}));   // 86
  REQUIRE_THAT(knapsack(groups, 6), Equals(V{0, 3}));   // 90
  REQUIRE_THAT(knapsack(groups, 100), Equals(V{0, 3}));
}

TEST_CASE("ties: less weight, then none and low indices in earlier groups",
          "[knapsack]") {
  using V = std::vector<int>;
  // Same value 10: the lighter item wins even though it comes later.
  REQUIRE_THAT(knapsack({{{3, 10}, {2, 10}}}, 5), Equals(V{1}));
  // Same value and weight: the lower index.
  REQUIRE_THAT(knapsack({{{2, 10}, {2, 10}}}, 5), Equals(V{0}));
  // Either group can take the value: group 0 takes nothing, group 1 takes it.
  REQUIRE_THAT(knapsack({{{2, 10}}, {{2, 10}}}, 2), Equals(V{-1, 0}));
  // Worthless and harmful items are never taken, even with room to spare.
  REQUIRE_THAT(knapsack({{{1, 0.0}}, {{1, -5}}, {{1, 1e-30}}}, 10),
               Equals(V{-1, -1, 0}));
  // Differences within the tolerance do not count: the lighter item wins.
  REQUIRE_THAT(knapsack({{{2, 1.0 + 1e-12}, {1, 1.0}}}, 5), Equals(V{1}));
  REQUIRE_THAT(knapsack({{{2, 1.0 + 1e-6}, {1, 1.0}}}, 5), Equals(V{0}));
}

TEST_CASE("matches brute force on random small instances", "[knapsack]") {
  Rng rng(20240611);
  for (int instance = 0; instance < 400; ++instance) {
    const bool integer_values = instance % 2 == 0;
    const Groups groups = random_groups(rng, integer_values);
    const int capacity = static_cast<int>(rng.below(26));
    INFO("instance " << instance << " capacity " << capacity);
    const std::vector<int> choice = knapsack(groups, capacity);
    REQUIRE(choice.size() == groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g)
      REQUIRE((choice[g] >= -1 && choice[g] < static_cast<int>(groups[g].size())));
    REQUIRE(total_weight(groups, choice) <= capacity);
    const std::vector<int> best = brute_force(groups, capacity);
    const double gap = total_value(groups, best) - total_value(groups, choice);
    REQUIRE(gap <= tolerance(groups, capacity) + 1e-12);
    REQUIRE(gap >= -1e-9);
    // Integer values add up exactly, so the tie rule decides alone.
    if (integer_values) REQUIRE_THAT(choice, Equals(best));
  }
}

TEST_CASE("flat groups built item by item hold what the nested ones hold",
          "[knapsack]") {
  Rng rng(97);
  KnapsackGroups flat;  // refilled per instance, as an epoch refills it per GPU type
  for (int instance = 0; instance < 200; ++instance) {
    const Groups groups = random_groups(rng, instance % 2 == 0);  // empty groups too
    flat.clear();
    for (const auto& group : groups) {
      for (const KnapsackItem& item : group) flat.add(item);
      flat.close_group();
    }
    REQUIRE(flat.size() == groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      REQUIRE(flat.group(g).size() == groups[g].size());
      for (std::size_t i = 0; i < groups[g].size(); ++i)
        REQUIRE(flat.group(g)[i].weight == groups[g][i].weight);
    }
    const int capacity = static_cast<int>(rng.below(26));
    REQUIRE_THAT(knapsack(flat, capacity), Equals(knapsack(groups, capacity)));
  }
}

TEST_CASE("divide and conquer makes the same choices as the table", "[knapsack]") {
  Rng rng(7);
  for (int instance = 0; instance < 200; ++instance) {
    const bool integer_values = instance % 2 == 0;
    const int n = 1 + static_cast<int>(rng.below(40));
    const Groups groups = random_groups(rng, integer_values, n, 10, 30);
    const int capacity = static_cast<int>(rng.below(300));
    INFO("instance " << instance << " groups " << n << " capacity " << capacity);
    const std::vector<int> table = knapsack(groups, capacity);
    const auto width = static_cast<std::size_t>(capacity) + 1;
    for (std::size_t limit : {std::size_t{0}, width, 3 * width, 7 * width})
      REQUIRE_THAT(detail::knapsack(KnapsackGroups(groups), capacity, limit),
                   Equals(table));
  }
}

TEST_CASE("divide and conquer on a larger instance", "[knapsack]") {
  Rng rng(11);
  const Groups groups = random_groups(rng, false, 300, 17, 64);
  const std::vector<int> table = knapsack(groups, 2000);
  REQUIRE_THAT(detail::knapsack(KnapsackGroups(groups), 2000, 0), Equals(table));
  REQUIRE_THAT(detail::knapsack(KnapsackGroups(groups), 2000, 20000), Equals(table));
  REQUIRE(total_weight(groups, table) <= 2000);
}

TEST_CASE("bad input is refused naming the item", "[knapsack]") {
  const Groups ok = {{{1, 1.0}}, {}, {{2, 3.0}, {1, 2.0}}, {{1, 1.0}, {2, 2.0}}};
  REQUIRE_THROWS_WITH(knapsack(ok, -1), "capacity must be >= 0, got -1");
  Groups bad = ok;
  bad[3][1].weight = 0;
  REQUIRE_THROWS_WITH(knapsack(bad, 4), "group 3, item 1: weight must be >= 1, got 0");
  bad[3][1].weight = -2;
  REQUIRE_THROWS_AS(knapsack(bad, 4), std::invalid_argument);
  bad = ok;
  bad[2][0].value = std::nan("");
  REQUIRE_THROWS_WITH(knapsack(bad, 4),
                      "group 2, item 0: value must be finite, got nan");
  bad[2][0].value = -INFINITY;
  REQUIRE_THROWS_WITH(knapsack(bad, 4),
                      Catch::Contains("group 2, item 0: value must be finite"));
  // Checked even when the item could never fit.
  bad = ok;
  bad[0].push_back({100, INFINITY});
  REQUIRE_THROWS_WITH(knapsack(bad, 4),
                      "group 0, item 1: value must be finite, got inf");
}

TEST_CASE("nothing to choose", "[knapsack]") {
  using V = std::vector<int>;
  REQUIRE(knapsack(KnapsackGroups(), 10).empty());
  REQUIRE_THAT(knapsack({{}, {}}, 10), Equals(V{-1, -1}));
  REQUIRE_THAT(knapsack({{{1, 5.0}}, {{2, 7.0}}}, 0), Equals(V{-1, -1}));
  REQUIRE_THAT(knapsack({{{11, 5.0}}, {{20, 7.0}, {12, 1.0}}}, 10), Equals(V{-1, -1}));
  // Capacity far beyond what the items add up to.
  REQUIRE_THAT(knapsack({{{3, 5.0}}, {{2, 7.0}, {4, 8.0}}}, 1 << 30), Equals(V{0, 1}));
}

TEST_CASE("a group too large for two-byte choices", "[knapsack]") {
  Groups groups(2);
  for (int i = 0; i < 70000; ++i) groups[0].push_back({1 + i % 5, 1.0 + (i % 5)});
  groups[0].push_back({3, 100.0});  // item 70000: the best by far
  groups[1] = {{2, 7.0}};
  using V = std::vector<int>;
  REQUIRE_THAT(knapsack(groups, 5), Equals(V{70000, 0}));
  REQUIRE_THAT(detail::knapsack(KnapsackGroups(groups), 5, 0), Equals(V{70000, 0}));
  REQUIRE_THAT(knapsack(groups, 4), Equals(V{70000, -1}));
}

TEST_CASE("instances beyond bounded time and memory are refused", "[knapsack]") {
  REQUIRE_THROWS_WITH(knapsack(Groups{{{2147483645, 1.0}}}, 2147483646),
                      Catch::Contains("tracks total weights up to"));
  REQUIRE_THROWS_WITH(knapsack(Groups{{{1, 1e308}}, {{1, 1e308}}}, 2),
                      Catch::Contains("add up to more than a double"));
  // A large capacity with small items only tracks what the items can reach.
  REQUIRE_THAT(knapsack(Groups{{{2, 1.0}}}, 2147483646), Equals(std::vector<int>{0}));
}

namespace {

// Like the scheduler's groups: weights w x D for w = 1.., one D per group, values
// rising with w (strictly, or with steps below / near the tolerance) or not at all.
Groups elastic_groups(Rng& rng, int n) {
  Groups out(at(n));
  for (auto& group : out) {
    const int d = 1 << rng.below(4);  // 1, 2, 4, 8 GPUs per worker
    const auto k = 1 + rng.below(6);
    const int shape = static_cast<int>(rng.below(4));
    double v = 0.0;
    for (std::uint64_t w = 1; w <= k; ++w) {
      if (shape == 0)
        v += 1.0 + 99.0 * rng.uniform();  // rising
      else if (shape == 1)
        v += rng.below(3) == 0 ? 0.0 : 5.0;  // integer ties
      else if (shape == 2)
        v += 1e-10 * rng.uniform();  // near the tolerance
      else
        v = 100.0 * rng.uniform() - 10.0;  // anything
      group.push_back({static_cast<int>(w) * d, v});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("shortcuts (common divisor, all fit) make the full DP's choices",
          "[knapsack]") {
  Rng rng(31337);
  for (int instance = 0; instance < 2000; ++instance) {
    const int n = static_cast<int>(rng.below(8));
    Groups groups = instance % 3 == 0 ? random_groups(rng, instance % 2 == 0, n, 6, 6)
                                      : elastic_groups(rng, n);
    const int g = 1 + static_cast<int>(rng.below(8));  // a common divisor
    if (instance % 3 == 0)
      for (auto& group : groups)
        for (auto& item : group) item.weight *= g;
    int reach = 0;
    for (const auto& group : groups) {
      int heaviest = 0;
      for (const auto& item : group) heaviest = std::max(heaviest, item.weight);
      reach += heaviest;
    }
    // Half the capacities hold every group's heaviest item, half do not.
    const auto span = static_cast<std::uint64_t>(reach) + 1;
    const int capacity = rng.below(2) == 0 ? reach + static_cast<int>(rng.below(20))
                                           : static_cast<int>(rng.below(span));
    INFO("instance " << instance << " capacity " << capacity << " reach " << reach);
    const std::vector<int> full =
        detail::knapsack(KnapsackGroups(groups), capacity, knapsack_table_limit, false);
    REQUIRE_THAT(knapsack(groups, capacity), Equals(full));
    REQUIRE_THAT(detail::knapsack(KnapsackGroups(groups), capacity, 0), Equals(full));
  }
}

TEST_CASE("all fit: the heaviest items only when provably the DP's answer",
          "[knapsack]") {
  using V = std::vector<int>;
  // Rising values, room for all: the heaviest of each group.
  REQUIRE_THAT(knapsack({{{8, 1.0}, {16, 3.0}}, {{4, 2.0}, {8, 2.5}}}, 100),
               Equals(V{1, 1}));
  // The heaviest is worth no more than a lighter item: the lighter one.
  REQUIRE_THAT(knapsack({{{8, 3.0}, {16, 3.0}}}, 100), Equals(V{0}));
  // A gain within the tolerance does not count: the lighter item.
  REQUIRE_THAT(knapsack({{{1, 1.0}, {2, 1.0 + 1e-12}}}, 100), Equals(V{0}));
  // Two heaviest of equal weight: the tie rule (the lower index unless clearly better).
  REQUIRE_THAT(knapsack({{{2, 1.0}, {2, 1.0}}}, 100), Equals(V{0}));
  REQUIRE_THAT(knapsack({{{2, 1.0}, {2, 2.0}}}, 100), Equals(V{1}));
}
