// A caller's policy through the simulator's hooks: the built-in kernels asked
// through them give the built-in runs bit for bit; bad answers are refused
// whole, naming the epoch and the job; a policy may preempt, reclaim and reject.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "aryl/reclaim.hpp"
#include "aryl/schedule.hpp"
#include "aryl/sim/simulator.hpp"
#include "fixtures.hpp"
#include "sim_fixtures.hpp"

using namespace aryl;
using namespace aryl::sim;
using aryl::test::add_server;
using aryl::test::config;
using aryl::test::sim_job;

namespace {

// The kernel the engine runs itself, asked through the hook as a caller would.
Hooks kernel_hooks(const Config& cfg, bool with_reclaim) {
  Hooks hooks;
  hooks.allocate = [cfg](const ClusterState& state, const std::vector<int>&,
                         const std::vector<double>& remaining,
                         const std::vector<std::vector<double>>& throughput,
                         const JobService&, const Epoch&) {
    ScheduleOptions options;
    options.policy = cfg.policy;
    options.placement = cfg.placement;
    options.hetero_efficiency = cfg.hetero_efficiency;
    options.remaining = remaining;
    options.throughput = throughput;
    for (const Server& s : state.servers)
      options.speed.push_back(
          cfg.gpu_speed.count(s.gpu_type) ? cfg.gpu_speed.at(s.gpu_type) : 1.0);
    return schedule(state, options);
  };
  if (with_reclaim)
    hooks.reclaim = [cfg](const ClusterState& state, const std::vector<int>&,
                          const JobService&, int n, const Epoch&) {
      return reclaim(state, n, cfg.reclaim).servers;
    };
  return hooks;
}

// An allocate hook that starts `start` at every epoch, whatever the state.
Hooks starting(std::vector<Worker> start) {
  Hooks hooks;
  hooks.allocate = [start](const ClusterState&, const std::vector<int>&,
                           const std::vector<double>&,
                           const std::vector<std::vector<double>>&, const JobService&,
                           const Epoch&) {
    Decision d;
    d.start = start;
    return d;
  };
  return hooks;
}

ClusterState two_servers() {
  ClusterState c;
  add_server(c, "t0", false);
  add_server(c, "t1", false);
  return c;
}

}  // namespace

TEST_CASE("the kernels asked through the hooks give the built-in runs",
          "[sim][hooks]") {
  for (std::uint64_t seed = 0; seed < 8; ++seed)
    for (const AllocationPolicy p : {AllocationPolicy::aryl, AllocationPolicy::afs}) {
      INFO("seed " << seed << " policy " << static_cast<int>(p));
      const auto [c, jobs, load] = aryl::test::random_run(seed);
      Config cfg = config(p);
      cfg.scaling = seed % 2 ? Scaling::imperfect : Scaling::linear;
      cfg.history = true;
      const Result built_in = simulate(c.servers, jobs, load, cfg);
      const Result asked = simulate(c.servers, jobs, load, cfg, {}, {},
                                    kernel_hooks(cfg, seed % 3 == 0));
      aryl::test::require_same_run(built_in, asked);
      REQUIRE(built_in.history.closed == asked.history.closed);
    }
}

TEST_CASE("a decision that over-commits or leaves a job below its minimum is refused",
          "[sim][hooks]") {
  const ClusterState c = two_servers();
  const std::vector<SimJob> jobs{sim_job("A", 4, 2, 2, 100), sim_job("B", 8, 1, 1, 50)};
  SECTION("over-commit") {
    const Hooks hooks =
        starting({{0, 0, false}, {0, 0, false}, {1, 0, false}});  // 16 GPUs on t0
    REQUIRE_THROWS_WITH(
        simulate(c.servers, jobs, {}, config(), {}, {}, hooks),
        Catch::Contains("epoch 0 (t = 0 s): the policy's decision over-commits "
                        "server 't0': job 'B'"));
  }
  SECTION("below min_workers") {
    const Hooks hooks = starting({{0, 0, false}});
    REQUIRE_THROWS_WITH(simulate(c.servers, jobs, {}, config(), {}, {}, hooks),
                        Catch::Contains("leaves job 'A' with 1 workers, outside "
                                        "[min_workers 2, max_workers 2]"));
  }
  SECTION("an unknown worker or job") {
    const Hooks hooks = starting({{5, 0, false}});
    REQUIRE_THROWS_WITH(
        simulate(c.servers, jobs, {}, config(), {}, {}, hooks),
        Catch::Contains("starts a worker of job 5, but the state has 2"));
  }
}

