// The faithful model: real GPU speeds in every decision, duration anchored at
// the trace's worker count, the lend hold, and runs that always end.
#include <catch2/catch.hpp>

#include <cmath>

#include "aryl/schedule.hpp"
#include "aryl/sim/simulator.hpp"
#include "fixtures.hpp"

using namespace aryl;
using namespace aryl::sim;
using aryl::test::add_server;

namespace {

SimJob elastic(const std::string& id, int d, int lo, int hi, int reference,
               double duration) {
  Job j;
  j.id = id;
  j.gpus_per_worker = d;
  j.min_workers = lo;
  j.max_workers = hi;
  j.reference_workers = reference;
  j.duration = j.estimated_duration = duration;
  return {j, {}};
}

// 4 V100 training servers and 4 T4 inference servers, all lent (load 0).
ClusterState mixed_cluster() {
  ClusterState c;
  for (int i = 0; i < 4; ++i) add_server(c, "t" + std::to_string(i), false);
  for (int i = 0; i < 4; ++i) add_server(c, "i" + std::to_string(i), true);
  return c;
}

const std::vector<LoadPoint> idle_inference{{0.0, 0.0}};

Config audited() {
  Config c;
  c.audit = true;
  return c;
}

}  // namespace

TEST_CASE("an elastic job runs on the V100s, not on the slower loaned T4s", "[speed]") {
  const ClusterState c = mixed_cluster();
  // 2..4 workers of 8 GPUs, 10,000 s at 2: with 4 V100 workers it takes 5,000 s.
  const Result r =
      simulate(c.servers, {elastic("e", 8, 2, 4, 2, 10000)}, idle_inference, audited());
  REQUIRE(r.violations.empty());
  REQUIRE(r.finish_time(0) == Approx(5000));
  REQUIRE(r.ran_on_training(0) == 1);
  REQUIRE(r.ran_on_inference(0) == 0);
}

TEST_CASE(
    "when the V100s are full a job still runs on loaned T4s, at a quarter of the speed",
    "[speed]") {
  const ClusterState c = mixed_cluster();
  const std::vector<SimJob> jobs{elastic("big", 8, 4, 4, 4, 1000),
                                 elastic("any", 8, 1, 1, 1, 1000)};
  const Result r = simulate(c.servers, jobs, idle_inference, audited());
  REQUIRE(r.violations.empty());
  REQUIRE(r.finish_time(0) == Approx(1000));
  REQUIRE(r.ran_on_inference(1) == 1);
  REQUIRE(r.finish_time(1) == Approx(4000));
}

TEST_CASE("a hetero job adds T4 workers only when they shorten it", "[speed]") {
  ClusterState c;
  add_server(c, "t", false);
  for (int i = 0; i < 2; ++i) add_server(c, "i" + std::to_string(i), true);
  SimJob job =
      elastic("h", 8, 1, 2, 1, 1200);  // one V100 worker; a T4 worker could join
  job.job.hetero = true;
  Config cfg = audited();
  SECTION("at 70% efficiency, 2 x (1 + 1/4) / 2 x 0.7 = 0.875 < 1: it stays alone") {
    const Result r = simulate(c.servers, {job}, idle_inference, cfg);
    REQUIRE(r.finish_time(0) == Approx(1200));
    REQUIRE(r.ran_mixed(0) == 0);
  }
  SECTION("at 100% efficiency one T4 adds a quarter of a V100") {
    cfg.hetero_efficiency = 1.0;
    const Result r = simulate(c.servers, {job}, idle_inference, cfg);
    REQUIRE(r.ran_mixed(0) == 1);
    REQUIRE(r.finish_time(0) == Approx(1200 / 1.25));
  }
  SECTION("at 70% two T4s pay off (3 x 1.5 / 3 x 0.7 = 1.05), so it takes both") {
    job.job.max_workers = 3;
    const Result r = simulate(c.servers, {job}, idle_inference, cfg);
    REQUIRE(r.ran_mixed(0) == 1);
    REQUIRE(r.finish_time(0) == Approx(1200 / 1.05));
  }
}

