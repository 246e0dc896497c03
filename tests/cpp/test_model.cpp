#include <catch2/catch.hpp>

#include <string>

#include "aryl/capacity.hpp"
#include "aryl/model.hpp"
#include "fixtures.hpp"

using namespace aryl;
using namespace aryl::test;

TEST_CASE("a valid state passes validation", "[model]") {
  REQUIRE_NOTHROW(validate(paper_reclaim_example()));
}

TEST_CASE("duplicate ids are found among many, whatever their hashes share",
          "[model]") {
  // 5,000 distinct ids then one repeat, at each place: the id set's probing has
  // to walk past ids whose hashes share slots (its table is 2-4x the ids).
  for (const std::size_t repeat : {0UL, 1UL, 2'500UL, 4'999UL}) {
    ClusterState s;
    s.servers.push_back({"s", Pool::training, 8, "V100", false});
    for (std::size_t i = 0; i < 5'000; ++i) {
      Job job;
      job.id = "job-" + std::to_string(i);
      s.jobs.push_back(job);
    }
    REQUIRE_NOTHROW(validate(s));
    s.jobs.push_back(s.jobs[repeat]);
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("duplicate job id 'job-" +
                                                     std::to_string(repeat) + "'"));
    s.servers.push_back(s.servers[0]);
    s.jobs.pop_back();
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("duplicate server id 's'"));
  }
}

TEST_CASE("validation names the offending record", "[model]") {
  ClusterState s = paper_reclaim_example();
  SECTION("over-committed server") {
    place(s, 1, 2, 1);  // a second 8-GPU worker of b on server 3
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("server '3' is over-committed"));
  }
  SECTION("min above max") {
    s.jobs[0].min_workers = 3;
    REQUIRE_THROWS_WITH(validate(s),
                        Catch::Contains("job 'a': min_workers 3 > max_workers 2"));
  }
  SECTION("worker count outside the range") {
    s.jobs[1].min_workers = s.jobs[1].max_workers = 2;
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("job 'b' runs 1 workers"));
  }
  SECTION("duplicate id") {
    s.jobs[1].id = "a";
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("duplicate job id 'a'"));
  }
  SECTION("unknown server") {
    s.workers.push_back({0, 17, false});
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("unknown server index 17"));
  }
  SECTION("worker on an inference server that is not on loan") {
    s.servers[2].on_loan = false;
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("which is not on loan"));
  }
  SECTION("training server on loan") {
    s.servers[0].pool = Pool::training;
    REQUIRE_THROWS_WITH(validate(s),
                        Catch::Contains("only inference servers can be on loan"));
  }
  SECTION("negative duration") {
    s.jobs[2].duration = -1;
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("job 'c': duration"));
  }
  SECTION("per-worker demand larger than any server") {
    // A state may hold it (queued, unplaceable); a simulation refuses it.
    Job wide = s.jobs[2];
    wide.id = "wide";
    wide.gpus_per_worker = 16;
    s.jobs.push_back(wide);  // queued: no worker
    REQUIRE_NOTHROW(validate(s));
    REQUIRE_THROWS_WITH(
        validate_jobs(s.servers, s.jobs.size(),
                      [&s](std::size_t j) -> const Job& { return s.jobs[j]; }),
        Catch::Contains("more than any server has"));
  }
  SECTION("required GPU type") {
    s.jobs[1].gpu_type = "V100";
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("job 'b' (needs V100)"));
  }
  SECTION("a non-hetero job on two GPU types") {
    s.servers[1].gpu_type = "A10";
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("not hetero"));
    s.jobs[0].hetero = true;
    REQUIRE_NOTHROW(validate(s));
  }
}

TEST_CASE("the model's limits keep every sum of GPUs and times finite", "[model]") {
  ClusterState s = paper_reclaim_example();
  SECTION("a huge server, over-committed only in overflowing arithmetic") {
    s.servers[0].gpus = max_server_gpus + 1;
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("gpus must be at most 65536"));
  }
  SECTION("a job of more GPUs than the limit") {
    s.jobs[0].max_workers = static_cast<int>(max_job_gpus);
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("more than the limit of"));
  }
  SECTION("a time beyond 1e15 s") {
    s.jobs[0].estimated_duration = 1e308;
    REQUIRE_THROWS_WITH(validate(s),
                        Catch::Contains("estimated_duration must be at most"));
  }
  SECTION("too many GPUs in all") {
    for (int i = 0; i < 70; ++i)
      add_server(s, "big" + std::to_string(i), false, max_server_gpus);
    REQUIRE_THROWS_WITH(validate(s), Catch::Contains("GPUs in all"));
  }
}

TEST_CASE("validate_jobs reads jobs kept inside other records, as validate does",
          "[model]") {
  struct Wrapped {
    Job job;
    int extra = 0;
  };
  const ClusterState s = paper_reclaim_example();
  std::vector<Wrapped> records;
  for (const Job& j : s.jobs) records.push_back({j});
  const auto check = [&] {
    validate_jobs(s.servers, records.size(),
                  [&](std::size_t j) -> const Job& { return records[j].job; });
  };
  REQUIRE_NOTHROW(check());
  SECTION("the first bad record is named, in job order") {
    records[2].job.duration = -1;
    records[1].job.id = records[0].job.id;  // a duplicate before it
    REQUIRE_THROWS_WITH(check(), Catch::Contains("duplicate job id 'a'"));
  }
  SECTION("a bad value") {
    records[1].job.min_workers = 0;
    REQUIRE_THROWS_WITH(check(), Catch::Contains("job 'b': min_workers must be >= 1"));
  }
}

TEST_CASE("capacity: the inference servers a load spares") {
  REQUIRE(spare_servers(0.0, 10, 0.0) == 10);
  REQUIRE(spare_servers(0.3, 10, 0.0) == 7);   // 0.3 x 10 = 3.0000000000000004
  REQUIRE(spare_servers(0.25, 10, 0.0) == 7);  // ceil(2.5) = 3 kept
  REQUIRE(spare_servers(0.5, 10, 1.0) == 0);   // min(1, 0.5 x 2) = all kept
  REQUIRE(spare_servers(1.0, 0, 0.0) == 0);
}

TEST_CASE("capacity: the room of a job") {
  std::vector<Server> servers = {{"t1", Pool::training, 8, "V100", false},
                                 {"t2", Pool::training, 4, "V100", false},
                                 {"i1", Pool::inference, 8, "T4", true},
                                 {"i2", Pool::inference, 8, "T4", false},
                                 {"i3", Pool::inference, 2, "T4", false}};
  Job j;
  j.id = "j";
  j.gpus_per_worker = 4;
  j.duration = j.estimated_duration = 60.0;
  REQUIRE(job_room(servers, j, -1) == 3);  // V100: 2 + 1; T4 on loan: 2
  j.hetero = true;
  REQUIRE(job_room(servers, j, -1) == 5);  // both types
  REQUIRE(job_room(servers, j, 2) == 7);   // the two roomiest T4 servers: 2 + 2
  REQUIRE(job_room(servers, j, 0) == 3);   // training servers only
  j.hetero = false;
  j.gpu_type = "T4";
  REQUIRE(job_room(servers, j, 3) == 4);  // 2 + 2 + 0
  j.gpus_per_worker = 16;                 // wider than every server
  REQUIRE(job_room(servers, j, -1) == 0);
  ClusterState state{servers, {j, j}, {}};
  REQUIRE(job_rooms(state, {}) == std::vector<int>{0, 0});
  REQUIRE_THROWS_AS(job_rooms(state, {1}), std::invalid_argument);
}
