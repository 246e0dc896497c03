#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "aryl/goodput.hpp"
#include "aryl/pollux.hpp"
#include "aryl/rng.hpp"

using namespace aryl;
using Catch::Matchers::Contains;

namespace {

const PerfParams perf_params{0.1, 0.01, 0.2, 0.02, 0.05, 0.005, 1.0};

GoodputModel model(double sqr, double var) {
  return {perf_params, {sqr, var}, {100, 4000, 1, 100}};
}

// A random round: jobs with and without models, some holding a valid allocation.
std::vector<PolluxJob> random_jobs(Rng& rng, const std::vector<int>& node_gpus,
                                   int count) {
  std::vector<PolluxJob> jobs;
  std::vector<int> free = node_gpus;
  for (int j = 0; j < count; ++j) {
    PolluxJob job;
    job.key = 10 * j + 3;
    if (rng.uniform() < 0.7) job.model = model(1.0, 1.0 + 20.0 * rng.uniform());
    job.max_replicas = 1 + static_cast<int>(rng.below(24));
    job.attained_service = static_cast<double>(rng.below(5)) * 1000.0;
    job.submit_time = static_cast<double>(rng.below(1000));
    job.age = static_cast<double>(rng.below(3000));
    job.num_restarts = static_cast<int>(rng.below(4));
    const auto n = static_cast<std::size_t>(rng.below(node_gpus.size()));
    if (rng.uniform() < 0.5 && free[n] > 0) {  // one node: never distributed
      job.current.assign(node_gpus.size(), 0);
      job.current[n] = std::min(free[n], job.max_replicas);
      free[n] -= job.current[n];
    }
    jobs.push_back(job);
  }
  return jobs;
}

// Three jobs on two 2-GPU nodes, the first holding both GPUs of node 0.
std::vector<PolluxJob> tiny_jobs() {
  std::vector<PolluxJob> jobs(3);
  for (int j = 0; j < 3; ++j) {
    jobs[j].key = j;
    jobs[j].max_replicas = 3;
    jobs[j].age = 600.0 * (j + 1);
    jobs[j].attained_service = j;
  }
  jobs[0].model = model(1.0, 4.0);
  jobs[1].model = model(1.0, 40.0);
  jobs[0].current = {2, 0};
  return jobs;
}

// The best objective over every valid allocation of 0..2 replicas per cell.
double brute_force_best(const std::vector<PolluxJob>& jobs,
                        const std::vector<int>& node_gpus) {
  const std::size_t nodes = node_gpus.size(), cells = jobs.size() * nodes;
  double best = -1.0;
  std::vector<std::vector<int>> alloc(jobs.size(), std::vector<int>(nodes, 0));
  std::function<void(std::size_t)> walk = [&](std::size_t cell) {
    if (cell == cells) {
      try {
        check_pollux_allocation(jobs, node_gpus, alloc);  // minimums included
        best = std::max(best, pollux_objective(jobs, node_gpus, alloc));
      } catch (const std::invalid_argument&) {
      }
      return;
    }
    for (int v = 0; v <= 2; ++v) {
      alloc[cell / nodes][cell % nodes] = v;
      walk(cell + 1);
    }
  };
  walk(0);
  return best;
}

}  // namespace

TEST_CASE("every allocation the search returns is valid", "[pollux]") {
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    Rng rng(seed);
    const std::vector<int> node_gpus = {4, 4, 4, 4, 2, 4, 4, 0, 4, 4};
    PolluxOptions options;
    options.population = 30;
    options.generations = 15;
    options.max_nodes_per_job = 3;  // binds: caps reach 24 replicas
    options.seed = seed;
    PolluxPolicy policy(options);
    std::vector<PolluxJob> jobs =
        random_jobs(rng, node_gpus, 4 + static_cast<int>(seed) * 3);
    for (int round = 0; round < 3; ++round) {
      const auto out = policy.optimize(jobs, node_gpus);
      REQUIRE_NOTHROW(check_pollux_allocation(jobs, node_gpus, out, 3));
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        jobs[j].current = out[j];
        CHECK(out[j][7] == 0);  // the node without GPUs
      }
      if (jobs.size() > 2) jobs.erase(jobs.begin() + 1);  // a job completes
    }
  }
}

