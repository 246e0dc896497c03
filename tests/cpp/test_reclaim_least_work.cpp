// The work-aware reclaim policies (least-work, exact-work): the greedy against
// the exact optimum by brute force on small random states, and hand examples.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "aryl/reclaim.hpp"
#include "aryl/rng.hpp"
#include "fixtures.hpp"

using namespace aryl;
using namespace aryl::test;
using Catch::Matchers::Equals;

namespace {

std::size_t at(int i) { return static_cast<std::size_t>(i); }

// Least work thrown away over all n-subsets of the on-loan servers, by brute force:
// a job loses its risk when fewer than min_workers of its workers are left.
double brute_force_min_work(const ClusterState& s, int n,
                            const std::vector<double>& risk) {
  std::vector<int> loaned;
  for (int i = 0; i < static_cast<int>(s.servers.size()); ++i)
    if (s.servers[at(i)].on_loan) loaned.push_back(i);
  const std::vector<int> count = worker_counts(s);
  double best = std::numeric_limits<double>::infinity();
  const int k = static_cast<int>(loaned.size());
  for (int mask = 0; mask < (1 << k); ++mask) {
    if (__builtin_popcount(static_cast<unsigned>(mask)) != n) continue;
    std::vector<int> removed(s.jobs.size(), 0);
    for (const Worker& w : s.workers)
      for (int b = 0; b < k; ++b)
        if ((mask >> b & 1) && w.server == loaned[at(b)]) ++removed[at(w.job)];
    double lost = 0.0;
    for (std::size_t j = 0; j < s.jobs.size(); ++j)
      if (count[j] > 0 && count[j] - removed[j] < s.jobs[j].min_workers)
        lost += risk[j];
    best = std::min(best, lost);
  }
  return best;
}

// A small random cluster (two training servers, 3-8 on loan, up to 14 jobs of
// 1-8 GPUs per worker, some elastic), each job with or without a checkpoint and
// with random unsaved work (a fifth of them none: just started or just saved).
struct Instance {
  ClusterState state;
  WorkAtRisk work;
};

Instance random_instance(std::uint64_t seed) {
  Rng rng(seed);
  Instance x;
  ClusterState& s = x.state;
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
    s.jobs[at(job)].hetero = true;  // may span V100 and T4
    s.jobs[at(job)].checkpoint = rng.below(2) == 0;
    for (int srv : where) place(s, job, srv, 1);
    // GPU-seconds: up to ~a day of its GPUs' progress
    x.work.unsaved.push_back(rng.below(5) == 0 ? 0.0
                                               : static_cast<double>(rng.below(86400)) *
                                                     d * n * rng.uniform());
  }
  x.work.restart_overhead = static_cast<double>(rng.below(3)) * 63.0;
  return x;
}

bool same(double a, double b) {
  return std::abs(a - b) <= 1e-9 * (1.0 + std::max(std::abs(a), std::abs(b)));
}

}  // namespace

TEST_CASE("work at risk: unsaved work plus a checkpointed job's restart",
          "[reclaim][least-work]") {
  ClusterState s;
  const int l = add_server(s, "l");
  const int saved = add_job(s, "saved", 2, 1, 1);
  const int fresh = add_job(s, "fresh", 1, 1, 1);
  s.jobs[at(fresh)].checkpoint = false;
  const int queued = add_job(s, "queued", 4, 1, 1);
  place(s, saved, l, 1);
  place(s, fresh, l, 1);
  validate(s);
  REQUIRE_THAT(work_at_risk(s, {{10.0, 20.0, 0.0}, 63.0}),
               Equals(std::vector<double>{10.0 + 63.0 * 2, 20.0, 0.0}));
  REQUIRE_THAT(work_at_risk(s, {{}, 63.0}),
               Equals(std::vector<double>{126.0, 0.0, 0.0}));
  (void)queued;
  REQUIRE_THROWS_WITH(work_at_risk(s, {{1.0}, 0.0}),
                      Catch::Contains("1 values for 3 jobs"));
  REQUIRE_THROWS_WITH(work_at_risk(s, {{1.0, -1.0, 0.0}, 0.0}),
                      Catch::Contains("job 'fresh'"));
  REQUIRE_THROWS_AS(work_at_risk(s, {{1.0, std::nan(""), 0.0}, 0.0}),
                    std::invalid_argument);
  REQUIRE_THROWS_WITH(work_at_risk(s, {{}, -1.0}), Catch::Contains("restart overhead"));
  REQUIRE_THROWS_AS(reclaim(s, 1, ReclaimPolicy::least_work, 0, WorkAtRisk{{1.0}, 0.0}),
                    std::invalid_argument);
  REQUIRE(parse_reclaim_policy("least-work") == ReclaimPolicy::least_work);
  REQUIRE(parse_reclaim_policy("exact-work") == ReclaimPolicy::exact_work);
  REQUIRE_THROWS_WITH(parse_reclaim_policy("least_work"),
                      Catch::Contains("least-work, exact-work"));
}

