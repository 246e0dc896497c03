// The placer's index sets against plain std::sets on random inserts and erases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "aryl/index_set.hpp"
#include "aryl/rng.hpp"

using namespace aryl;

TEST_CASE("index sets: members, sizes and smallest members as std::sets",
          "[placement]") {
  Rng rng(77);
  for (int instance = 0; instance < 200; ++instance) {
    const int n = 1 + static_cast<int>(rng.below(instance < 100 ? 200 : 9000));
    const int n_sets = 1 + static_cast<int>(rng.below(5));
    IndexSets sets(n_sets, n);
    std::vector<std::set<int>> reference(static_cast<std::size_t>(n_sets));
    for (int step = 0; step < 600; ++step) {
      INFO("instance " << instance << " step " << step);
      const int k = static_cast<int>(rng.below(static_cast<std::uint64_t>(n_sets)));
      // Mostly low members, so that sets empty and refill their first words.
      const auto range =
          static_cast<std::uint64_t>(step % 3 == 0 ? n : std::min(n, 70));
      const int i = static_cast<int>(rng.below(range));
      std::set<int>& ref = reference[static_cast<std::size_t>(k)];
      if (ref.count(i)) {
        sets.erase(k, i);
        ref.erase(i);
      } else {
        sets.insert(k, i);
        ref.insert(i);
      }
      for (int other = 0; other < n_sets; ++other) {
        const std::set<int>& r = reference[static_cast<std::size_t>(other)];
        REQUIRE(sets.contains(other, i) == (r.count(i) == 1));
        REQUIRE(sets.size(other) == static_cast<int>(r.size()));
        REQUIRE(sets.empty(other) == r.empty());
        if (!r.empty()) REQUIRE(sets.first(other) == *r.begin());
      }
    }
  }
}
