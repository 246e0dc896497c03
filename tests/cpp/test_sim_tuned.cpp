// aryl's kernel driving goodput-driven jobs (kernel_rounds.cpp) and what it sees
// of a tuned job (tuned_kernel_view), by hand on a toy application whose step
// time is proportional to the local batch (`step` s at 16 samples per GPU), so
// that splitting a fixed batch over k replicas makes a step k times shorter.
#include <catch2/catch.hpp>

#include <cmath>

#include "../../cpp/core/src/sim/goodput_progress.hpp"
#include "aryl/pollux_job.hpp"
#include "aryl/sim/simulator.hpp"

using namespace aryl;
using namespace aryl::sim;
using Catch::Matchers::Contains;

namespace {

Application tuned_toy(double step, double epoch) {
  const double half = step / 2;
  PlacementTable p{{"1", "1", "2", "2", "11", "11"},
                   {8, 16, 8, 16, 8, 16},
                   {half, step, half, step, half, step},
                   {0, 0, 0, 0, 0, 0}};
  std::vector<ValidationTable> v{
      {16, {epoch, 2 * epoch, 3 * epoch}, {1, 2, 3}, {1, 1, 1}, {1, 1, 1}}};
  return Application("toy", std::move(p), {}, std::move(v), 0, 0);
}

SimJob job(const std::string& id, int low, int high, double submit, double duration) {
  Job j;
  j.id = id;
  j.min_workers = low;
  j.max_workers = high;
  j.duration = j.estimated_duration = duration;
  j.submit_time = submit;
  return {j, {}, 0, 16.0};
}

std::vector<Server> one_node(int gpus) {
  return {{"n0", Pool::training, gpus, "V100", false}};
}

Config aryl_rounds(bool tuned = false) {
  Config c;
  c.audit = true;
  c.tuned = tuned;
  return c;
}

}  // namespace

TEST_CASE("goodput progress: work_scale scales every epoch", "[sim][goodput]") {
  const Application app = tuned_toy(1.0, 10.0);
  GoodputJob half(app, 16, false, 0.5);
  CHECK(half.total() == 15.0);
  half.reallocate({1}, 30.0);
  // 30 s restart, then epochs end at 5, 10, 15: done at 30 + 15.
  CHECK(half.step(0, 60) == 45.0);
  CHECK(half.epoch() == 3);
}

TEST_CASE("aryl rounds: SJF admits the shorter job first", "[sim][goodput][aryl]") {
  // One GPU; both arrive at 0; B is estimated shorter and runs first.
  const std::vector<Application> apps{tuned_toy(1.0, 10.0)};
  std::vector<SimJob> jobs{job("A", 1, 1, 0, 100.0), job("B", 1, 1, 0, 10.0)};
  jobs[1].work_scale = 0.5;  // 15 s of progress
  const Result r = simulate(one_node(1), jobs, {}, aryl_rounds(), {}, apps);
  CHECK(r.violations.empty());
  // B: round 60, restart to 90, 15 s: done 105, leaves at the round at 120. A:
  // 120 + 30 + 30 = 180.
  CHECK(r.start_time(1) == 60.0);
  CHECK(r.finish_time(1) == 105.0);
  CHECK(r.start_time(0) == 120.0);
  CHECK(r.finish_time(0) == 180.0);
  CHECK(r.work_completed == Approx(45.0));
}

TEST_CASE("aryl rounds: an elastic job grows into free GPUs and shrinks for a newcomer",
          "[sim][goodput][aryl]") {
  const std::vector<Application> apps{tuned_toy(1.0, 100.0)};
  const std::vector<SimJob> jobs{job("A", 1, 2, 0, 300.0), job("B", 1, 1, 100, 300.0)};
  const Result r = simulate(one_node(2), jobs, {}, aryl_rounds(), {}, apps);
  CHECK(r.violations.empty());
  // A starts at 60 on both GPUs (its batch of 16 split in two: steps twice as
  // short); at 120 B arrives and the knapsack gives A's second GPU to it.
  CHECK(r.start_time(0) == 60.0);
  CHECK(r.start_time(1) == 120.0);
  CHECK(r.scaling_ops(0) >= 1);
  CHECK(r.preemptions(0) == 0);
}

