#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <queue>
#include <tuple>
#include <vector>

#include "../../cpp/core/src/sim/events.hpp"
#include "aryl/rng.hpp"
#include "aryl/sim/simulator.hpp"
#include "fixtures.hpp"
#include "sim_fixtures.hpp"

using namespace aryl;
using namespace aryl::sim;
using aryl::test::add_server;
using aryl::test::config;
using aryl::test::sim_job;

TEST_CASE("paper: A(2..3, 100 s) and B(2..6, 20 s) average 62 s under aryl", "[sim]") {
  ClusterState c;
  add_server(c, "s", false);
  const std::vector<SimJob> jobs{sim_job("A", 1, 2, 3, 100), sim_job("B", 1, 2, 6, 20)};
  const Result r = simulate(c.servers, jobs, {}, config());
  REQUIRE(r.violations.empty());
  REQUIRE(r.finish_time(0) == Approx(100));
  REQUIRE(r.finish_time(1) == Approx(24));
  REQUIRE((r.finish_time(0) + r.finish_time(1)) / 2 == Approx(62));
  SECTION("without elasticity SJF runs B at 6 first; A waits for the next epoch") {
    const Result s = simulate(c.servers, jobs, {}, config(AllocationPolicy::sjf));
    REQUIRE(s.finish_time(1) == Approx(20));
    REQUIRE(s.start_time(0) == Approx(60));
    REQUIRE(s.finish_time(0) == Approx(160));
  }
}

TEST_CASE(
    "a preempted job restarts from zero, or from its checkpoint after the overhead",
    "[sim]") {
  ClusterState c;
  add_server(c, "train", false);
  add_server(c, "loan", true);
  const std::vector<LoadPoint> load{{0, 0.0},
                                    {300, 1.0}};  // lent at 0, wanted back at 300
  for (bool checkpoint : {false, true}) {
    const std::vector<SimJob> jobs{sim_job("Y", 8, 1, 1, 5000),
                                   sim_job("X", 8, 1, 1, 1000, 10, checkpoint)};
    const Result r = simulate(c.servers, jobs, load, config());
    REQUIRE(r.violations.empty());
    REQUIRE(r.start_time(1) ==
            Approx(60));  // on the loaned server, the training one is busy
    REQUIRE(r.preemptions(1) == 1);
    REQUIRE(r.reclaims == 1);
    // Y frees the training server at 5000; the next epoch is at 5040.
    if (checkpoint) {
      REQUIRE(r.work_lost(1) == Approx(0));
      REQUIRE(r.finish_time(1) == Approx(5040 + 63 + 760));
      REQUIRE(r.restart_gpu_seconds == Approx(63 * 8));  // 8 GPUs held, no progress
    } else {
      REQUIRE(r.work_lost(1) == Approx(240));
      REQUIRE(r.work_lost_gpu_seconds == Approx(240 * 8));
      REQUIRE(r.finish_time(1) == Approx(5040 + 1000));
      REQUIRE(r.restart_gpu_seconds == 0.0);
    }
    // The reclaim came at the load's rise (both at 300 s): never late.
    REQUIRE(r.inference_short_server_seconds == 0.0);
  }
}

TEST_CASE("a load that rises between loan decisions gets its server back late",
          "[sim]") {
  ClusterState c;
  add_server(c, "train", false);
  add_server(c, "loan", true);
  // Lent at 0; the load needs the server from 100 s, the next decision is at 300 s.
  const std::vector<LoadPoint> load{{0, 0.0}, {100, 1.0}};
  const Result r = simulate(c.servers, {sim_job("X", 8, 1, 1, 1000)}, load, config());
  REQUIRE(r.violations.empty());
  REQUIRE(r.reclaims == 1);
  REQUIRE(r.inference_short_server_seconds == Approx(200));  // one server, 100-300 s
  REQUIRE(r.loaned_capacity_seconds == Approx(300 * 8));
  REQUIRE(r.restart_gpu_seconds == 0.0);
}