TEST_CASE("the knapsack sees a slower worker's real value", "[speed]") {
  // Two elastic jobs running on one V100 worker each: job "v" can grow on
  // V100, job "t" runs on T4 and can grow there. Values are at real speed.
  ClusterState c = mixed_cluster();
  for (const auto& [id, server] : {std::pair{"v", 0}, std::pair{"t", 4}}) {
    Job j;
    j.id = id;
    j.gpus_per_worker = 8;
    j.min_workers = 1;
    j.max_workers = 2;
    j.duration = j.estimated_duration = 1000;
    c.jobs.push_back(j);
    c.workers.push_back({static_cast<int>(c.jobs.size()) - 1, server, false});
  }
  validate(c);
  ScheduleOptions options;
  for (const Server& s : c.servers)
    options.speed.push_back(s.gpu_type == "T4" ? 0.25 : 1.0);
  const Decision d = schedule(c, options);
  REQUIRE(d.allocation == std::vector<int>{2, 2});
  for (const Worker& w : d.start)
    REQUIRE(c.servers[static_cast<std::size_t>(w.server)].gpu_type ==
            c.servers[w.job == 0 ? 0u : 4u].gpu_type);
  REQUIRE(running_time(c.jobs[1], 1, 1.0, {}, 0.25) ==
          Approx(8000));  // 1,000 s at 2 workers
}

TEST_CASE("imperfect scaling is anchored at the trace's worker count", "[speed]") {
  ClusterState c;
  for (int i = 0; i < 2; ++i) add_server(c, "t" + std::to_string(i), false);
  // 4..8 workers of 2 GPUs, 1,000 s at 4; at 8, throughput 8 x (1 - 0.1 x 2) = 6.4.
  Config cfg = audited();
  cfg.scaling = Scaling::imperfect;
  const Result r = simulate(c.servers, {elastic("e", 2, 4, 8, 4, 1000)}, {}, cfg);
  REQUIRE(r.finish_time(0) == Approx(1000 * 4 / 6.4));
  cfg.scaling = Scaling::linear;
  REQUIRE(
      simulate(c.servers, {elastic("e", 2, 4, 8, 4, 1000)}, {}, cfg).finish_time(0) ==
      Approx(500));
  SECTION("an inelastic job runs exactly its duration either way") {
    cfg.scaling = Scaling::imperfect;
    REQUIRE(
        simulate(c.servers, {elastic("i", 2, 4, 4, 4, 1000)}, {}, cfg).finish_time(0) ==
        Approx(1000));
  }
}

TEST_CASE("the lend hold lends only servers the load has spared for the hold",
          "[speed]") {
  ClusterState c;
  add_server(c, "t", false);
  for (int i = 0; i < 4; ++i) add_server(c, "i" + std::to_string(i), true);
  // The load dips to 0 for 10 minutes every hour; a short job arrives hourly.
  std::vector<LoadPoint> load;
  for (int h = 0; h < 12; ++h) {
    load.push_back({h * 3600.0, 1.0});
    load.push_back({h * 3600.0 + 1800, 0.0});
    load.push_back({h * 3600.0 + 2400, 1.0});
  }
  std::vector<SimJob> jobs;
  for (int h = 0; h < 12; ++h) {
    SimJob j = elastic("j" + std::to_string(h), 8, 1, 1, 1, 300);
    j.job.submit_time = h * 3600.0 + 1800;
    jobs.push_back(j);
  }
  Config cfg = audited();
  cfg.lend_hold = 0.0;
  const Result eager = simulate(c.servers, jobs, load, cfg);
  cfg.lend_hold = 3600.0;
  const Result held = simulate(c.servers, jobs, load, cfg);
  REQUIRE(eager.violations.empty());
  REQUIRE(held.violations.empty());
  REQUIRE(eager.servers_reclaimed > 0);
  REQUIRE(held.servers_reclaimed == 0);
  REQUIRE(held.loaned_capacity_seconds == 0.0);
}