TEST_CASE("the search is deterministic for a seed", "[pollux]") {
  const std::vector<int> node_gpus(6, 4);
  const auto run = [&](std::uint64_t seed) {
    Rng rng(42);
    std::vector<PolluxJob> jobs = random_jobs(rng, node_gpus, 9);
    PolluxOptions options;
    options.population = 20;
    options.generations = 10;
    options.seed = seed;
    PolluxPolicy policy(options);
    std::vector<std::vector<std::vector<int>>> rounds;
    for (int r = 0; r < 3; ++r) {
      rounds.push_back(policy.optimize(jobs, node_gpus));
      for (std::size_t j = 0; j < jobs.size(); ++j) jobs[j].current = rounds.back()[j];
    }
    return rounds;
  };
  CHECK(run(7) == run(7));
  CHECK(run(0) == run(0));
}

TEST_CASE("the objective by hand", "[pollux]") {
  // 2 nodes x 2 GPUs, 2 jobs without a model: fair share 2 replicas, speedup =
  // replicas / 2, scaled by nodes / GPUs = 1/2.
  const std::vector<int> node_gpus = {2, 2};
  PolluxJob a, b;
  a.key = 1;
  a.max_replicas = 4;
  a.current = {2, 0};
  a.age = 120;
  b.key = 2;
  b.max_replicas = 4;
  b.age = 60;  // changes (starts): x max(60 - 0, 0) / (60 + 30) = 2/3
  const double sa = 1.0 * 0.5, sb = 0.5 * 0.5 * (2.0 / 3.0);
  const double expected = 2.0 / (1.0 / (sa + 1e-3) + 1.0 / (sb + 1e-3));
  CHECK(pollux_objective({a, b}, node_gpus, {{2, 0}, {0, 1}}) == Approx(expected));
  // Restarts count against the penalty: 3 restarts at age 60 leave nothing.
  b.num_restarts = 3;
  const double zero = 2.0 / (1.0 / (sa + 1e-3) + 1.0 / 1e-3);
  CHECK(pollux_objective({a, b}, node_gpus, {{2, 0}, {0, 1}}) == Approx(zero));
}

TEST_CASE("speedups come from the fitted model against the fair share", "[pollux]") {
  const GoodputModel m = model(1.0, 9.0);
  PolluxSpeedups speedups(m, 4, 4, 16);
  const double base = m.optimize(1, 4).goodput;
  CHECK(speedups(2, 8) == Approx(m.optimize(2, 8).goodput / base));
  CHECK(speedups(2, 8) == speedups(2, 8));  // cached
  CHECK(speedups(1, 4) == Approx(1.0));
  CHECK(speedups(0, 0) == 0.0);
  PolluxSpeedups none(std::nullopt, 4, 4, 16);
  CHECK(none(3, 6) == Approx(1.5));
}

TEST_CASE("the search finds the brute-force optimum on a tiny instance", "[pollux]") {
  const std::vector<int> node_gpus = {2, 2};
  const std::vector<PolluxJob> jobs = tiny_jobs();
  const double best = brute_force_best(jobs, node_gpus);
  PolluxPolicy policy;
  const auto out = policy.optimize(jobs, node_gpus);
  CHECK(pollux_objective(jobs, node_gpus, out) == Approx(best));
  CHECK(policy.last_objective() == Approx(best));
}

TEST_CASE("bad inputs are refused", "[pollux]") {
  PolluxPolicy policy;
  PolluxJob job;
  job.max_replicas = 2;
  CHECK_THROWS_WITH(policy.optimize({job}, {4, -1}), Contains("node 1"));
  CHECK_THROWS_WITH(policy.optimize({job, job}, {4}), Contains("duplicate key"));
  job.current = {1, 0, 0};
  CHECK_THROWS_WITH(policy.optimize({job}, {4, 4}), Contains("entries"));
  job.current = {3, 0};
  CHECK_THROWS_WITH(policy.optimize({job}, {4, 4}), Contains("caps"));
  job.current = {};
  job.age = -1.0;
  CHECK_THROWS_WITH(policy.optimize({job}, {4}), Contains("age"));
  PolluxOptions options;
  options.population = 1;
  CHECK_THROWS_WITH(PolluxPolicy(options), Contains("population"));
  CHECK(policy.optimize({}, {4}).empty());
}