TEST_CASE("a reclaim is met by scaling in the flexible group", "[sim]") {
  ClusterState c;
  add_server(c, "loan1", true);
  add_server(c, "loan2", true);
  const std::vector<LoadPoint> load{{0, 0.0}, {300, 0.5}};
  const std::vector<SimJob> jobs{sim_job("E", 1, 8, 16, 1000)};  // W = 16,000 worker-s
  Config cfg = config();
  const Result r = simulate(c.servers, jobs, load, cfg);
  REQUIRE(r.violations.empty());
  REQUIRE(r.preemptions(0) == 0);
  REQUIRE(r.scaling_ops(0) == 1);
  REQUIRE(r.servers_reclaimed == 1);
  REQUIRE(r.servers_reclaimed_free == 1);
  REQUIRE(r.finish_time(0) == Approx(300 + (16000 - 300 * 16) / 8.0));
  SECTION(
      "placed without preferences, the flexible workers may share the base's server") {
    cfg.placement = PlacementPolicy::bfd;
    const Result plain = simulate(c.servers, jobs, load, cfg);
    REQUIRE(plain.violations.empty());
  }
}

TEST_CASE("slower GPUs and mixed types slow a job down", "[sim]") {
  ClusterState c;
  add_server(c, "t4", true);
  const std::vector<LoadPoint> load{{0, 0.0}};
  Config cfg = config();
  cfg.gpu_speed["T4"] = 0.25;
  const Result r = simulate(c.servers, {sim_job("J", 8, 1, 1, 100)}, load, cfg);
  REQUIRE(r.finish_time(0) == Approx(400));
  REQUIRE(r.ran_on_inference(0) == 1);
  REQUIRE(r.ran_on_training(0) == 0);
}

TEST_CASE("progress reports the run's share done and its simulated time", "[sim]") {
  ClusterState c;
  add_server(c, "s", false);
  // B arrives at 1,000 s, after A has finished: the span of arrivals is 1,000 s.
  const std::vector<SimJob> jobs{sim_job("A", 1, 1, 1, 100),
                                 sim_job("B", 1, 1, 1, 50, 1000)};
  std::vector<std::pair<double, double>> calls;
  const Progress record = [&calls](double fraction, double now) {
    calls.emplace_back(fraction, now);
    return true;
  };
  const Result r = simulate(c.servers, jobs, {}, config(), record);
  REQUIRE(r.finish_time(1) > 1000);
  REQUIRE(!calls.empty());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto [fraction, now] = calls[i];
    if (i > 0) {
      REQUIRE(fraction >= calls[i - 1].first);
      REQUIRE(now >= calls[i - 1].second);
    }
    // half the time up to the last arrival, half the jobs finished (0, 1 or 2)
    const double arrived = std::min(1.0, now / 1000.0);
    const double finished = 2.0 * (fraction - 0.5 * arrived);
    REQUIRE(std::abs(finished * 2.0 - std::round(finished * 2.0)) < 1e-9);
  }
  REQUIRE(calls.back() == std::make_pair(1.0, r.finish_time(1)));
  SECTION("returning false stops the run where it was") {
    const Result stopped = simulate(c.servers, jobs, {}, config(),
                                    [](double, double now) { return now < 500.0; });
    REQUIRE(std::isnan(stopped.finish_time(1)));
  }
}

TEST_CASE("the same input gives the same result", "[sim]") {
  ClusterState c;
  for (int i = 0; i < 3; ++i) add_server(c, "t" + std::to_string(i), false);
  for (int i = 0; i < 3; ++i) add_server(c, "l" + std::to_string(i), true);
  std::vector<SimJob> jobs;
  Rng rng(5);
  for (int j = 0; j < 60; ++j)
    jobs.push_back(sim_job("j" + std::to_string(j), 1 << rng.below(4), 1,
                           1 + static_cast<int>(rng.below(3)),
                           60 + static_cast<double>(rng.below(5000)),
                           static_cast<double>(j * 97)));
  std::vector<LoadPoint> load;
  for (int k = 0; k < 40; ++k)
    load.push_back({k * 300.0, 0.5 + 0.5 * std::sin(k / 3.0)});
  Config cfg = config();
  cfg.reclaim = ReclaimPolicy::random;
  const Result a = simulate(c.servers, jobs, load, cfg);
  const Result b = simulate(c.servers, jobs, load, cfg);
  REQUIRE(a.violations.empty());
  REQUIRE(a.finish_time == b.finish_time);
  REQUIRE(a.preemptions == b.preemptions);
  REQUIRE(a.t == b.t);
}