TEST_CASE("least-work: a scale-in costs nothing, however much work the job holds",
          "[reclaim][least-work]") {
  ClusterState s;
  const int t = add_server(s, "train", false);
  const int busy = add_server(s, "busy");
  const int flex = add_server(s, "flex");
  const int small = add_job(s, "small", 1, 1, 1);
  const int elastic = add_job(s, "elastic", 2, 2, 5);
  s.jobs[at(elastic)].hetero = true;
  place(s, small, busy, 1);
  place(s, elastic, t, 2);     // base on training
  place(s, elastic, flex, 3);  // flexible on loan
  validate(s);
  // The elastic job holds a week of unsaved work; the small one a second, and a
  // checkpoint: its restart costs 63 GPU-seconds. The scale-in still goes first.
  const WorkAtRisk work{{1.0, 7 * 86400.0 * 10}, 63.0};
  const ReclaimPlan one = reclaim(s, 1, ReclaimPolicy::least_work, 0, work);
  REQUIRE_THAT(one.servers, Equals(std::vector<int>{flex}));
  REQUIRE(one.preempted.empty());
  REQUIRE(one.scaled_in == std::vector<std::pair<int, int>>{{elastic, 3}});
  REQUIRE(one.work_lost == 0.0);
  const ReclaimPlan two = reclaim(s, 2, ReclaimPolicy::least_work, 0, work);
  REQUIRE_THAT(two.servers, Equals(std::vector<int>{flex, busy}));
  REQUIRE_THAT(two.preempted, Equals(std::vector<int>{small}));
  REQUIRE(two.work_lost == 1.0 + 63.0);
}

TEST_CASE("least-work spares a job with much unsaved progress over a fresh one",
          "[reclaim][least-work]") {
  ClusterState s;
  const int a = add_server(s, "a");
  const int b = add_server(s, "b");
  const int old = add_job(s, "old", 8, 1, 1);
  const int fresh = add_job(s, "fresh", 8, 1, 1);
  s.jobs[at(old)].checkpoint = false;
  s.jobs[at(fresh)].checkpoint = false;
  place(s, old, a, 1);  // input order favours returning a
  place(s, fresh, b, 1);
  validate(s);
  const WorkAtRisk work{{8 * 20000.0, 8 * 60.0}, 63.0};
  // Algorithm 1 sees two equal servers (one job each) and takes the first.
  REQUIRE_THAT(reclaim(s, 1, ReclaimPolicy::aryl, 0, work).servers,
               Equals(std::vector<int>{a}));
  REQUIRE(reclaim(s, 1, ReclaimPolicy::aryl, 0, work).work_lost == 8 * 20000.0);
  const ReclaimPlan plan = reclaim(s, 1, ReclaimPolicy::least_work, 0, work);
  REQUIRE_THAT(plan.servers, Equals(std::vector<int>{b}));
  REQUIRE_THAT(plan.preempted, Equals(std::vector<int>{fresh}));
  REQUIRE(plan.work_lost == 8 * 60.0);
  REQUIRE_THAT(reclaim(s, 1, ReclaimPolicy::exact_work, 0, work).servers,
               Equals(std::vector<int>{b}));
  SECTION("with a checkpoint the old job loses only its restart") {
    s.jobs[at(old)].checkpoint = true;
    const WorkAtRisk saved{{0.0, 8 * 60.0}, 63.0};  // 8 x 63 > 8 x 60
    REQUIRE_THAT(reclaim(s, 1, ReclaimPolicy::least_work, 0, saved).servers,
                 Equals(std::vector<int>{b}));
    const WorkAtRisk later{{0.0, 8 * 70.0}, 63.0};  // the fresh job has run 70 s
    REQUIRE_THAT(reclaim(s, 1, ReclaimPolicy::least_work, 0, later).servers,
                 Equals(std::vector<int>{a}));
  }
  SECTION("ties go to input order") {
    const WorkAtRisk tie{{100.0, 100.0}, 0.0};
    REQUIRE_THAT(reclaim(s, 1, ReclaimPolicy::least_work, 0, tie).servers,
                 Equals(std::vector<int>{a}));
    REQUIRE_THAT(reclaim(s, 1, ReclaimPolicy::exact_work, 0, tie).servers,
                 Equals(std::vector<int>{a}));
  }
}

