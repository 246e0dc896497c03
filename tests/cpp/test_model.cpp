#include <catch2/catch.hpp>

#include <string>

#include "aryl/model.hpp"
#include "fixtures.hpp"

using namespace aryl;
using namespace aryl::test;

TEST_CASE("a valid state passes validation", "[model]") {
  REQUIRE_NOTHROW(validate(paper_reclaim_example()));
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
    s.jobs[2].gpus_per_worker = 16;
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
