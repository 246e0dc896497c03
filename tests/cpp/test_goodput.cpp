#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "aryl/application.hpp"
#include "aryl/goodput.hpp"
#include "aryl/pollux_job.hpp"

using namespace aryl;
using Catch::Matchers::Contains;

namespace {

const PerfParams params{0.1, 0.01, 0.2, 0.02, 0.05, 0.005, 1.0};

}  // namespace

TEST_CASE("network time picks the dominant link", "[goodput]") {
  CHECK(predict_network_time(params, 2, 8) == Approx(0.2 + 0.02 * 6));
  CHECK(predict_network_time(params, 1, 4) == Approx(0.05 + 0.005 * 2));
  CHECK(predict_network_time(params, 1, 2) == Approx(0.05 + 0.005 * 1e-8));
  CHECK(predict_network_time(params, 1, 1) == Approx(1e-8 + 1e-16));
}

TEST_CASE("step time is a gamma-norm of compute and network", "[goodput]") {
  CHECK(predict_accum_time(params, 10) == Approx(0.2));
  CHECK(predict_step_time(params, 2, 8, 10) == Approx(0.52));  // gamma 1: no overlap
  PerfParams p = params;
  p.gamma = 2.0;
  CHECK(predict_step_time(p, 2, 8, 10) == Approx(std::sqrt(0.04 + 0.1024)));
  p.gamma = 10.0;  // close to the max of the two
  CHECK(predict_step_time(p, 2, 8, 10) == Approx(0.32).epsilon(0.01));
}

TEST_CASE("throughput, efficiency and goodput by hand", "[goodput]") {
  const GoodputModel model(params, {1.0, 9.0}, {100, 1000, 1, 100});
  // One accumulation step: 1 x 0.2 + 0.52 = 0.72 s for 8 x 10 x 2 samples.
  CHECK(model.throughput(2, 8, 10, 1) == Approx(160 / 0.72));
  // PGNS phi = M0 var / sqr = 900: E(400) = (900 + 100) / (900 + 400).
  CHECK(model.efficiency(400) == Approx(1000.0 / 1300.0));
  CHECK(model.efficiency(100) == Approx(1.0));
  CHECK(model.goodput(2, 8, 10, 1) == Approx(160 / 0.72 * model.efficiency(160)));
  CHECK(statistical_gain({0.0, 0.0}, 4.0) == 1.0);  // no statistics: no gain
}

TEST_CASE("batch choice: one global batch, split over replicas or accumulated",
          "[goodput]") {
  const GoodputModel model(params, {1.0, 9.0}, {64, 64, 1, 64});
  const BatchChoice one = model.optimize(1, 1);
  CHECK(one.atomic_bsz == 64);
  CHECK(one.accum_steps == 0);
  const BatchChoice two = model.optimize(1, 2);
  CHECK(two.atomic_bsz == 32);
  CHECK(two.goodput == Approx(64 / (0.1 + 0.32 + 0.05 + 0.005 * 1e-8)));
  CHECK(model.speedup(1, 2) == Approx((0.74 + 1e-8) / 0.47));
  CHECK(model.speedup(1, 1) == Approx(1.0));
  CHECK(model.speedup(0, 0) == 0.0);

  const GoodputModel small(params, {1.0, 9.0}, {64, 64, 1, 16});
  const BatchChoice accumulated = small.optimize(1, 1);  // 64 = 16 x (3 + 1)
  CHECK(accumulated.atomic_bsz == 16);
  CHECK(accumulated.accum_steps == 3);
  CHECK_THROWS_WITH(model.optimize(2, 1), Contains("num_nodes <= num_replicas"));
}

TEST_CASE("batch choice prefers larger batches when the noise is large", "[goodput]") {
  const BatchLimits limits{32, 4096, 8, 512};
  const GoodputModel quiet(params, {1.0, 0.01}, limits),
      noisy(params, {1.0, 1e5}, limits);
  CHECK(quiet.optimize(1, 4).atomic_bsz * 4 < noisy.optimize(1, 4).atomic_bsz * 4);
}

TEST_CASE("fixed batches follow the artifact's rules and cap", "[goodput]") {
  const BatchLimits limits{128, 4096, 32, 1024};
  CHECK(fixed_batch(limits, 1, 2048) == std::pair{1024, 1});
  CHECK(fixed_batch(limits, 4, 2048) == std::pair{512, 0});
  CHECK(fixed_batch(limits, 3, 1000) == std::pair{334, 0});
  CHECK(fixed_batch(limits, 1, 128) ==
        std::pair{128, 0});  // M0 on one GPU: no accumulation
  CHECK(fixed_batch({100, 100, 1, 64}, 3, 100) ==
        std::pair{33, 0});  // 34 capped by 100 / 3
  CHECK_THROWS_WITH(fixed_batch(limits, 0, 128), Contains("num_replicas must be >= 1"));
  const GoodputModel model(params, {1.0, 9.0}, limits);
  const BatchChoice c = model.configure(1, 4, 2048);
  CHECK(c.atomic_bsz == 512);
  CHECK(c.goodput == Approx(model.goodput(1, 4, 512, 0)));
  CHECK(model.configure(2, 8).atomic_bsz == model.optimize(2, 8).atomic_bsz);
}

