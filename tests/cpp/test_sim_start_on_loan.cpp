// Config::start_on_loan: a job that would wait for its fastest GPU type starts
// on loaned slower GPUs and moves to its type once that frees and the move pays.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "aryl/sim/simulator.hpp"
#include "fixtures.hpp"
#include "sim_fixtures.hpp"

using namespace aryl;
using namespace aryl::sim;
using aryl::test::add_server;
using aryl::test::sim_job;

namespace {

// One V100 training server and one T4 inference server lent from t = 0, T4 at a
// quarter of a V100; Y holds the V100 until 1000 s, X (1,000 s on a V100)
// arrives at 10 s. Epochs every 60 s.
struct TwoServers {
  ClusterState cluster;
  std::vector<LoadPoint> load{{0, 0.0}};
  Config config = aryl::test::config();
  TwoServers() {
    add_server(cluster, "train", false);
    add_server(cluster, "loan", true);
    config.gpu_speed["T4"] = 0.25;
    config.lend_hold = 0.0;
    config.history = true;
  }
};

const std::vector<SimJob> y_then_x{sim_job("Y", 8, 1, 1, 1000),
                                   sim_job("X", 8, 1, 1, 1000, 10)};

}  // namespace

TEST_CASE("off, a job waits for its fast GPU type rather than run on a slow loan",
          "[sim][start_on_loan]") {
  TwoServers run;
  const Result r = simulate(run.cluster.servers, y_then_x, run.load, run.config);
  REQUIRE(r.violations.empty());
  // 940 s of wait + 1,000 s beats 4,000 s on the T4: X starts at the epoch after Y.
  REQUIRE(r.start_time(1) == Approx(1020));
  REQUIRE(r.finish_time(1) == Approx(2020));
  REQUIRE(r.ran_on_inference(1) == 0);
}

TEST_CASE("on, a job starts on loan and moves when its type frees",
          "[sim][start_on_loan]") {
  TwoServers run;
  run.config.start_on_loan = true;
  const Result r = simulate(run.cluster.servers, y_then_x, run.load, run.config);
  REQUIRE(r.violations.empty());
  REQUIRE(r.start_time(1) == Approx(60));  // on the T4 at the first epoch
  REQUIRE(r.ran_on_inference(1) == 1);
  REQUIRE(r.ran_on_training(1) == 1);
  REQUIRE(r.preemptions(1) == 0);
  REQUIRE(r.scaling_ops(1) == 1);  // the move, as the history counts it
  // 960 s on the T4 did 960 x 0.25 = 240 s of V100 work; at 1020 s it moves,
  // pays 63 s and runs the 760 s left at V100 speed.
  REQUIRE(r.finish_time(1) == Approx(1020 + 63 + 760));
  REQUIRE(r.restart_gpu_seconds == Approx(63 * 8));
  REQUIRE(r.work_delivered == Approx(r.work_completed + r.work_lost_total));
  // Its history: on the T4 from 60 s, moved to the V100 at 1020 s.
  const History& h = r.history;
  std::vector<std::size_t> rows;
  for (std::size_t k = 0; k < h.job.size(); ++k)
    if (h.job[k] == 1) rows.push_back(k);
  REQUIRE(rows.size() == 2);
  REQUIRE(h.server[rows[0]] == 1);
  REQUIRE(h.start[rows[0]] == Approx(60));
  REQUIRE(h.closed[rows[0]] == static_cast<std::uint8_t>(Change::move));
  REQUIRE(h.server[rows[1]] == 0);
  REQUIRE(h.start[rows[1]] == Approx(1020));
  REQUIRE(h.opened[rows[1]] == static_cast<std::uint8_t>(Change::move));

  SECTION("a move that does not pay is not made") {
    run.config.restart_overhead = 5000;  // 760 + 5,000 s > 3,040 s left on the T4
    const Result s = simulate(run.cluster.servers, y_then_x, run.load, run.config);
    REQUIRE(s.violations.empty());
    REQUIRE(s.finish_time(1) == Approx(60 + 4000));
    REQUIRE(s.ran_on_training(1) == 0);
  }
}

TEST_CASE("movers and queued jobs take freed GPUs shortest first",
          "[sim][start_on_loan]") {
  TwoServers run;
  run.config.start_on_loan = true;
  SECTION("a shorter queued job takes the V100 first; the mover moves after it") {
    std::vector<SimJob> jobs = y_then_x;
    jobs.push_back(sim_job("Z", 8, 1, 1, 100, 500));
    const Result r = simulate(run.cluster.servers, jobs, run.load, run.config);
    REQUIRE(r.violations.empty());
    REQUIRE(r.start_time(2) == Approx(1020));  // Z (100 s) before X (760 s left)
    REQUIRE(r.ran_on_inference(2) == 0);
    // Z ends at 1120; at 1140 X has done 240 + 120 x 0.25 = 270 s and moves.
    REQUIRE(r.finish_time(1) == Approx(1140 + 63 + 730));
  }
  SECTION("a mover ahead of a queued job frees its loaned server for it") {
    std::vector<SimJob> jobs = y_then_x;
    jobs.push_back(sim_job("Z", 8, 1, 1, 2000, 500));
    const Result r = simulate(run.cluster.servers, jobs, run.load, run.config);
    REQUIRE(r.violations.empty());
    REQUIRE(r.finish_time(1) == Approx(1020 + 63 + 760));
    REQUIRE(r.start_time(2) == Approx(1020));  // on the T4 X left
    REQUIRE(r.ran_on_inference(2) == 1);
    // X ends at 1843; at 1860 Z has done 840 x 0.25 = 210 s and moves.
    REQUIRE(r.finish_time(2) == Approx(1860 + 63 + 1790));
  }
}