TEST_CASE("a job that only a short load dip could host ends the run unfinished",
          "[speed]") {
  ClusterState c;
  add_server(c, "t", false);
  for (int i = 0; i < 3; ++i) add_server(c, "i" + std::to_string(i), true);
  Job j;
  j.id = "wide";
  j.gpus_per_worker = 8;
  j.min_workers = j.max_workers = 3;
  j.duration = j.estimated_duration = 100;
  j.gpu_type = "T4";
  // Three T4 servers are spare only for 10 minutes, shorter than the hold.
  const std::vector<LoadPoint> load{{0, 0.9}, {600, 0.0}, {1200, 0.9}};
  const Result r = simulate(c.servers, {{j, {}}}, load, audited());
  REQUIRE(std::isnan(r.finish_time(0)));
  REQUIRE(r.end_time < 10 * 3600);
  SECTION("and so does one the load never spares (it would run, were they lent)") {
    const std::vector<LoadPoint> busy{{0, 0.9}};
    const Result never = simulate(c.servers, {{j, {}}}, busy, audited());
    REQUIRE(std::isnan(never.finish_time(0)));
  }
  SECTION("one that fits nowhere, every inference server lent, is refused") {
    j.min_workers = j.max_workers = 4;
    REQUIRE_THROWS_WITH(simulate(c.servers, {{j, {}}}, load, audited()),
                        Catch::Contains("job 'wide' can never run"));
  }
}

TEST_CASE("a queued job takes a slower GPU only if it finishes sooner than by waiting",
          "[speed]") {
  // One V100 server busy for another 100 s; two loaned T4 servers free.
  ClusterState c;
  add_server(c, "v", false);
  add_server(c, "t1", true);
  add_server(c, "t2", true);
  const auto job = [&](const std::string& id, double duration) {
    Job j;
    j.id = id;
    j.gpus_per_worker = 8;
    j.duration = j.estimated_duration = duration;
    c.jobs.push_back(j);
  };
  job("running", 100);
  c.workers.push_back({0, 0, false});
  job("short", 10);    // 40 s on a T4 beats 100 s of waiting + 10 s
  job("long", 10000);  // 40,000 s on a T4 loses to 100 s of waiting + 10,000 s
  validate(c);
  ScheduleOptions options;
  options.speed = {1.0, 0.25, 0.25};
  const Decision d = schedule(c, options);
  REQUIRE(d.allocation == std::vector<int>{1, 1, 0});
  REQUIRE(d.pending == std::vector<int>{2});
  REQUIRE(d.start.size() == 1);
  REQUIRE(d.start[0].server == 1);
  SECTION("at equal speeds both start at once") {
    options.speed = {1.0, 1.0, 1.0};
    REQUIRE(schedule(c, options).allocation == std::vector<int>{1, 1, 1});
  }
}

TEST_CASE("a server lent after the epochs stopped still wakes the scheduler",
          "[speed]") {
  // Nothing runs and nothing arrives once "early" is done; the load then drops
  // and servers are lent well after the last load change: "t4" must still run.
  ClusterState c;
  for (int i = 0; i < 3; ++i) add_server(c, "t" + std::to_string(i), false);
  for (int i = 0; i < 2; ++i) add_server(c, "i" + std::to_string(i), true);
  Job early;
  early.id = "early";
  early.duration = early.estimated_duration = 100;
  Job t4;
  t4.id = "t4";
  t4.gpus_per_worker = 2;
  t4.min_workers = 3;
  t4.max_workers = 4;
  t4.duration = t4.estimated_duration = 2534;
  t4.submit_time = 10;
  t4.gpu_type = "T4";
  const std::vector<LoadPoint> load{{0, 0.9}, {4072.3, 1e-9}};
  const Result r = simulate(c.servers, {{early, {}}, {t4, {}}}, load, audited());
  REQUIRE(r.violations.empty());
  REQUIRE(std::isfinite(r.finish_time(1)));
  REQUIRE(r.start_time(1) >= 4072.3 + 3600);  // lent once the hold has passed
}

TEST_CASE("a run that would need more than max_steps epochs is refused up front",
          "[speed]") {
  ClusterState c;
  add_server(c, "t", false);
  SimJob job = elastic("long", 8, 1, 1, 1, 1e12);
  REQUIRE_THROWS_WITH(simulate(c.servers, {job}, {}, audited()),
                      Catch::Contains("would span at least"));
  Config tiny = audited();
  tiny.schedule_interval = 1e-300;
  job.job.duration = job.job.estimated_duration = 10;
  REQUIRE_THROWS_WITH(simulate(c.servers, {job}, {}, tiny),
                      Catch::Contains("schedule_interval"));
  tiny.horizon = 1e-294;  // a horizon bounds the span
  REQUIRE_NOTHROW(simulate(c.servers, {job}, {}, tiny));
}