TEST_CASE("the fit recovers noiseless parameters", "[goodput][fit]") {
  const PerfParams truth{0.05, 0.004, 0.3, 0.01, 0.08, 0.002, 1.5};
  std::vector<ProfileSample> samples;
  for (auto [n, k] : {std::pair{1, 1}, {1, 2}, {1, 4}, {2, 4}, {2, 8}, {4, 16}})
    for (double m : {16.0, 64.0, 128.0})
      samples.push_back(
          {n, k, m, predict_accum_time(truth, m), predict_step_time(truth, n, k, m)});
  const FitReport report = fit_perf_params_report(samples);
  for (bool pinned : report.pinned) CHECK_FALSE(pinned);
  for (const ProfileSample& s : samples)
    CHECK(predict_step_time(report.params, s.num_nodes, s.num_replicas, s.atomic_bsz) ==
          Approx(s.step_time).epsilon(0.02));
  CHECK(report.objective <=
        fit_objective(PerfParams{0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001}, samples));
  CHECK(report.objective == Approx(fit_objective(report.params, samples)));
}

TEST_CASE("the fit pins what the data cannot tell", "[goodput][fit]") {
  const std::vector<ProfileSample> one{{1, 1, 32, 0.3, 0.31}, {1, 1, 32, 0.5, 0.52}};
  const FitReport report = fit_perf_params_report(one);
  CHECK(report.params.alpha_c == 0.2);  // mean accum time / 2
  CHECK(report.pinned ==
        std::array<bool, 7>{true, false, true, true, true, true, false});
  CHECK(report.params.alpha_n == Approx(1.1e-8));  // the prior: >= 1.1 x alpha_r
  CHECK(report.params.beta_r == 1e-8);
  CHECK_THROWS_WITH(fit_perf_params({}), Contains("at least one sample"));
  CHECK_THROWS_WITH(fit_perf_params({{1, 1, 32, 0.3, 0.31}, {2, 1, 32, 0.3, 0.31}}),
                    Contains("profile sample 1"));
  CHECK_THROWS_WITH(GoodputModel(params, {-1, 0}, {1, 2, 1, 1}),
                    Contains("grad params"));
  CHECK_THROWS_WITH(GoodputModel(PerfParams{0.1, 0.01, 0.2, 0.02, 0.05, 0.005, 0.5},
                                 {1, 1}, {1, 2, 1, 1}),
                    Contains("gamma"));
}

namespace {

Application toy() {
  PlacementTable p{{"1", "1", "12", "21", "4"},
                   {8, 16, 8, 16, 8},
                   {0.10, 0.20, 0.30, 0.50, 0.40},
                   {0.01, 0.02, 0.10, 0.20, 0.05}};
  ScalabilityTable s{{6, 6}, {6, 12}, {8, 8}, {1.0, 2.0}, {0.5, 1.0}};
  std::vector<ValidationTable> v{{32, {10, 20, 30}, {10, 20, 30}, {4, 4, 4}, {8, 8, 8}},
                                 {16, {11, 19, 31}, {5, 10, 15}, {2, 2, 2}, {6, 6, 6}}};
  return Application("toy", std::move(p), std::move(s), std::move(v), 0, 0);
}

}  // namespace

TEST_CASE("placement keys are the smallest rotation without zeros", "[application]") {
  CHECK(placement_key({2, 2, 1, 3}) == "1322");
  CHECK(placement_key({0, 4, 0, 1}) == "14");
  CHECK(placement_key({}).empty());
  CHECK(placement_key({12}).empty());
}

