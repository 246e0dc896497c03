// The placer's best-fit index chooses exactly the servers a scan of every
// server chooses, through random placements, refusals and removals.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "aryl/placement.hpp"
#include "aryl/rng.hpp"

using namespace aryl;

namespace {

int below(Rng& rng, int n) {
  return static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
}

// Servers of 4 or 8 GPUs, V100 / T4 / A100, training or inference (half of
// those on loan); jobs of 1-8 GPUs per worker, some requiring a type, some
// hetero, some elastic.
ClusterState random_state(Rng& rng) {
  const char* types[] = {"V100", "T4", "A100"};
  ClusterState s;
  const int n_servers = 1 + below(rng, 30);
  for (int i = 0; i < n_servers; ++i) {
    const bool inference = below(rng, 2) == 1;
    const Pool pool = inference ? Pool::inference : Pool::training;
    s.servers.push_back({"s" + std::to_string(i), pool, below(rng, 3) == 0 ? 4 : 8,
                         types[below(rng, 3)], inference && below(rng, 2) == 1});
  }
  for (int j = 0; j < 40; ++j) {
    Job job;
    job.id = "j" + std::to_string(j);
    job.gpus_per_worker = 1 << below(rng, 4);
    job.min_workers = 1 + below(rng, 3);
    job.max_workers = job.min_workers + below(rng, 3);
    job.duration = job.estimated_duration = 100.0;
    const int kind = below(rng, 6);
    if (kind == 0) job.gpu_type = types[below(rng, 3)];
    if (kind == 1) job.gpu_type = "H100";  // no such server: never placed
    job.hetero = kind == 2;
    s.jobs.push_back(job);
  }
  return s;
}

// Per-server GPU speeds: T4 at a quarter of the training GPU.
std::vector<double> t4_at_a_quarter(const ClusterState& state) {
  std::vector<double> speed;
  for (const Server& s : state.servers)
    speed.push_back(s.gpu_type == "T4" ? 0.25 : 1.0);
  return speed;
}

PlacementPolicy random_policy(Rng& rng) {
  return below(rng, 3) == 0 ? PlacementPolicy::bfd : PlacementPolicy::aryl;
}

// A random call of Placer::place: `count` workers of `job`, on one GPU type one
// time in four (else any).
struct Request {
  int job, count;
  bool flexible;
  int type;
};
Request random_request(Rng& rng, const ClusterState& state, int n_types) {
  return {below(rng, static_cast<int>(state.jobs.size())), 1 + below(rng, 3),
          below(rng, 2) == 1, below(rng, 4) == 0 ? below(rng, n_types) : -1};
}

// Random placements on both placers: the same servers, the same free GPUs.
void same_choices(Rng& rng, const ClusterState& state, Placer& fresh, Placer& held,
                  int instance) {
  std::vector<Worker> a, b;
  for (int step = 0; step < 40; ++step) {
    INFO("instance " << instance << " step " << step);
    const auto [job, count, flexible, type] =
        random_request(rng, state, fresh.n_types());
    REQUIRE(held.job_type(job) == fresh.job_type(job));
    const bool placed = fresh.place(job, count, flexible, a, type);
    REQUIRE(held.place(job, count, flexible, b, type) == placed);
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) REQUIRE(a[k].server == b[k].server);
    REQUIRE(held.free_gpus() == fresh.free_gpus());
    for (int t = 0; t < fresh.n_types(); ++t) {
      REQUIRE(held.free_gpus(t) == fresh.free_gpus(t));
      REQUIRE(held.capacity(t) == fresh.capacity(t));
    }
  }
}

}  // namespace

