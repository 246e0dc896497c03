#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "aryl/reclaim.hpp"
#include "aryl/rng.hpp"
#include "fixtures.hpp"

using namespace aryl;
using namespace aryl::test;
using Catch::Matchers::Equals;

namespace {

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Fewest preempted jobs over all n-subsets of the on-loan servers, by brute force.
int brute_force_min_preempted(const ClusterState& s, int n) {
  std::vector<int> loaned;
  for (int i = 0; i < static_cast<int>(s.servers.size()); ++i)
    if (s.servers[static_cast<std::size_t>(i)].on_loan) loaned.push_back(i);
  const std::vector<int> count = worker_counts(s);
  int best = 1 << 30;
  const int k = static_cast<int>(loaned.size());
  for (int mask = 0; mask < (1 << k); ++mask) {
    if (__builtin_popcount(static_cast<unsigned>(mask)) != n) continue;
    std::vector<int> removed(s.jobs.size(), 0);
    for (const Worker& w : s.workers)
      for (int b = 0; b < k; ++b)
        if ((mask >> b & 1) && w.server == loaned[static_cast<std::size_t>(b)])
          ++removed[static_cast<std::size_t>(w.job)];
    int preempted = 0;
    for (std::size_t j = 0; j < s.jobs.size(); ++j)
      preempted += count[j] > 0 && count[j] - removed[j] < s.jobs[j].min_workers;
    best = std::min(best, preempted);
  }
  return best;
}

// A random small cluster: a few training and on-loan servers packed with
// inelastic and elastic jobs of 1-8 GPUs per worker.
ClusterState random_cluster(std::uint64_t seed) {
  Rng rng(seed);
  ClusterState s;
  add_server(s, "t0", false);
  add_server(s, "t1", false);
  const int loaned = 3 + static_cast<int>(rng.below(6));
  for (int i = 0; i < loaned; ++i) add_server(s, "l" + std::to_string(i));
  std::vector<int> free_gpus(s.servers.size(), 8);
  const int demands[] = {1, 1, 2, 4, 8};
  for (int j = 0; j < 14; ++j) {
    const int d = demands[rng.below(5)];
    const int workers = 1 + static_cast<int>(rng.below(4));
    std::vector<int> where;
    for (int w = 0; w < workers; ++w) {
      const auto start = rng.below(s.servers.size());
      for (std::size_t t = 0; t < s.servers.size(); ++t) {
        const std::size_t srv = (start + t) % s.servers.size();
        if (free_gpus[srv] >= d) {
          free_gpus[srv] -= d;
          where.push_back(static_cast<int>(srv));
          break;
        }
      }
    }
    if (where.empty()) continue;
    const int n = static_cast<int>(where.size());
    const int min =
        rng.below(2) ? n
                     : 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    const int job = add_job(s, "j" + std::to_string(j), d, min, n);
    s.jobs[static_cast<std::size_t>(job)].hetero = true;  // may span V100 and T4
    for (int srv : where) place(s, job, srv, 1);
  }
  return s;
}

}  // namespace

TEST_CASE("paper example: preemption costs are the server fractions", "[reclaim]") {
  REQUIRE_THAT(preemption_costs(paper_reclaim_example()),
               Equals(std::vector<double>{0.5, 0.5, 1.0, 0.5, 1.0, 0.5}));
}

TEST_CASE("paper example: reclaiming two servers returns 1 and 2", "[reclaim]") {
  const ReclaimPlan plan = reclaim(paper_reclaim_example(), 2, ReclaimPolicy::aryl);
  REQUIRE_THAT(plan.servers, Equals(std::vector<int>{0, 1}));
  REQUIRE_THAT(plan.preempted, Equals(std::vector<int>{0}));  // job a only
  REQUIRE(plan.scaled_in.empty());
  REQUIRE(plan.demand_gpus == 16);
  REQUIRE(plan.collateral_gpus == 0);
  const ReclaimPlan best = reclaim(paper_reclaim_example(), 2, ReclaimPolicy::exact);
  REQUIRE_THAT(sorted(best.servers), Equals(std::vector<int>{0, 1}));
}