TEST_CASE("a policy that stops a job's workers sends it back to the queue",
          "[sim][hooks]") {
  // A (checkpointed) starts at 0; at the epoch after B's arrival (60 s) the policy
  // stops A and starts B on both servers; A starts again when B is done.
  const ClusterState c = two_servers();
  const std::vector<SimJob> jobs{sim_job("A", 8, 1, 1, 100, 0, true),
                                 sim_job("B", 8, 2, 2, 50, 30)};
  Hooks hooks;
  hooks.allocate = [](const ClusterState& state, const std::vector<int>& job_of,
                      const std::vector<double>&,
                      const std::vector<std::vector<double>>&, const JobService&,
                      const Epoch&) {
    Decision d;
    const bool b_waits = job_of.size() == 2;
    for (std::size_t i = 0; i < job_of.size(); ++i) {
      const bool runs = std::any_of(state.workers.begin(), state.workers.end(),
                                    [&](const Worker& w) { return w.job == int(i); });
      if (job_of[i] == 1 && !runs) d.start = {{int(i), 0, false}, {int(i), 1, false}};
      if (job_of[i] == 0 && !b_waits && !runs) d.start = {{int(i), 0, false}};
    }
    if (b_waits && !state.workers.empty() && job_of[0] == 0) d.stop = {0};
    return d;
  };
  Config cfg = config();
  cfg.restart_overhead = 10;
  cfg.history = true;
  const Result r = simulate(c.servers, jobs, {}, cfg, {}, {}, hooks);
  REQUIRE(r.violations.empty());
  REQUIRE(r.preemptions(0) == 1);
  REQUIRE(r.start_time(1) == 60.0);
  REQUIRE(r.finish_time(1) == 110.0);
  // A ran 60 s, then its 40 s left after a 10-s restart at the epoch at 120 s.
  REQUIRE(r.finish_time(0) == Approx(170.0));
  REQUIRE(r.work_delivered == Approx(r.work_completed + r.work_lost_total));
  REQUIRE(std::count(r.history.closed.begin(), r.history.closed.end(),
                     static_cast<std::uint8_t>(Change::preemption)) == 1);
}

TEST_CASE("a reclaim hook's servers are checked and applied", "[sim][hooks]") {
  const auto [c, jobs, load] = aryl::test::random_run(3);
  Config cfg = config();
  cfg.lend_hold = 0;
  Hooks hooks;
  SECTION("too few servers") {
    hooks.reclaim = [](const ClusterState&, const std::vector<int>&, const JobService&,
                       int n,
                       const Epoch&) { return std::vector<int>(n > 1 ? 1 : 0, 4); };
    REQUIRE_THROWS_WITH(simulate(c.servers, jobs, load, cfg, {}, {}, hooks),
                        Catch::Contains("the policy's reclaim returns"));
  }
  SECTION("a server not on loan") {
    hooks.reclaim = [](const ClusterState&, const std::vector<int>&, const JobService&,
                       int n, const Epoch&) { return std::vector<int>(n, 0); };
    REQUIRE_THROWS_WITH(simulate(c.servers, jobs, load, cfg, {}, {}, hooks),
                        Catch::Contains("reclaim: server 't0' is not on loan"));
  }
  SECTION("the last servers lent go back first") {
    hooks.reclaim = [](const ClusterState& state, const std::vector<int>&,
                       const JobService&, int n, const Epoch&) {
      std::vector<int> out;
      for (std::size_t s = state.servers.size(); s-- > 0 && n > 0;)
        if (state.servers[s].on_loan) {
          out.push_back(static_cast<int>(s));
          --n;
        }
      return out;
    };
    const Result r = simulate(c.servers, jobs, load, cfg, {}, {}, hooks);
    REQUIRE(r.violations.empty());
    REQUIRE(r.reclaims > 0);
    for (std::size_t j = 0; j < jobs.size(); ++j)
      REQUIRE(std::isfinite(r.finish_time(j)));
  }
}

TEST_CASE("an admit hook rejects jobs: they never run", "[sim][hooks]") {
  const auto [c, jobs, load] = aryl::test::random_run(4);
  Hooks hooks;
  std::vector<int> asked;
  hooks.admit = [&asked](int j, const Epoch&) {
    asked.push_back(j);
    return j % 3 != 0;
  };
  const Result r = simulate(c.servers, jobs, load, config(), {}, {}, hooks);
  REQUIRE(r.violations.empty());
  REQUIRE(asked.size() == jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    REQUIRE(r.rejected(j) == (j % 3 == 0 ? 1 : 0));
    REQUIRE(std::isfinite(r.finish_time(j)) == (j % 3 != 0));
    if (j % 3 == 0) REQUIRE(std::isnan(r.start_time(j)));
  }
}