TEST_CASE("an application's tables by hand", "[application]") {
  const Application app = toy();
  CHECK(app.init_batch_size() == 16);
  CHECK(app.max_batch_size() == 32);
  CHECK(app.min_local_bsz() == 8);
  CHECK(app.max_local_bsz() == 16);
  CHECK(app.max_epochs() == 3);
  // Measured: linear in local_bsz; "21" and "12" are one placement (two rows).
  CHECK(app.step_time({1}, 12).first == Approx(0.15));
  CHECK(app.step_time({1}, 12).second == Approx(0.015));
  CHECK(app.step_time({2, 1}, 12).first == Approx(0.4));
  CHECK(app.step_time({0, 1, 2}, 8).first == Approx(0.3));
  // Unmeasured (6 nodes, 6 and 12 replicas): ratio 1.5 of 6 nodes = 9 replicas.
  CHECK(app.step_time({2, 2, 2, 1, 1, 1}, 8).first == Approx(1.5));
  CHECK_THROWS_WITH(app.step_time({1}, 20), Contains("outside the measured range"));
  CHECK_THROWS_WITH(app.step_time({1, 1, 1, 1, 1}, 8),
                    Contains("outside the measured"));
  // Gradient statistics between the validated batches 16 and 32.
  const GradParams g = app.grad_stats(24, 1);
  CHECK(g.sqr == Approx(3.0));
  CHECK(g.var == Approx(7.0));
  CHECK_THROWS_WITH(app.grad_stats(40, 0), Contains("outside the validated range"));
  // Epochs end at the smallest progress over the tables.
  CHECK(app.epoch_progress(0) == 0.0);
  CHECK(app.epoch_progress(2) == 19.0);
  CHECK(app.epoch_at(19.5) == 2);
  CHECK(app.epoch_at(20) == 2);
  CHECK(app.epoch_at(10.5) == 1);
  // Progress rate: 1 replica x 16 = M0, gain 1; step 0.2, no accumulation.
  CHECK(app.progress_rate({1}, 16, 0, 0) == Approx(5.0));
  // 3 replicas x 8 = 24, scale 1.5: (sqr, var) = (3, 7), gain (7 + 3) / (7 / 1.5 + 3);
  // placement "12" at local batch 8 steps in 0.3 s.
  CHECK(app.progress_rate({2, 1}, 8, 0, 0) == Approx(10.0 / (7.0 / 1.5 + 3.0) / 0.3));
  // 1 replica x 8 x 2 steps = 16; step 0.1 + 1 x (0.1 - 0.01).
  CHECK(app.progress_rate({1}, 8, 1, 0) == Approx(1.0 / 0.19));
  CHECK(app.profile_samples().size() == 7);
}

TEST_CASE("bad application tables are named", "[application]") {
  PlacementTable p{{"1x"}, {8}, {0.1}, {0.01}};
  CHECK_THROWS_WITH(Application("a", p, {}, {{16, {1}, {1}, {1}, {1}}}),
                    Contains("placements: row 0, column 'placement'"));
  p.placement = {"1"};
  p.sync_time = {0.2};
  CHECK_THROWS_WITH(Application("a", p, {}, {{16, {1}, {1}, {1}, {1}}}),
                    Contains("sync_time"));
  p.sync_time = {0.01};
  CHECK_THROWS_WITH(Application("a", p, {}, {}), Contains("at least one table"));
  CHECK_THROWS_WITH(Application("a", p, {}, {{16, {1}, {1}, {1}, {1}}}, 3),
                    Contains("max_epochs = 3"));
}

TEST_CASE("a Pollux job learns its model from profiles", "[goodput][job]") {
  PolluxJobModel job({128, 4096, 32, 1024});
  CHECK_FALSE(job.has_model());
  CHECK(job.speedup(2, 8) == 8.0);  // optimistic before any profile
  CHECK(job.max_replicas() == 1);
  const BatchChoice start = job.batch(1, 8);  // max(M0, 32 x 8) = 256 over 8 replicas
  CHECK(start.atomic_bsz == 32);
  CHECK(start.accum_steps == 0);
  CHECK(job.observe(1, 2, 128, 0.2, 0.05));
  CHECK_FALSE(job.observe(1, 2, 128, 0.9, 0.05));  // the first measurement is kept
  CHECK(job.profile().size() == 1);
  CHECK(job.profile()[0].step_time == 0.2);
  CHECK(job.perf()->alpha_c == Approx(0.075));  // one batch: mean(0.15) / 2
  CHECK(job.max_replicas() == 4);
  CHECK_THROWS_WITH(job.model(), Contains("no model yet"));
  job.observe_grad({1.0, 50.0});
  REQUIRE(job.has_model());
  CHECK(job.speedup(1, 1) == Approx(1.0));
  CHECK(job.batch(1, 2).goodput == Approx(job.model().configure(1, 2).goodput));
  CHECK_THROWS_WITH(job.observe(1, 1, 64, 0.1, 0.2), Contains("sync_time"));
  CHECK_THROWS_WITH(job.observe_grad({-1.0, 0.0}), Contains("grad_sqr"));

  const PolluxJobModel fixed({128, 4096, 32, 1024}, 2048);
  CHECK(fixed.batch(1, 4).atomic_bsz == 512);
}