TEST_CASE("paper example: three servers", "[reclaim]") {
  const ReclaimPlan plan = reclaim(paper_reclaim_example(), 3, ReclaimPolicy::aryl);
  REQUIRE(plan.preempted.size() == 2);
  // Exact breaks the tie on preemptions by collateral: {1,2,3} frees nothing else.
  const ReclaimPlan best = reclaim(paper_reclaim_example(), 3, ReclaimPolicy::exact);
  REQUIRE_THAT(best.servers, Equals(std::vector<int>{0, 1, 2}));
  REQUIRE(best.preempted.size() == 2);
  REQUIRE(best.collateral_gpus == 0);
}

TEST_CASE("collateral damage counts preempted workers left on kept servers",
          "[reclaim]") {
  ClusterState s = paper_reclaim_example();
  const ReclaimPlan plan = reclaim(s, 1, ReclaimPolicy::scf);  // server 1: job a
  REQUIRE_THAT(plan.servers, Equals(std::vector<int>{0}));
  REQUIRE(plan.collateral_gpus == 8);  // a's worker on server 2
}

TEST_CASE("servers that preempt nothing go first", "[reclaim]") {
  ClusterState s;
  const int t = add_server(s, "train", false);
  const int busy = add_server(s, "busy");
  const int flex = add_server(s, "flex");
  const int idle = add_server(s, "idle");
  const int small = add_job(s, "small", 1, 1, 1);
  const int elastic = add_job(s, "elastic", 2, 2, 5);
  s.jobs[static_cast<std::size_t>(elastic)].hetero = true;  // V100 base, T4 flexible
  place(s, small, busy, 1);
  place(s, elastic, t, 2);     // base on training
  place(s, elastic, flex, 3);  // flexible on loan
  SECTION("one server: the idle one") {
    const ReclaimPlan plan = reclaim(s, 1, ReclaimPolicy::aryl);
    REQUIRE_THAT(plan.servers, Equals(std::vector<int>{idle}));
  }
  SECTION("two servers: idle, then the elastic job scales in") {
    const ReclaimPlan plan = reclaim(s, 2, ReclaimPolicy::aryl);
    REQUIRE_THAT(plan.servers, Equals(std::vector<int>{idle, flex}));
    REQUIRE(plan.preempted.empty());
    REQUIRE(plan.scaled_in == std::vector<std::pair<int, int>>{{elastic, 3}});
  }
  SECTION("SCF ranks by job count, so it may preempt where scaling in would do") {
    s.workers.push_back({small, busy, false});
    s.jobs[static_cast<std::size_t>(small)].min_workers = 2;
    s.jobs[static_cast<std::size_t>(small)].max_workers = 2;
    const ReclaimPlan plan = reclaim(s, 2, ReclaimPolicy::scf);
    REQUIRE_THAT(plan.servers, Equals(std::vector<int>{idle, busy}));
    REQUIRE_THAT(plan.preempted, Equals(std::vector<int>{small}));
  }
}

TEST_CASE("a job scaled in on one server and preempted on another is reported once",
          "[reclaim]") {
  ClusterState s;
  const int a = add_server(s, "a");
  const int b = add_server(s, "b");
  const int job = add_job(s, "e", 4, 2, 4);
  place(s, job, a, 2);
  place(s, job, b, 2);
  const ReclaimPlan plan = reclaim(s, 2, ReclaimPolicy::aryl);
  REQUIRE_THAT(plan.preempted, Equals(std::vector<int>{job}));
  REQUIRE(plan.scaled_in.empty());
  REQUIRE(plan.collateral_gpus == 0);
}

TEST_CASE("bad requests are refused", "[reclaim]") {
  const ClusterState s = paper_reclaim_example();
  REQUIRE_THROWS_WITH(reclaim(s, 7, ReclaimPolicy::aryl),
                      Catch::Contains("only 6 are on loan"));
  REQUIRE_THROWS_AS(reclaim(s, -1, ReclaimPolicy::aryl), std::invalid_argument);
  REQUIRE(reclaim(s, 0, ReclaimPolicy::aryl).servers.empty());
  REQUIRE_THROWS_WITH(parse_reclaim_policy("greedy"),
                      Catch::Contains("unknown reclaim policy"));
}

