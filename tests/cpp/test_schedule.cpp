#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>
#include <utility>

#include "aryl/rng.hpp"
#include "aryl/schedule.hpp"
#include "fixtures.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

// The state after the decision: stopped workers removed, started ones added.
ClusterState apply(const ClusterState& s, const Decision& d) {
  ClusterState out = s;
  out.workers.clear();
  for (std::size_t w = 0; w < s.workers.size(); ++w)
    if (std::find(d.stop.begin(), d.stop.end(), static_cast<int>(w)) == d.stop.end())
      out.workers.push_back(s.workers[w]);
  out.workers.insert(out.workers.end(), d.start.begin(), d.start.end());
  return out;
}

Decision run(const ClusterState& s, AllocationPolicy p, bool backfill = false) {
  ScheduleOptions o;
  o.policy = p;
  o.backfill = backfill;
  return schedule(s, o);
}

int job_with_time(ClusterState& s, const std::string& id, int d, int lo, int hi,
                  double t, double submit = 0) {
  const int j = add_job(s, id, d, lo, hi);
  s.jobs[static_cast<std::size_t>(j)].duration = t;
  s.jobs[static_cast<std::size_t>(j)].estimated_duration = t;
  s.jobs[static_cast<std::size_t>(j)].submit_time = submit;
  return j;
}

}  // namespace

TEST_CASE("paper: A(2..3, 100 s) and B(2..6, 20 s) on 8 GPUs get 3 and 5",
          "[schedule]") {
  ClusterState s;
  add_server(s, "t", false);
  const int a = job_with_time(s, "A", 1, 2, 3, 100);
  const int b = job_with_time(s, "B", 1, 2, 6, 20);
  const Decision d = run(s, AllocationPolicy::aryl);
  REQUIRE(d.allocation[static_cast<std::size_t>(a)] == 3);
  REQUIRE(d.allocation[static_cast<std::size_t>(b)] == 5);
  REQUIRE(d.pending.empty());
  REQUIRE(d.start.size() == 8);
  REQUIRE(std::count_if(d.start.begin(), d.start.end(),
                        [](const Worker& w) { return w.flexible; }) == 4);
  REQUIRE_NOTHROW(validate(apply(s, d)));
}

TEST_CASE("running time is linear in workers", "[schedule]") {
  Job j;
  j.max_workers = 6;
  j.estimated_duration = 20;
  REQUIRE(running_time(j, 2) == Approx(60));
  REQUIRE(running_time(j, 6, 0.5) == Approx(10));
}

TEST_CASE("phase 1 admits shortest first and skips what does not fit", "[schedule]") {
  ClusterState s;
  add_server(s, "t", false);  // 8 GPUs
  const int big = job_with_time(s, "big", 8, 1, 1, 10, 0);
  const int small = job_with_time(s, "small", 4, 1, 1, 100, 1);
  const int tiny = job_with_time(s, "tiny", 4, 1, 1, 50, 2);
  SECTION("aryl: SJF; the 8-GPU job is shortest and takes the server") {
    const Decision d = run(s, AllocationPolicy::aryl);
    REQUIRE(d.allocation[static_cast<std::size_t>(big)] == 1);
    REQUIRE(d.pending == std::vector<int>{tiny, small});
  }
  SECTION("strict fifo blocks behind the head; backfill does not") {
    ClusterState busy = s;
    const int other = add_job(busy, "running", 4, 1, 1);
    place(busy, other, 0, 1);  // 4 GPUs left: big cannot start
    REQUIRE(run(busy, AllocationPolicy::fifo).pending ==
            std::vector<int>{big, small, tiny});
    const Decision d = run(busy, AllocationPolicy::fifo, true);
    REQUIRE(d.allocation[static_cast<std::size_t>(small)] == 1);
    REQUIRE(d.pending == std::vector<int>{big, tiny});
  }
  SECTION("sjf skips rather than blocks") {
    ClusterState busy = s;
    place(busy, add_job(busy, "running", 4, 1, 1), 0, 1);
    const Decision d = run(busy, AllocationPolicy::sjf);
    REQUIRE(d.allocation[static_cast<std::size_t>(tiny)] == 1);
  }
}