TEST_CASE("with minimums, every job runs on none or at least its minimum", "[pollux]") {
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    Rng rng(seed + 100);
    const std::vector<int> node_gpus = {4, 4, 4, 4, 2, 4, 4, 0, 4, 4};
    PolluxOptions options;
    options.population = 30;
    options.generations = 15;
    options.max_nodes_per_job = 3;
    options.seed = seed;
    PolluxPolicy policy(options);
    std::vector<PolluxJob> jobs =
        random_jobs(rng, node_gpus, 6 + static_cast<int>(seed) * 3);
    for (PolluxJob& job : jobs)  // mins up to the cap; current may be below one
      job.min_replicas = std::min(job.max_replicas, static_cast<int>(rng.below(7)));
    int ran_with_min = 0;
    for (int round = 0; round < 3; ++round) {
      const auto out = policy.optimize(jobs, node_gpus);
      // check_pollux_allocation checks the minimums too.
      REQUIRE_NOTHROW(check_pollux_allocation(jobs, node_gpus, out, 3));
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        const int replicas = std::accumulate(out[j].begin(), out[j].end(), 0);
        ran_with_min += replicas > 0 && jobs[j].min_replicas > 1;
        jobs[j].current = out[j];
      }
      if (jobs.size() > 2) jobs.erase(jobs.begin() + 1);
    }
    CHECK(ran_with_min > 0);  // the minimums do not just stop every such job
  }
}

TEST_CASE("a minimum makes a job wait", "[pollux]") {
  // One 4-GPU node, two unprofiled jobs that need 3 replicas each: one runs on
  // 3, the other waits. Without minimums both run (a stopped job costs the
  // power mean far more).
  std::vector<PolluxJob> jobs(2);
  for (int j = 0; j < 2; ++j) {
    jobs[j].key = j;
    jobs[j].max_replicas = 3;
    jobs[j].min_replicas = 3;
    jobs[j].age = 100.0;
  }
  PolluxPolicy policy;
  auto out = policy.optimize(jobs, {4});
  std::vector<int> got = {out[0][0], out[1][0]};
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<int>{0, 3});
  for (PolluxJob& job : jobs) job.min_replicas = 0;
  out = PolluxPolicy().optimize(jobs, {4});
  CHECK(out[0][0] > 0);
  CHECK(out[1][0] > 0);
}

TEST_CASE("with minimums, the search finds the brute-force optimum", "[pollux]") {
  const std::vector<int> node_gpus = {2, 2};
  std::vector<PolluxJob> jobs = tiny_jobs();
  jobs[1].min_replicas = 3;
  jobs[2].min_replicas = 2;
  const double best = brute_force_best(jobs, node_gpus);
  PolluxPolicy policy;
  const auto out = policy.optimize(jobs, node_gpus);
  REQUIRE_NOTHROW(check_pollux_allocation(jobs, node_gpus, out));
  CHECK(pollux_objective(jobs, node_gpus, out) == Approx(best));
}

TEST_CASE("bad minimums are refused, and nothing is kept of the call", "[pollux]") {
  PolluxOptions options;
  options.population = 10;
  options.generations = 3;
  PolluxPolicy policy(options), fresh(options);
  PolluxJob job;
  job.max_replicas = 4;
  job.min_replicas = 5;
  CHECK_THROWS_WITH(policy.optimize({job}, {4, 4}), Contains("min_replicas"));
  job.min_replicas = -1;
  CHECK_THROWS_WITH(policy.optimize({job}, {4, 4}), Contains("min_replicas"));
  job.max_replicas = 16;
  job.min_replicas = 9;  // more than the cluster's 8 GPUs
  CHECK_THROWS_WITH(policy.optimize({job}, {4, 4}), Contains("cluster GPUs"));
  job.min_replicas = 3;
  CHECK_THROWS_WITH(check_pollux_allocation({job}, {4, 4}, {{2, 0}}),
                    Contains("below its min_replicas"));
  job.current = {2, 0};  // a current allocation below the minimum is accepted
  CHECK(policy.optimize({job}, {4, 4}) == fresh.optimize({job}, {4, 4}));
}

// The sparse search (issue 22): threads, the goodput cache, the score it keeps.