TEST_CASE("a moved elastic job's workers on loan stop with it",
          "[sim][start_on_loan]") {
  TwoServers run;
  run.config.start_on_loan = true;
  add_server(run.cluster, "train1", false);
  add_server(run.cluster, "loan1", true);
  // Y1 and Y2 hold both V100 servers until 1000 s; E (1..2 workers) starts on the
  // two T4 servers and moves to the V100 servers at 1020 s, not half of it.
  const std::vector<SimJob> jobs{sim_job("Y1", 8, 1, 1, 1000),
                                 sim_job("Y2", 8, 1, 1, 1000),
                                 sim_job("E", 8, 1, 2, 2000, 10)};
  const Result r = simulate(run.cluster.servers, jobs, run.load, run.config);
  REQUIRE(r.violations.empty());
  REQUIRE(r.ran_mixed(2) == 0);
  const History& h = r.history;
  std::vector<std::int64_t> last;  // E's servers in its last interval
  for (std::size_t k = 0; k < h.job.size(); ++k)
    if (h.job[k] == 2 && h.start[k] >= 1020) last.push_back(h.server[k]);
  std::sort(last.begin(), last.end());
  REQUIRE(last == std::vector<std::int64_t>{0, 2});  // train, train1
}

TEST_CASE("a job moves only if it beats all the workers it holds on loan",
          "[sim][start_on_loan]") {
  TwoServers run;
  run.config.start_on_loan = true;
  for (const char* id : {"loan1", "loan2", "loan3"}) add_server(run.cluster, id, true);
  // E (1..4 workers) grows onto the four T4 servers: 4 x 0.25 = one V100. At 1020 s
  // the V100 frees, but one V100 worker plus the overhead would not beat that.
  const std::vector<SimJob> jobs{sim_job("Y", 8, 1, 1, 1000),
                                 sim_job("E", 8, 1, 4, 2000, 10)};
  const Result r = simulate(run.cluster.servers, jobs, run.load, run.config);
  REQUIRE(r.violations.empty());
  REQUIRE(r.start_time(1) == Approx(60));
  REQUIRE(r.ran_on_training(1) == 0);
}

TEST_CASE("a reclaim still preempts a job started on loan", "[sim][start_on_loan]") {
  TwoServers run;
  run.config.start_on_loan = true;
  run.load = {{0, 0.0}, {300, 1.0}};  // the T4 is wanted back at 300 s
  std::vector<SimJob> jobs{sim_job("Y", 8, 1, 1, 1000),
                           sim_job("X", 8, 1, 1, 1000, 10, true)};
  const Result r = simulate(run.cluster.servers, jobs, run.load, run.config);
  REQUIRE(r.violations.empty());
  REQUIRE(r.start_time(1) == Approx(60));
  REQUIRE(r.preemptions(1) == 1);
  // Checkpointed: 240 s x 0.25 = 60 s kept; restarts on the V100 at 1020 s.
  REQUIRE(r.finish_time(1) == Approx(1020 + 63 + 940));
}

TEST_CASE("invariants hold with start_on_loan on random traces under every policy",
          "[sim][start_on_loan]") {
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    const auto [c, jobs, load] = aryl::test::random_run(seed);
    for (AllocationPolicy p :
         {AllocationPolicy::aryl, AllocationPolicy::fifo, AllocationPolicy::sjf,
          AllocationPolicy::gandiva, AllocationPolicy::afs}) {
      INFO("seed " << seed << " policy " << static_cast<int>(p));
      Config cfg = aryl::test::config(p);
      cfg.gpu_speed["T4"] = 0.25;
      cfg.start_on_loan = true;
      cfg.scaling = seed % 2 ? Scaling::imperfect : Scaling::linear;
      const Result r = simulate(c.servers, jobs, load, cfg);
      REQUIRE(r.violations.empty());
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        REQUIRE(std::isfinite(r.finish_time(j)));
        REQUIRE(r.finish_time(j) >= r.start_time(j));
        // a moved job's flexible workers stop with it: one GPU type unless hetero
        if (!jobs[j].job.hetero) REQUIRE(r.ran_mixed(j) == 0);
      }
      REQUIRE(r.work_delivered == Approx(r.work_completed + r.work_lost_total));
    }
  }
}