TEST_CASE("placement preferences", "[schedule]") {
  ClusterState s;
  const int t = add_server(s, "train", false);
  const int i1 = add_server(s, "loan1");
  const int i2 = add_server(s, "loan2");
  const int inelastic = job_with_time(s, "inelastic", 4, 1, 1, 100);
  const int elastic = job_with_time(s, "elastic", 4, 1, 3, 100);
  const Decision d = run(s, AllocationPolicy::aryl);
  for (const Worker& w : d.start) {
    if (w.job == inelastic) REQUIRE(w.server == t);
    if (w.job == elastic && !w.flexible) REQUIRE(w.server == i1);
  }
  // The elastic job's flexible workers avoid the server holding its base worker.
  const auto flex_on =
      std::count_if(d.start.begin(), d.start.end(), [&](const Worker& w) {
        return w.job == elastic && w.flexible && w.server == i2;
      });
  REQUIRE(flex_on == 2);
  REQUIRE_NOTHROW(validate(apply(s, d)));
}

TEST_CASE("a required GPU type is respected and a non-hetero job stays on one type",
          "[schedule]") {
  ClusterState s;
  add_server(s, "train", false);           // V100
  const int loan = add_server(s, "loan");  // T4
  const int needs_t4 = job_with_time(s, "t4", 2, 2, 2, 10);
  s.jobs[static_cast<std::size_t>(needs_t4)].gpu_type = "T4";
  const int wide =
      job_with_time(s, "wide", 4, 3, 3, 20);  // 12 GPUs: no single type has room
  const Decision d = run(s, AllocationPolicy::aryl);
  for (const Worker& w : d.start)
    if (w.job == needs_t4) REQUIRE(w.server == loan);
  REQUIRE(d.pending == std::vector<int>{wide});
  s.jobs[static_cast<std::size_t>(wide)].hetero = true;
  REQUIRE(run(s, AllocationPolicy::aryl).pending.empty());
}

TEST_CASE("running jobs keep their base; flexible workers are renewed or stopped",
          "[schedule]") {
  ClusterState s;
  const int srv = add_server(s, "t", false);
  const int e = job_with_time(s, "elastic", 1, 2, 8, 100);
  place(s, e, srv, 8);  // 2 base + 6 flexible: the whole server
  const int q = job_with_time(s, "queued", 1, 4, 4, 10);
  const Decision d = run(s, AllocationPolicy::aryl);
  REQUIRE(d.allocation[static_cast<std::size_t>(q)] == 4);
  REQUIRE(d.allocation[static_cast<std::size_t>(e)] == 4);
  REQUIRE(d.stop.size() == 4);
  for (int w : d.stop) REQUIRE(w >= 2);  // base workers are the first two
  REQUIRE_NOTHROW(validate(apply(s, d)));
  SECTION("gandiva shrinks to admit, grows only when nothing is pending") {
    const Decision g = run(s, AllocationPolicy::gandiva);
    REQUIRE(g.allocation[static_cast<std::size_t>(q)] == 4);
    REQUIRE(g.allocation[static_cast<std::size_t>(e)] == 4);
  }
}

TEST_CASE("afs gives extra workers to the job with the larger gain per GPU",
          "[schedule]") {
  ClusterState s;
  add_server(s, "t", false);
  const int longer = job_with_time(s, "long", 1, 1, 8, 1000);
  const int shorter = job_with_time(s, "short", 1, 1, 4, 10);
  const Decision d = run(s, AllocationPolicy::afs);
  REQUIRE(d.allocation[static_cast<std::size_t>(shorter)] == 4);
  REQUIRE(d.allocation[static_cast<std::size_t>(longer)] == 4);
}

