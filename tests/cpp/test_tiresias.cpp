#include <catch2/catch.hpp>

#include <stdexcept>

#include "aryl/tiresias.hpp"

using namespace aryl;
using Catch::Matchers::Contains;

namespace {
constexpr double hour = 3600.0;
}

TEST_CASE("one Tiresias round by hand", "[tiresias]") {
  // Two 4-GPU nodes. Job 0 (4 GPUs, 5 h run = 20 GPU-h) is demoted behind job 3;
  // job 1 keeps node 1; new job 2 takes node 0; job 0 no longer fits and stops.
  TiresiasInput in;
  in.jobs = {{4, 5 * hour, {0, 0, 0, 0}},
             {2, 1 * hour, {1, 1}},
             {4, 0, {}},
             {2, 9 * hour, {}}};
  in.queue0 = {0, 1, 2};
  in.queue1 = {3};
  in.node_gpus = {4, 4};
  const TiresiasDecision d = tiresias_round(in);
  CHECK(d.demoted == std::vector<int>{0});
  CHECK(d.queue0 == std::vector<int>{1, 2});
  CHECK(d.queue1 == std::vector<int>{3, 0});
  CHECK(d.running == std::vector<bool>{false, true, true, true});
  CHECK(d.allocations[0].empty());
  CHECK(d.allocations[1] == std::vector<int>{1, 1});
  CHECK(d.allocations[2] == std::vector<int>{0, 0, 0, 0});
  CHECK(d.allocations[3] == std::vector<int>{1, 1});
}

TEST_CASE("Tiresias admits by total free GPUs and fills the emptiest node",
          "[tiresias]") {
  TiresiasInput in;
  in.jobs = {{3, 0, {}}, {5, 0, {}}, {8, 0, {}}};
  in.queue0 = {0, 1, 2};
  in.node_gpus = {4, 4, 4};
  const TiresiasDecision d = tiresias_round(in);
  CHECK(d.running == std::vector<bool>{true, true, false});  // 3 + 5 of 12; 8 > 4 left
  CHECK(d.allocations[0] == std::vector<int>{0, 0, 0});
  CHECK(d.allocations[1] == std::vector<int>{1, 1, 1, 1, 2});
  CHECK(allocation_placement(d.allocations[1]) == std::vector<int>{4, 1});
}

TEST_CASE("Tiresias rejects inconsistent state", "[tiresias]") {
  TiresiasInput in;
  in.jobs = {{2, 0, {}}};
  in.node_gpus = {4};
  CHECK_THROWS_WITH(tiresias_round(in), Contains("job 0 is in no queue"));
  in.queue0 = {0};
  in.jobs[0].allocation = {0, 0, 0};
  CHECK_THROWS_WITH(tiresias_round(in), Contains("holds 3 GPUs but requests 2"));
  in.jobs[0].allocation = {0, 1};
  CHECK_THROWS_WITH(tiresias_round(in), Contains("unknown node 1"));
  in.jobs[0].allocation = {};
  in.jobs[0].executed_time = -1;
  CHECK_THROWS_WITH(tiresias_round(in), Contains("executed_time"));
}