namespace {

// Rounds of a policy on 40 jobs (enough for the search's threads) with
// minimums, on 24 nodes; each round's result becomes the next one's current.
std::vector<std::vector<std::vector<int>>> threaded_rounds(int threads,
                                                           std::uint64_t seed) {
  Rng rng(seed);
  const std::vector<int> node_gpus = {4, 4, 8, 4, 0, 4, 4, 4, 2, 4, 4, 4,
                                      4, 4, 4, 4, 4, 4, 8, 4, 4, 4, 4, 4};
  std::vector<PolluxJob> jobs = random_jobs(rng, node_gpus, 40);
  for (std::size_t j = 0; j < jobs.size(); j += 5)
    jobs[j].min_replicas = std::min(jobs[j].max_replicas, 5);
  PolluxOptions options;
  options.population = 24;
  options.generations = 12;
  options.max_nodes_per_job = 4;
  options.seed = seed;
  options.threads = threads;
  PolluxPolicy policy(options);
  std::vector<std::vector<std::vector<int>>> rounds;
  for (int r = 0; r < 4; ++r) {
    rounds.push_back(policy.optimize(jobs, node_gpus));
    const auto& out = rounds.back();
    REQUIRE_NOTHROW(check_pollux_allocation(jobs, node_gpus, out, 4));
    // The score the search kept for its best is the objective evaluated anew.
    CHECK(policy.last_objective() ==
          Approx(pollux_objective(jobs, node_gpus, out)).epsilon(1e-12));
    for (std::size_t j = 0; j < jobs.size(); ++j) jobs[j].current = out[j];
    jobs.erase(jobs.begin() + r);  // a job completes
  }
  return rounds;
}

}  // namespace

TEST_CASE("the search's result does not depend on its threads", "[pollux]") {
  for (const std::uint64_t seed : {1U, 2U}) {
    const auto one = threaded_rounds(1, seed);
    CHECK(threaded_rounds(2, seed) == one);
    CHECK(threaded_rounds(3, seed) == one);
  }
  CHECK(threaded_rounds(2, 1) != threaded_rounds(2, 2));
}

TEST_CASE("the goodput cache holds the model's values", "[pollux]") {
  const GoodputModel m = model(1.0, 7.0);
  const PolluxGoodputs table(m, 4, 12);
  for (int pass = 0; pass < 2; ++pass)  // computed, then kept
    for (int replicas = 1; replicas <= 12; ++replicas)
      for (int nodes = 1; nodes <= std::min(replicas, 4); ++nodes)
        CHECK(table(nodes, replicas) == m.optimize(nodes, replicas).goodput);
  CHECK_THROWS_AS(table(5, 12), std::invalid_argument);
  CHECK_THROWS_AS(table(1, 13), std::invalid_argument);
  CHECK_THROWS_AS(table(3, 2), std::invalid_argument);
  CHECK(table.serves(m, 4, 12));
  CHECK_FALSE(table.serves(model(1.0, 8.0), 4, 12));
  CHECK_FALSE(table.serves(m, 4, 11));
}

TEST_CASE("a job's goodputs kept across rounds follow its model", "[pollux]") {
  // Two rounds of one job: a new model in the second must be the one scored
  // (a kept table of the old model would score the same allocation higher).
  const std::vector<int> node_gpus = {4, 4};
  std::vector<PolluxJob> jobs(2);
  for (int j = 0; j < 2; ++j) {
    jobs[j].key = j;
    jobs[j].max_replicas = 8;
    jobs[j].age = 100.0;
    jobs[j].model = model(1.0, 30.0);
  }
  PolluxOptions options;
  options.population = 8;
  options.generations = 4;
  PolluxPolicy policy(options);
  auto out = policy.optimize(jobs, node_gpus);
  CHECK(policy.last_objective() ==
        Approx(pollux_objective(jobs, node_gpus, out)).epsilon(1e-12));
  jobs[1].model = model(1.0, 0.5);  // refitted: scales worse
  out = policy.optimize(jobs, node_gpus);
  CHECK(policy.last_objective() ==
        Approx(pollux_objective(jobs, node_gpus, out)).epsilon(1e-12));
}

TEST_CASE("the search reaches the dense search's objective", "[pollux]") {
  // One round from the current allocations, 60 x 30, on random instances: the
  // sparse search's best is at least 0.97 of the dense search's in each.
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    Rng rng(seed + 100);
    const std::vector<int> node_gpus(12, 4);
    const std::vector<PolluxJob> jobs = random_jobs(rng, node_gpus, 10);
    PolluxOptions options;
    options.population = 60;
    options.generations = 30;
    options.seed = seed;
    const PolluxRound dense = pollux_reference_round(jobs, node_gpus, options);
    REQUIRE_NOTHROW(check_pollux_allocation(jobs, node_gpus, dense.allocation));
    PolluxPolicy policy(options);
    policy.optimize(jobs, node_gpus);
    CHECK(policy.last_objective() >= 0.97 * dense.objective);
  }
}

TEST_CASE("threads must be at least one", "[pollux]") {
  PolluxOptions options;
  options.threads = 0;
  CHECK_THROWS_WITH(PolluxPolicy(options), Contains("threads >= 1"));
}
