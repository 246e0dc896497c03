// Goodput-driven jobs in the simulator: the progress room (goodput_progress)
// and Tiresias rounds in the engine, by hand on a toy application whose step
// time is constant, so that progress advances at 1 / step_time per second.
#include <catch2/catch.hpp>

#include <cmath>

#include "../../cpp/core/src/sim/goodput_progress.hpp"
#include "aryl/sim/simulator.hpp"

using namespace aryl;
using namespace aryl::sim;
using Catch::Matchers::Contains;

namespace {

// One validated batch (16 = M0: gain 1); every placement of 1 or 2 GPUs steps in
// `step` s at local batch 8..16; epochs end at progress `epoch` x 1, 2, 3.
Application toy(double step, double epoch) {
  PlacementTable p{{"1", "1", "2", "2", "11", "11"},
                   {8, 16, 8, 16, 8, 16},
                   {step, step, step, step, step, step},
                   {0, 0, 0, 0, 0, 0}};
  std::vector<ValidationTable> v{
      {16, {epoch, 2 * epoch, 3 * epoch}, {1, 2, 3}, {1, 1, 1}, {1, 1, 1}}};
  return Application("toy", std::move(p), {}, std::move(v), 0, 0);
}

SimJob goodput_job(const std::string& id, int replicas, double submit) {
  Job j;
  j.id = id;
  j.min_workers = j.max_workers = replicas;
  j.duration = j.estimated_duration = 1.0;
  j.submit_time = submit;
  return {j, {}, 0, 16.0};
}

Config tiresias(double threshold = 16 * 3600.0) {
  Config c;
  c.allocator = Allocator::tiresias;
  c.tiresias_threshold = threshold;
  c.audit = true;
  return c;
}

std::vector<Server> nodes(int n, int gpus) {
  std::vector<Server> s;
  for (int i = 0; i < n; ++i)
    s.push_back({"n" + std::to_string(i), Pool::training, gpus, "V100", false});
  return s;
}

}  // namespace

TEST_CASE("goodput progress: restart first, then one progress per step second",
          "[sim][goodput]") {
  const Application app = toy(1.0, 10.0);
  GoodputJob job(app, 16);
  CHECK(job.total() == 30.0);
  CHECK(std::isnan(job.step(0, 60)));  // no placement: nothing happens
  job.reallocate({1}, 30.0);
  CHECK(job.atomic_bsz() == 16);
  CHECK(job.accum_steps() == 0);
  CHECK(job.rate() == Approx(1.0));
  CHECK(std::isnan(job.step(60, 35)));  // 30 s restart, 5 s progress
  CHECK(job.progress() == Approx(5.0));
  CHECK(job.restart_left() == 0.0);
  // 25 more: epochs end at 10 (t = 100), 20 (110), 30 (120): done at 120.
  CHECK(job.step(95, 60) == 120.0);
  CHECK(job.completed());
  CHECK(job.epoch() == 3);
  CHECK(job.progress() == 30.0);
}

TEST_CASE("goodput progress: epoch boundaries fall on whole seconds",
          "[sim][goodput]") {
  // Rate 2 per s: an epoch of 5 takes 2.5 s, counted as 2 (half to even).
  const Application app = toy(0.5, 5.0);
  GoodputJob job(app, 16);
  job.reallocate({1}, 0.0);
  CHECK(job.step(0, 60) == 6.0);
  // Stopping keeps progress; a new placement pays the restart again.
  GoodputJob other(app, 16);
  other.reallocate({1}, 30.0);
  CHECK(std::isnan(other.step(0, 32)));  // 2 s of progress: 4
  other.reallocate({}, 30.0);
  CHECK(std::isnan(other.step(32, 60)));
  CHECK(other.progress() == Approx(4.0));
  other.reallocate({1, 1}, 30.0);  // 2 replicas: local batch 8
  CHECK(other.atomic_bsz() == 8);
  CHECK(std::isnan(other.step(92, 30)));
  CHECK(other.progress() == Approx(4.0));
}

TEST_CASE("tiresias rounds: first round at the interval, restart on every start",
          "[sim][tiresias]") {
  // One node of 2 GPUs; A and B (1 replica) fit at the round at 60, C (2) waits.
  const std::vector<Application> apps{toy(1.0, 10.0)};
  const std::vector<SimJob> jobs{goodput_job("A", 1, 0), goodput_job("B", 1, 0),
                                 goodput_job("C", 2, 0)};
  const Result r = simulate(nodes(1, 2), jobs, {}, tiresias(), {}, apps);
  CHECK(r.violations.empty());
  // A, B: start 60, restart to 90, 30 s of progress: done 120. C: 120 + 30 + 30.
  CHECK(r.start_time(0) == 60.0);
  CHECK(r.finish_time(0) == 120.0);
  CHECK(r.finish_time(1) == 120.0);
  CHECK(r.start_time(2) == 120.0);
  CHECK(r.finish_time(2) == 180.0);
  CHECK(r.work_completed == Approx(90.0));
  CHECK(r.preemptions(2) == 0);
}

TEST_CASE("tiresias rounds: demotion after the threshold preempts", "[sim][tiresias]") {
  // One GPU; 300 s of progress per job; demotion at 60 GPU-s.
  const std::vector<Application> apps{toy(1.0, 100.0)};
  const std::vector<SimJob> jobs{goodput_job("A", 1, 0), goodput_job("B", 1, 61)};
  const Result r = simulate(nodes(1, 1), jobs, {}, tiresias(60.0), {}, apps);
  CHECK(r.violations.empty());
  // 60: A starts (progress from 90). 120: A demoted (60 GPU-s), B runs. 180: B
  // demoted behind A; A resumes (progress 30 -> from 210). A completes at
  // 210 + 270 = 480; B resumes at the round at 480: 510 + 270 = 780.
  CHECK(r.finish_time(0) == 480.0);
  CHECK(r.start_time(1) == 120.0);
  CHECK(r.finish_time(1) == 780.0);
  CHECK(r.preemptions(0) == 1);
  CHECK(r.preemptions(1) == 1);
}

TEST_CASE("goodput-driven runs reject what they do not support", "[sim][goodput]") {
  const std::vector<Application> apps{toy(1.0, 10.0)};
  std::vector<SimJob> jobs{goodput_job("A", 1, 0)};
  Config kernel;
  kernel.policy = AllocationPolicy::fifo;  // only aryl's kernel runs them
  CHECK_THROWS_WITH(simulate(nodes(1, 1), jobs, {}, kernel, {}, apps),
                    Contains("tiresias"));
  jobs[0].application = 1;
  CHECK_THROWS_WITH(simulate(nodes(1, 1), jobs, {}, tiresias(), {}, apps),
                    Contains("application index"));
  jobs[0].application = 0;
  jobs[0].batch_size = 0.0;
  CHECK_THROWS_WITH(simulate(nodes(1, 1), jobs, {}, tiresias(), {}, apps),
                    Contains("batch_size"));
}