TEST_CASE("best-fit index chooses what a scan of every server chooses", "[placement]") {
  Rng rng(4242);
  for (int instance = 0; instance < 300; ++instance) {
    const ClusterState state = random_state(rng);
    const std::vector<double> speed = t4_at_a_quarter(state);
    const PlacementPolicy policy = random_policy(rng);
    const std::vector<double> chosen =
        below(rng, 2) == 0 ? speed : std::vector<double>{};
    Placer indexed(state, policy, chosen);
    Placer scan(state, policy, chosen);
    scan.use_scan(true);
    std::vector<Worker> a, b;
    for (int step = 0; step < 60; ++step) {
      INFO("instance " << instance << " step " << step);
      const auto [job, count, flexible, type] =
          random_request(rng, state, indexed.n_types());
      const bool placed = indexed.place(job, count, flexible, a, type);
      REQUIRE(scan.place(job, count, flexible, b, type) == placed);
      REQUIRE(a.size() == b.size());
      for (std::size_t k = 0; k < a.size(); ++k) REQUIRE(a[k].server == b[k].server);
      REQUIRE(indexed.free_gpus() == scan.free_gpus());
      if (placed && below(rng, 3) == 0) {  // take the job's new workers away again
        const std::vector<Worker> last(a.end() - count, a.end());
        indexed.undo(last);
        scan.undo(last);
        a.resize(a.size() - static_cast<std::size_t>(count));
        b.resize(b.size() - static_cast<std::size_t>(count));
      }
    }
  }
}

// The simulator's placer starts from a layout kept across epochs (loans changed
// by set_usable, base workers held by base_worker, the index filed as they
// change) instead of reading the records, keeping each worker and filing every
// server: the same choices, checked on random clusters.
TEST_CASE("a placer on a kept layout chooses what a fresh placer chooses",
          "[placement]") {
  Rng rng(777);
  for (int instance = 0; instance < 300; ++instance) {
    const ClusterState state = random_state(rng);
    const std::vector<double> speed = t4_at_a_quarter(state);
    const PlacementPolicy policy = random_policy(rng);
    // The layout starts with nothing lent and follows the records' loans.
    std::vector<Server> unlent = state.servers;
    for (Server& s : unlent) s.on_loan = false;
    auto layout = std::make_shared<ServerLayout>(unlent, speed);
    const bool early = below(rng, 2) == 0;  // index kept through the loans too
    if (early) layout->hold_base_workers();
    for (std::size_t s = 0; s < state.servers.size(); ++s) {
      const int server = static_cast<int>(s);
      if (below(rng, 4) == 0) layout->set_usable(server, true);  // lent, then back
      layout->set_usable(
          server, state.servers[s].pool == Pool::training || state.servers[s].on_loan);
    }
    if (!early) layout->hold_base_workers();
    // Base workers placed by a fresh placer, then held by the layout.
    Placer first(state, policy, speed);
    std::vector<Worker> kept;
    for (int k = 0; k < 8; ++k)
      first.place(below(rng, static_cast<int>(state.jobs.size())), 1 + below(rng, 2),
                  below(rng, 4) == 0, kept);
    Placer fresh(state, policy, speed);
    for (const Worker& w : kept) {
      const int gpus = state.jobs[static_cast<std::size_t>(w.job)].gpus_per_worker;
      layout->base_worker(w.server, gpus, w.flexible, +1);
      REQUIRE(fresh.keep(w));
    }
    {
      Placer held(state, policy, layout);
      for (const Worker& w : kept) held.pin(w);
      REQUIRE(held.holds_base());
      REQUIRE(held.free_gpus() == fresh.free_gpus());
      // Workers kept before the first placement (refiled when the index is copied).
      for (int k = below(rng, 4); k > 0; --k) {
        const Worker w{below(rng, static_cast<int>(state.jobs.size())),
                       below(rng, static_cast<int>(state.servers.size())),
                       below(rng, 2) == 0};
        REQUIRE(held.keep(w) == fresh.keep(w));
      }
      same_choices(rng, state, fresh, held, instance);
    }
    // The layout lent its start to `held`, which put back what it changed: the
    // next placer starts as `held` did. One made while that one holds the start
    // is not lent it: it keeps the base workers itself, as without a layout.
    Placer again(state, policy, layout);
    Placer beside(state, policy, layout);
    REQUIRE(again.holds_base());
    REQUIRE(!beside.holds_base());
    Placer fresh_again(state, policy, speed);
    Placer fresh_beside(state, policy, speed);
    for (const Worker& w : kept) {
      again.pin(w);
      REQUIRE(beside.keep(w));
      REQUIRE(fresh_again.keep(w));
      REQUIRE(fresh_beside.keep(w));
    }
    same_choices(rng, state, fresh_again, again, instance);
    same_choices(rng, state, fresh_beside, beside, instance);
  }
}