TEST_CASE("every policy leaves a valid state on random clusters", "[schedule]") {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    Rng rng(seed);
    ClusterState s;
    for (int i = 0; i < 4; ++i) add_server(s, "t" + std::to_string(i), false);
    for (int i = 0; i < 4; ++i) add_server(s, "l" + std::to_string(i), true);
    for (int j = 0; j < 20; ++j) {
      const int d = 1 << rng.below(4);
      const int lo = 1 + static_cast<int>(rng.below(3));
      const int hi = lo + static_cast<int>(rng.below(3));
      const int id = job_with_time(s, "j" + std::to_string(j), d, lo, hi,
                                   60.0 + static_cast<double>(rng.below(1000)),
                                   static_cast<double>(j));
      s.jobs[static_cast<std::size_t>(id)].hetero = rng.below(4) == 0;
      if (rng.below(4) == 0)
        s.jobs[static_cast<std::size_t>(id)].gpu_type = rng.below(2) ? "T4" : "V100";
    }
    for (AllocationPolicy p :
         {AllocationPolicy::aryl, AllocationPolicy::fifo, AllocationPolicy::sjf,
          AllocationPolicy::gandiva, AllocationPolicy::afs}) {
      INFO("seed " << seed << " policy " << static_cast<int>(p));
      const Decision first = run(s, p);
      const ClusterState next = apply(s, first);
      REQUIRE_NOTHROW(validate(next));
      const Decision second = run(next, p);  // a second epoch on the result
      REQUIRE_NOTHROW(validate(apply(next, second)));
      for (std::size_t j = 0; j < s.jobs.size(); ++j) {
        const int n = first.allocation[j];
        REQUIRE((n == 0 || (n >= s.jobs[j].min_workers && n <= s.jobs[j].max_workers)));
      }
    }
  }
}

TEST_CASE("advance_remaining moves work as the simulator's progress rate",
          "[schedule][advance]") {
  ClusterState s;
  add_server(s, "v", false, 16);  // V100 (speed 1)
  add_server(s, "t", false);
  s.servers[1].gpu_type = "T4";                             // speed 0.25 below
  const int one = job_with_time(s, "one", 8, 1, 2, 100.0);  // work 100 x thr(2)
  const int mixed = job_with_time(s, "mixed", 4, 2, 2, 100.0);
  s.jobs[static_cast<std::size_t>(mixed)].hetero = true;
  job_with_time(s, "idle", 8, 1, 1, 100.0);
  place(s, one, 0, 1);
  s.workers.push_back({mixed, 0, false});
  s.workers.push_back({mixed, 1, false});
  const std::vector<double> speed{1.0, 0.25};
  const auto left = advance_remaining(s, {1.0, 1.0, 0.6}, 40.0, speed, 0.7, {});
  // one worker at speed 1 over work 200: 40 / 200 done
  CHECK(left[0] == Approx(1.0 - 40.0 / 200.0));
  // two workers over two types: thr(2) x mean(1, 0.25) x 0.7 = 0.875 per second
  CHECK(left[1] == Approx(1.0 - 40.0 * 0.875 / 200.0));
  CHECK(left[2] == 0.6);  // no workers: its work waits
  const auto done = advance_remaining(s, {1.0, 1.0, 0.6}, 1e6, speed, 0.7, {});
  CHECK(done[0] == 0.0);
  CHECK(done[1] == 0.0);
  CHECK_THROWS_AS(advance_remaining(s, {1.0}, 1.0, speed, 0.7, {}),
                  std::invalid_argument);
  CHECK_THROWS_AS(advance_remaining(s, {1.0, 1.0, 1.0}, -1.0, speed, 0.7, {}),
                  std::invalid_argument);
}

namespace {

// A queue feed over a list of queued jobs in the policy's order (the
// simulator's stands in feed.cpp): the first job within its room, or under
// strict fifo the first job if it is within. After refused_for_faster it passes
// over the later jobs of the refused one's shape whose running time is at least
// refuse_margin longer, until admitted().
class ListFeed : public QueueFeed {
 public:
  ListFeed(ClusterState& state, std::vector<int> order, bool strict)
      : state_(state),
        order_(std::move(order)),
        taken_(order_.size(), 0),
        strict_(strict) {}
  std::vector<int> pulled;  // list index -> its job in the full state
  int passed = 0;           // jobs passed over after a refusal