TEST_CASE("invariants hold on random traces under every policy", "[sim]") {
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    const auto [c, jobs, load] = aryl::test::random_run(seed);
    for (AllocationPolicy p :
         {AllocationPolicy::aryl, AllocationPolicy::fifo, AllocationPolicy::sjf,
          AllocationPolicy::gandiva, AllocationPolicy::afs})
      for (ReclaimPolicy rp :
           {ReclaimPolicy::aryl, ReclaimPolicy::scf, ReclaimPolicy::random}) {
        INFO("seed " << seed << " policy " << static_cast<int>(p) << " reclaim "
                     << static_cast<int>(rp));
        Config cfg = config(p);
        cfg.reclaim = rp;
        cfg.scaling = seed % 2 ? Scaling::imperfect : Scaling::linear;
        const Result r = simulate(c.servers, jobs, load, cfg);
        REQUIRE(r.violations.empty());
        for (std::size_t j = 0; j < jobs.size(); ++j) {
          REQUIRE(std::isfinite(r.finish_time(j)));
          REQUIRE(r.finish_time(j) >= r.start_time(j));
          REQUIRE(r.start_time(j) >= jobs[j].job.submit_time);
        }
        REQUIRE(r.work_delivered == Approx(r.work_completed + r.work_lost_total));
      }
  }
}

TEST_CASE("bad simulation input is refused", "[sim]") {
  ClusterState c;
  add_server(c, "s", false);
  REQUIRE_THROWS_WITH(simulate(c.servers, {sim_job("big", 8, 2, 2, 10)}, {}, config()),
                      Catch::Contains("job 'big' can never run"));
  REQUIRE_THROWS_WITH(
      simulate(c.servers, {sim_job("a", 1, 1, 1, 10)}, {{0, 0.5}, {0, 0.2}}, config()),
      Catch::Contains("times must increase"));
  REQUIRE_THROWS_WITH(
      simulate(c.servers, {sim_job("a", 1, 1, 1, 10)}, {{0, 1.5}}, config()),
      Catch::Contains("load in [0, 1]"));
  SimJob curve = sim_job("c", 1, 1, 2, 10);
  curve.throughput = {1.0};
  REQUIRE_THROWS_WITH(simulate(c.servers, {curve}, {}, config()),
                      Catch::Contains("throughput has 1 values"));
}

TEST_CASE("the event queue pops what one heap of every event pops", "[sim]") {
  // Arrivals pushed in time order wait apart from the heap; the order must be the
  // one heap's (time, kind, sequence), arrivals pushed out of order included.
  Rng rng(2718);
  for (int instance = 0; instance < 200; ++instance) {
    EventQueue queue;
    std::priority_queue<Event, std::vector<Event>, std::greater<>> heap;
    std::uint64_t seq = 0;
    const auto push = [&](double time, Kind kind, int job) {
      queue.push(time, kind, job);
      heap.push({time, kind, seq++, job, 0});
    };
    double t = 0.0;
    for (int j = 0; j < 30; ++j) {  // mostly in time order, some ties, a few behind
      t += static_cast<double>(rng.below(3));
      push(rng.below(8) == 0 ? t - 2.0 : t, Kind::arrival, j);
    }
    while (!heap.empty()) {
      if (rng.below(3) == 0) {  // others arrive while popping, at or after the clock
        const double at = queue.now() + static_cast<double>(rng.below(4));
        push(at, static_cast<Kind>(rng.below(4)), -1);
      }
      REQUIRE_FALSE(queue.empty());
      const Event expected = heap.top();
      heap.pop();
      const Event got = queue.pop();
      REQUIRE(std::tie(got.time, got.kind, got.seq, got.job) ==
              std::tie(expected.time, expected.kind, expected.seq, expected.job));
      REQUIRE(queue.now() == got.time);
    }
    REQUIRE(queue.empty());
  }
}
