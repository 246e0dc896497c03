// The allocation history (Config::history): hand-computed intervals of a
// reclaim preemption and a reclaim scale-in, and on random traces a history
// that tiles every job's running time and leaves the run unchanged.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "aryl/sim/simulator.hpp"
#include "fixtures.hpp"
#include "sim_fixtures.hpp"

using namespace aryl;
using namespace aryl::sim;
using aryl::test::add_server;
using aryl::test::config;
using aryl::test::sim_job;

namespace {

Config recording(AllocationPolicy policy = AllocationPolicy::aryl) {
  Config c = config(policy);
  c.history = true;
  return c;
}

struct Row {
  std::int64_t interval, server, workers;
  double start, end;
  Change opened, closed;
};

std::vector<Row> rows_of(const History& h, std::int64_t job) {
  std::vector<Row> out;
  for (std::size_t i = 0; i < h.job.size(); ++i)
    if (h.job[i] == job)
      out.push_back({h.interval[i], h.server[i], h.workers[i], h.start[i], h.end[i],
                     static_cast<Change>(h.opened[i]),
                     static_cast<Change>(h.closed[i])});
  return out;
}

// One job's intervals in order: (start, end, opened, closed, workers summed).
struct Span {
  double start = 0, end = 0;
  Change opened = Change::start, closed = Change::start;
  std::int64_t workers = 0;
};

std::map<std::int64_t, std::vector<Span>> spans(const History& h) {
  std::map<std::int64_t, std::map<std::int64_t, Span>> by;
  for (std::size_t i = 0; i < h.job.size(); ++i) {
    Span& s = by[h.job[i]][h.interval[i]];
    s = {h.start[i], h.end[i], static_cast<Change>(h.opened[i]),
         static_cast<Change>(h.closed[i]), s.workers + h.workers[i]};
  }
  std::map<std::int64_t, std::vector<Span>> out;
  for (const auto& [job, intervals] : by) {
    std::int64_t expected = 0;
    for (const auto& [k, s] : intervals) {
      REQUIRE(k == expected++);  // numbered 0, 1, ... without a hole
      out[job].push_back(s);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("history: a reclaim preemption ends the interval; a restart opens one",
          "[sim][history]") {
  ClusterState c;
  add_server(c, "train", false);
  add_server(c, "loan", true);
  const std::vector<LoadPoint> load{{0, 0.0}, {300, 1.0}};
  const std::vector<SimJob> jobs{sim_job("Y", 8, 1, 1, 5000),
                                 sim_job("X", 8, 1, 1, 1000, 10, true)};
  const Result r = simulate(c.servers, jobs, load, recording());
  REQUIRE(r.violations.empty());
  const std::vector<Row> y = rows_of(r.history, 0);
  REQUIRE(y.size() == 1);
  CHECK(y[0].start == 0.0);
  CHECK(y[0].end == Approx(5000));
  CHECK(y[0].server == 0);
  CHECK(y[0].workers == 1);
  CHECK(y[0].closed == Change::finish);
  const std::vector<Row> x = rows_of(r.history, 1);
  REQUIRE(x.size() == 2);
  // On the loaned server from the epoch at 60 until the reclaim at 300 ...
  CHECK(x[0].interval == 0);
  CHECK(x[0].server == 1);
  CHECK(x[0].start == Approx(60));
  CHECK(x[0].end == Approx(300));
  CHECK(x[0].opened == Change::start);
  CHECK(x[0].closed == Change::reclaim_preemption);
  // ... then on the training server from the epoch after Y's finish.
  CHECK(x[1].interval == 1);
  CHECK(x[1].server == 0);
  CHECK(x[1].start == Approx(5040));
  CHECK(x[1].end == Approx(5040 + 63 + 760));
  CHECK(x[1].opened == Change::start);
  CHECK(x[1].closed == Change::finish);
  SECTION("off by default: nothing recorded, the same run") {
    Config off = recording();
    off.history = false;
    const Result plain = simulate(c.servers, jobs, load, off);
    REQUIRE(plain.history.job.empty());
    REQUIRE(plain.history.start.empty());
    REQUIRE(plain.finish_time == r.finish_time);
  }
}

TEST_CASE("history: a reclaim scale-in splits the interval per server",
          "[sim][history]") {
  ClusterState c;
  add_server(c, "loan1", true);
  add_server(c, "loan2", true);
  const std::vector<LoadPoint> load{{0, 0.0}, {300, 0.5}};
  const Result r =
      simulate(c.servers, {sim_job("E", 1, 8, 16, 1000)}, load, recording());
  REQUIRE(r.violations.empty());
  const std::vector<Row> e = rows_of(r.history, 0);
  REQUIRE(e.size() == 3);  // 8 workers on each server, then 8 on the one kept
  for (int k : {0, 1}) {
    CHECK(e[k].interval == 0);
    CHECK(e[k].server == k);
    CHECK(e[k].workers == 8);
    CHECK(e[k].start == 0.0);
    CHECK(e[k].end == Approx(300));
    CHECK(e[k].closed == Change::reclaim_scale_in);
  }
  CHECK(e[2].interval == 1);
  CHECK(e[2].workers == 8);
  CHECK(e[2].start == Approx(300));
  CHECK(e[2].end == Approx(300 + (16000 - 300 * 16) / 8.0));
  CHECK(e[2].opened == Change::reclaim_scale_in);
  CHECK(e[2].closed == Change::finish);
  CHECK(r.scaling_ops(0) == 1);
}

TEST_CASE("history: random traces' intervals tile each job's run; the run is unchanged",
          "[sim][history]") {
  std::map<Change, int> seen;  // interval ends of every kind, over all runs
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    const auto [c, jobs, load] = aryl::test::random_run(seed);
    for (AllocationPolicy p :
         {AllocationPolicy::aryl, AllocationPolicy::gandiva, AllocationPolicy::fifo}) {
      INFO("seed " << seed << " policy " << static_cast<int>(p));
      Config cfg = recording(p);
      cfg.lend_hold = 0.0;  // lend and reclaim often
      const Result r = simulate(c.servers, jobs, load, cfg);
      cfg.history = false;
      const Result plain = simulate(c.servers, jobs, load, cfg);
      aryl::test::require_same_run(r, plain);
      double training = 0, loaned = 0;
      for (std::size_t i = 0; i < r.history.job.size(); ++i) {
        const auto& job = jobs[static_cast<std::size_t>(r.history.job[i])].job;
        const double gpu_s = (r.history.end[i] - r.history.start[i]) *
                             static_cast<double>(r.history.workers[i]) *
                             job.gpus_per_worker;
        (c.servers[static_cast<std::size_t>(r.history.server[i])].pool == Pool::training
             ? training
             : loaned) += gpu_s;
      }
      REQUIRE(training == Approx(r.training_gpu_seconds).epsilon(1e-12));
      REQUIRE(loaned == Approx(r.loaned_gpu_seconds).epsilon(1e-12).margin(1e-9));
      const auto all = spans(r.history);
      REQUIRE(all.size() == jobs.size());  // every job ran and finished
      for (const auto& [j, s] : all) {
        const std::size_t job = static_cast<std::size_t>(j);
        REQUIRE(s.front().start == r.start_time(job));
        REQUIRE(s.front().opened == Change::start);
        REQUIRE(s.back().end == r.finish_time(job));
        REQUIRE(s.back().closed == Change::finish);
        std::int64_t preempted = 0, resized = 0;
        for (std::size_t k = 0; k < s.size(); ++k) {
          const Span& span = s[k];
          ++seen[span.closed];
          REQUIRE(span.end >= span.start);
          REQUIRE(span.workers >= jobs[job].job.min_workers);
          REQUIRE(span.workers <= jobs[job].job.max_workers);
          if (k + 1 == s.size()) break;
          if (span.closed == Change::reclaim_preemption) {
            ++preempted;
            REQUIRE(s[k + 1].start >= span.end);
            REQUIRE(s[k + 1].opened == Change::start);
          } else {
            ++resized;
            REQUIRE(s[k + 1].start == span.end);
            REQUIRE(s[k + 1].opened == span.closed);
          }
        }
        REQUIRE(preempted == r.preemptions(job));
        REQUIRE(resized == r.scaling_ops(job));
      }
    }
  }
  // Every kind of change of a fixed-duration run happened somewhere.
  for (Change kind :
       {Change::scale_out, Change::scale_in, Change::move, Change::reclaim_scale_in,
        Change::reclaim_preemption, Change::finish}) {
    INFO("change " << static_cast<int>(kind));
    REQUIRE(seen[kind] > 0);
  }
}