  std::int64_t pull(const Room& room) override {
    for (std::size_t k = 0; k < order_.size(); ++k) {
      if (taken_[k]) continue;
      const Job& job = full_->jobs[static_cast<std::size_t>(order_[k])];
      if (refused(job)) {
        taken_[k] = 2;  // refused as the whole queue's kernel would refuse it
        ++passed;
        continue;
      }
      const int workers = base_demand(job, policy_);
      if (workers > room(job.gpu_type, job.hetero, job.gpus_per_worker)) {
        if (strict_) return -1;
        continue;
      }
      taken_[k] = 1;
      state_.jobs.push_back(job);
      pulled.push_back(order_[k]);
      return order_[k];
    }
    return -1;
  }
  [[nodiscard]] bool drained() const override {
    return std::all_of(taken_.begin(), taken_.end(), [](char t) { return t == 1; });
  }
  void refused_for_faster() override {
    if (policy_ != AllocationPolicy::aryl && policy_ != AllocationPolicy::sjf) return;
    const Job& job = full_->jobs[static_cast<std::size_t>(pulled.back())];
    refusals_.emplace_back(&job, time(job) * (1.0 + refuse_margin));
  }
  void admitted() override { refusals_.clear(); }
  const ClusterState* full_ = nullptr;
  AllocationPolicy policy_ = AllocationPolicy::aryl;

 private:
  [[nodiscard]] double time(const Job& job) const {
    return running_time(job, base_demand(job, policy_));
  }
  [[nodiscard]] bool refused(const Job& job) const {
    const auto shape = [&](const Job& j) {
      return std::tuple{j.gpu_type, j.hetero, j.gpus_per_worker,
                        base_demand(j, policy_), j.elastic()};
    };
    return std::any_of(refusals_.begin(), refusals_.end(), [&](const auto& r) {
      return shape(*r.first) == shape(job) && time(job) >= r.second;
    });
  }
  ClusterState& state_;
  std::vector<int> order_;
  std::vector<char> taken_;  // 1 pulled, 2 passed over
  bool strict_;
  std::vector<std::pair<const Job*, double>> refusals_;  // shape, from which time
};

}  // namespace