TEST_CASE("a caller's filter: the choice among the given servers only", "[reclaim]") {
  const ClusterState s = paper_reclaim_example();
  // Servers 1 and 2 (indices 0, 1) are the free answer. Without them, Algorithm 1
  // over servers 3-6 (given in any order) takes 4 (cost 0.5, first of the tie with
  // 6), then 5 (c is gone: d's 0.5, tied with 6, first): c and d preempted.
  const ReclaimPlan plan = reclaim(s, 2, ReclaimPolicy::aryl, 0, {5, 3, 2, 4});
  REQUIRE_THAT(plan.servers, Equals(std::vector<int>{3, 4}));
  REQUIRE_THAT(plan.preempted, Equals(std::vector<int>{2, 3}));
  // exact: also two preemptions, with less collateral (b and c: c's 2 GPUs on 5).
  const ReclaimPlan best = reclaim(s, 2, ReclaimPolicy::exact, 0, {5, 3, 2, 4});
  REQUIRE_THAT(best.servers, Equals(std::vector<int>{2, 3}));
  REQUIRE(best.collateral_gpus == 2);
  REQUIRE_THROWS_WITH(reclaim(s, 3, ReclaimPolicy::aryl, 0, {0, 1}),
                      Catch::Contains("only 2 of the servers given are on loan"));
  REQUIRE_THROWS_WITH(reclaim(s, 1, ReclaimPolicy::aryl, 0, {0, 0}),
                      Catch::Contains("given twice"));
  REQUIRE_THROWS_WITH(reclaim(s, 1, ReclaimPolicy::aryl, 0, {9}),
                      Catch::Contains("no server index 9"));
  // Every on-loan server given: the unfiltered plan.
  REQUIRE(reclaim(s, 3, ReclaimPolicy::aryl, 0, {0, 1, 2, 3, 4, 5}).servers ==
          reclaim(s, 3, ReclaimPolicy::aryl).servers);
}

TEST_CASE("exact refuses instances beyond its limit", "[reclaim]") {
  ClusterState s;
  for (int i = 0; i < 60; ++i) {
    const int srv = add_server(s, "s" + std::to_string(i));
    place(s, add_job(s, "j" + std::to_string(i), 8, 1, 1), srv, 1);
  }
  REQUIRE_THROWS_WITH(reclaim(s, 30, ReclaimPolicy::exact), Catch::Contains("limit"));
  REQUIRE(reclaim(s, 2, ReclaimPolicy::exact).preempted.size() == 2);
}

TEST_CASE("random is seeded", "[reclaim]") {
  const ClusterState s = paper_reclaim_example();
  REQUIRE(reclaim(s, 3, ReclaimPolicy::random, 7).servers ==
          reclaim(s, 3, ReclaimPolicy::random, 7).servers);
  std::set<std::vector<int>> seen;
  for (std::uint64_t seed = 0; seed < 20; ++seed)
    seen.insert(reclaim(s, 3, ReclaimPolicy::random, seed).servers);
  REQUIRE(seen.size() > 5);
}

TEST_CASE("exact matches brute force and no policy beats it", "[reclaim]") {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const ClusterState s = random_cluster(seed);
    REQUIRE_NOTHROW(validate(s));
    const int loaned = static_cast<int>(s.servers.size()) - 2;
    for (int n = 1; n <= loaned; ++n) {
      INFO("seed " << seed << " n " << n);
      const int best = brute_force_min_preempted(s, n);
      const ReclaimPlan exact = reclaim(s, n, ReclaimPolicy::exact);
      REQUIRE(static_cast<int>(exact.preempted.size()) == best);
      REQUIRE(exact.servers.size() == static_cast<std::size_t>(n));
      for (ReclaimPolicy p :
           {ReclaimPolicy::aryl, ReclaimPolicy::scf, ReclaimPolicy::random}) {
        const ReclaimPlan plan = reclaim(s, n, p, seed);
        REQUIRE(static_cast<int>(plan.preempted.size()) >= best);
        REQUIRE(std::set<int>(plan.servers.begin(), plan.servers.end()).size() ==
                static_cast<std::size_t>(n));
      }
    }
  }
}

TEST_CASE("exact prefers returning all of a preempted job to an idle server",
          "[reclaim]") {
  ClusterState s;
  add_server(s, "idle");
  const int i2 = add_server(s, "i2");
  const int i3 = add_server(s, "i3");
  const int a = add_job(s, "a", 8, 2, 2);
  place(s, a, i2, 1);
  place(s, a, i3, 1);
  validate(s);
  const ReclaimPlan plan = reclaim(s, 2, ReclaimPolicy::exact);
  REQUIRE(plan.servers == std::vector<int>{i2, i3});
  REQUIRE(plan.collateral_gpus == 0);
  REQUIRE(reclaim(s, 1, ReclaimPolicy::exact).servers ==
          std::vector<int>{0});  // idle first
}