TEST_CASE("least-work shares a job's work among the servers still to be returned",
          "[reclaim][least-work]") {
  ClusterState s;
  add_server(s, "a1");
  add_server(s, "a2");
  const int c = add_server(s, "c");
  const int a = add_job(s, "a", 8, 2, 2);
  const int b = add_job(s, "b", 8, 1, 1);
  place(s, a, 0, 1);
  place(s, a, 1, 1);
  place(s, b, c, 1);
  validate(s);
  // Two to return: a's 10 shared by its two servers (5 each) beats b's 6; the
  // second of a's servers then costs nothing: 10 lost, not 16.
  const WorkAtRisk work{{10.0, 6.0}, 0.0};
  const ReclaimPlan two = reclaim(s, 2, ReclaimPolicy::least_work, 0, work);
  REQUIRE_THAT(two.servers, Equals(std::vector<int>{0, 1}));
  REQUIRE(two.work_lost == 10.0);
  // One to return: no sharing on the last pick, b's 6 is less than a's 10.
  REQUIRE_THAT(reclaim(s, 1, ReclaimPolicy::least_work, 0, work).servers,
               Equals(std::vector<int>{c}));
}

TEST_CASE("exact-work matches brute force; least-work is near it and never below",
          "[reclaim][least-work]") {
  int cases = 0, optimal = 0, aryl_optimal = 0;
  double greedy_total = 0.0, best_total = 0.0, aryl_total = 0.0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const Instance x = random_instance(seed);
    const ClusterState& s = x.state;
    REQUIRE_NOTHROW(validate(s));
    const std::vector<double> risk = work_at_risk(s, x.work);
    const int loaned = static_cast<int>(s.servers.size()) - 2;
    for (int n = 1; n <= loaned; ++n) {
      INFO("seed " << seed << " n " << n);
      const double best = brute_force_min_work(s, n, risk);
      const ReclaimPlan exact = reclaim(s, n, ReclaimPolicy::exact_work, 0, x.work);
      REQUIRE(exact.servers.size() == at(n));
      REQUIRE(same(exact.work_lost, best));
      const ReclaimPlan greedy = reclaim(s, n, ReclaimPolicy::least_work, 0, x.work);
      REQUIRE(std::set<int>(greedy.servers.begin(), greedy.servers.end()).size() ==
              at(n));
      REQUIRE((greedy.work_lost > best || same(greedy.work_lost, best)));
      if (n == 1) REQUIRE(same(greedy.work_lost, best));  // the last pick is exact
      for (ReclaimPolicy p : {ReclaimPolicy::aryl, ReclaimPolicy::scf,
                              ReclaimPolicy::random, ReclaimPolicy::exact}) {
        const double lost = reclaim(s, n, p, seed, x.work).work_lost;
        REQUIRE((lost > best || same(lost, best)));
      }
      const double aryl_lost = reclaim(s, n, ReclaimPolicy::aryl, 0, x.work).work_lost;
      ++cases;
      optimal += same(greedy.work_lost, best) ? 1 : 0;
      aryl_optimal += same(aryl_lost, best) ? 1 : 0;
      greedy_total += greedy.work_lost;
      best_total += best;
      aryl_total += aryl_lost;
    }
  }
  WARN("least-work optimal in "
       << optimal << " of " << cases << " reclaims (aryl: " << aryl_optimal
       << "); work lost over all: least-work " << greedy_total << ", aryl "
       << aryl_total << ", optimum " << best_total);
  // The greedy is a heuristic: it must lose less work than Algorithm 1 overall
  // and be optimal in most reclaims (measured: see the WARN line above).
  REQUIRE(greedy_total < aryl_total);
  REQUIRE(optimal > aryl_optimal);
  REQUIRE(optimal * 4 >= cases * 3);
}

TEST_CASE("exact-work refuses instances beyond its limit", "[reclaim][least-work]") {
  ClusterState s;
  for (int i = 0; i < 60; ++i) {
    const int srv = add_server(s, "s" + std::to_string(i));
    place(s, add_job(s, "j" + std::to_string(i), 8, 1, 1), srv, 1);
  }
  REQUIRE_THROWS_WITH(reclaim(s, 30, ReclaimPolicy::exact_work),
                      Catch::Contains("exact-work reclaim would search") &&
                          Catch::Contains("least-work"));
  REQUIRE(reclaim(s, 2, ReclaimPolicy::exact_work).preempted.size() == 2);
}