// The simulator's epochs hand the kernel the running jobs and let it pull the
// queued ones (ScheduleOptions::feed): the decision must be the one on the
// state holding the running jobs, then every queued job in arrival order.
TEST_CASE("a kernel pulling its queue decides as on the whole queue", "[schedule]") {
  int pulled_less = 0, several_grew = 0, passed = 0;
  for (std::uint64_t seed = 0; seed < 225; ++seed) {
    Rng rng(seed);
    ClusterState s;
    for (int i = 0; i < 3; ++i) add_server(s, "t" + std::to_string(i), false);
    for (int i = 0; i < 3; ++i) add_server(s, "l" + std::to_string(i), true);
    for (int j = 0; j < 24; ++j) {
      // Half the seeds: small elastic jobs, so that several pulled jobs grow.
      const bool small = seed % 2 == 1;
      const int d = 1 << rng.below(small ? 2 : 4);
      const int lo = 1 + static_cast<int>(rng.below(small ? 2 : 3));
      const int hi = lo + static_cast<int>(rng.below(3)) + (small ? 1 : 0);
      const int id = job_with_time(s, "j" + std::to_string(j), d, lo, hi,
                                   // ties: of running time, of submit time
                                   100.0 * static_cast<double>(1 + rng.below(3)),
                                   static_cast<double>(rng.below(12)));
      s.jobs[static_cast<std::size_t>(id)].hetero = rng.below(4) == 0;
      if (rng.below(4) == 0)
        s.jobs[static_cast<std::size_t>(id)].gpu_type = rng.below(2) ? "T4" : "V100";
    }
    for (AllocationPolicy p :
         {AllocationPolicy::aryl, AllocationPolicy::fifo, AllocationPolicy::sjf,
          AllocationPolicy::gandiva, AllocationPolicy::afs})
      for (const bool backfill : {false, true}) {
        INFO("seed " << seed << " policy " << static_cast<int>(p) << " backfill "
                     << backfill);
        // An epoch on half the jobs makes some run; the rest queue behind them.
        ClusterState first = s;
        first.jobs.resize(12);
        const ClusterState ran = apply(first, run(first, p, backfill));
        // The engine's layout: running jobs in index order, then the queued
        // ones in arrival order (submit time, then index).
        std::vector<int> running, queued;
        std::vector<int> count(s.jobs.size(), 0);
        for (const Worker& w : ran.workers) ++count[static_cast<std::size_t>(w.job)];
        for (int j = 0; j < static_cast<int>(s.jobs.size()); ++j)
          (count[static_cast<std::size_t>(j)] > 0 ? running : queued).push_back(j);
        std::stable_sort(queued.begin(), queued.end(), [&](int a, int b) {
          return s.jobs[static_cast<std::size_t>(a)].submit_time <
                 s.jobs[static_cast<std::size_t>(b)].submit_time;
        });
        ClusterState full;
        full.servers = s.servers;
        std::vector<int> index_of(s.jobs.size(), -1);
        for (const std::vector<int>* part : {&running, &queued})
          for (const int j : *part) {
            index_of[static_cast<std::size_t>(j)] = static_cast<int>(full.jobs.size());
            full.jobs.push_back(s.jobs[static_cast<std::size_t>(j)]);
          }
        for (const Worker& w : ran.workers)
          full.workers.push_back(
              {index_of[static_cast<std::size_t>(w.job)], w.server, w.flexible});
        ScheduleOptions o;
        o.policy = p;
        o.backfill = backfill;
        // A third of the seeds: slow lent T4s, which jobs may refuse to wait
        // for V100s (passed over by the feed after a refusal).
        if (seed % 3 == 2) o.speed = {1.0, 1.0, 1.0, 0.25, 0.25, 0.25};
        const Decision whole = schedule(full, o);
        // The same epoch pulling the queue, in the policy's order.
        ClusterState part;
        part.servers = full.servers;
        part.workers = full.workers;
        const auto n_running = static_cast<int>(running.size());
        for (int i = 0; i < n_running; ++i)
          part.jobs.push_back(full.jobs[static_cast<std::size_t>(i)]);
        std::vector<int> order;  // queued jobs as indices of `full`
        for (int i = n_running; i < static_cast<int>(full.jobs.size()); ++i)
          order.push_back(i);
        const bool shortest = p == AllocationPolicy::aryl || p == AllocationPolicy::sjf;
        const auto key = [&](int i) {
          const Job& job = full.jobs[static_cast<std::size_t>(i)];
          return std::tuple{shortest ? running_time(job, base_demand(job, p)) : 0.0,
                            job.submit_time, i};
        };
        std::sort(order.begin(), order.end(),
                  [&](int a, int b) { return key(a) < key(b); });
        ListFeed feed(part, order, p == AllocationPolicy::fifo && !backfill);
        feed.full_ = &full;
        feed.policy_ = p;
        o.feed = &feed;
        const Decision pulled = schedule(part, o);
        // Pulled job k is part's job n_running + k, full's job feed.pulled[k].
        const auto to_full = [&](int j) {
          return j < n_running ? j
                               : feed.pulled[static_cast<std::size_t>(j - n_running)];
        };
        REQUIRE(pulled.start.size() == whole.start.size());
        for (std::size_t w = 0; w < whole.start.size(); ++w) {
          REQUIRE(to_full(pulled.start[w].job) == whole.start[w].job);
          REQUIRE(pulled.start[w].server == whole.start[w].server);
          REQUIRE(pulled.start[w].flexible == whole.start[w].flexible);
        }
        REQUIRE(pulled.stop == whole.stop);
        for (std::size_t j = 0; j < part.jobs.size(); ++j)
          REQUIRE(
              pulled.allocation[j] ==
              whole.allocation[static_cast<std::size_t>(to_full(static_cast<int>(j)))]);
        pulled_less += part.jobs.size() < full.jobs.size() ? 1 : 0;
        int grew = 0;  // pulled jobs given extra workers
        for (std::size_t j = static_cast<std::size_t>(n_running); j < part.jobs.size();
             ++j)
          grew += pulled.allocation[j] > base_demand(part.jobs[j], p) ? 1 : 0;
        several_grew += grew >= 2 ? 1 : 0;
        passed += feed.passed;
      }
  }
  CHECK(pulled_less > 100);  // the feed does pass over jobs that cannot fit
  CHECK(several_grew > 20);  // and phase 2 orders several pulled jobs
  CHECK(passed > 20);        // and jobs refused for faster GPUs
}