TEST_CASE("aryl rounds with agents run and keep the invariants",
          "[sim][goodput][aryl]") {
  const std::vector<Application> apps{tuned_toy(1.0, 20.0)};
  const std::vector<SimJob> jobs{job("A", 1, 2, 0, 60.0), job("B", 1, 2, 30, 60.0),
                                 job("C", 1, 1, 200, 60.0)};
  const Result r = simulate(one_node(2), jobs, {}, aryl_rounds(true), {}, apps);
  CHECK(r.violations.empty());
  for (int j = 0; j < 3; ++j) CHECK(std::isfinite(r.finish_time(j)));
  CHECK(r.work_completed == Approx(180.0));
}

TEST_CASE("tuned view: the kernel's running times are the model's", "[goodput][aryl]") {
  // gamma 1, one replica: T_iter = (s + 1)(0.1 + 0.001 m) + ~0; sqr = 0: efficiency 1.
  const GoodputModel model({0.1, 0.001, 0.05, 0.01, 0.01, 0.001, 1.0}, {0.0, 1.0},
                           {32.0, 1024.0, 16, 256});
  const TunedView v = tuned_kernel_view(model, 4, 2, 4, 1e5, 500.0);
  REQUIRE(v.curve.size() == 4);
  CHECK(v.curve[0] == Approx(1024 / (4 * 0.356)).epsilon(1e-6));
  CHECK(v.curve[3] == Approx(1024 / (0.356 + 0.01 + 0.001 * 2)).epsilon(1e-6));
  for (int w = 1; w <= 4; ++w) {
    const double kernel =
        500.0 * v.curve[1] / v.curve[static_cast<std::size_t>(w - 1)] * v.remaining;
    CHECK(kernel == Approx(1e5 * 32 / v.curve[static_cast<std::size_t>(w - 1)]));
  }
  CHECK_THROWS_WITH(tuned_kernel_view(model, 4, 5, 4, 1.0, 1.0),
                    Contains("tuned view"));
  CHECK_THROWS_WITH(tuned_kernel_view(model, 4, 1, 4, 1.0, 0.0),
                    Contains("tuned view"));
}

TEST_CASE("an untuned job's curve is its measured rate at the user's batch",
          "[sim][goodput][aryl]") {
  const Application app = tuned_toy(1.0, 10.0);
  GoodputJob g(app, 16, false);
  // 1 replica: local 16, 1 s a step; 2 replicas: local 8, 0.5 s; 3 and 4: local
  // 6 and 4 (below the measured 8: held at 0.5 s) on one node of 4 GPUs.
  const std::vector<double> curve = g.rate_curve(2, 4);
  REQUIRE(curve.size() == 2);
  CHECK(curve[1] == Approx(2 * curve[0]));
}

TEST_CASE("step times past a placement's measured batches", "[goodput]") {
  const Application app = tuned_toy(1.0, 10.0);
  // Held below the smallest measured local batch, refused above the largest
  // local batch of the application (16).
  CHECK(app.step_time({1}, 4).first == Approx(0.5));
  CHECK_THROWS_WITH(app.step_time({1}, 17), Contains("outside the measured range"));
}

TEST_CASE("tuned jobs need aryl's kernel", "[sim][goodput][aryl]") {
  const std::vector<Application> apps{tuned_toy(1.0, 10.0)};
  std::vector<SimJob> jobs{job("A", 1, 1, 0, 10.0)};
  Config c = aryl_rounds(true);
  c.allocator = Allocator::tiresias;
  CHECK_THROWS_WITH(simulate(one_node(1), jobs, {}, c, {}, apps),
                    Contains("policy 'aryl'"));
  jobs[0].work_scale = -1.0;
  CHECK_THROWS_WITH(simulate(one_node(1), jobs, {}, aryl_rounds(), {}, apps),
                    Contains("work_scale"));
}
