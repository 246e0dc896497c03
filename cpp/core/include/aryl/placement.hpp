// Where workers go (paper §5.3): best fit with aryl's preferences.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aryl/index_set.hpp"
#include "aryl/model.hpp"
#include "aryl/server_layout.hpp"

namespace aryl {

enum class PlacementPolicy {
  aryl,  // pool and role preferences below, then best fit
  bfd,   // plain best fit, no preferences (the paper's ablation)
};

PlacementPolicy parse_placement_policy(std::string_view name);

// The free GPUs of every usable server (training, or inference on loan) and what
// each hosts, updated as workers are placed. For each worker, candidate servers
// are ordered by (pool preference, role preference, empty last, leftover GPUs
// after placing, server index), i.e. best fit into non-empty servers first.
// Under `aryl`: elastic jobs prefer on-loan inference servers and inelastic jobs
// training servers; hetero jobs put base workers on training and flexible ones on
// inference servers; base (fixed) and flexible workers avoid sharing a server so
// that a reclaim can take flexible-only servers without preempting anything.
// A job that requires a GPU type uses only servers of that type; a non-hetero job
// keeps all its workers on one GPU type.
//
// Speed comes before every preference: a non-hetero job not yet on a GPU type
// tries the types fastest first (its preferred pool's type first among equally
// fast ones), and a hetero job's workers go to the fastest servers that fit. A
// job is thus never put on slower GPUs while faster ones it may use are free.
class Placer {
 public:
  // `speed`: relative GPU speed per server (empty = all 1.0); servers of one GPU
  // type are taken to share one speed (the first server's).
  Placer(const ClusterState& state, PlacementPolicy policy,
         const std::vector<double>& speed = {});
  // The same on a layout of state.servers read before (their loans included):
  // no server record is read. Throws if the server counts differ.
  Placer(const ClusterState& state, PlacementPolicy policy,
         std::shared_ptr<const ServerLayout> layout);
  // A placer lent its layout's start puts back what it changed.
  ~Placer();
  Placer(const Placer&) = delete;
  Placer& operator=(const Placer&) = delete;
  Placer(Placer&&) = delete;
  Placer& operator=(Placer&&) = delete;

  // Adds an existing worker (no checks beyond capacity); false if it no longer fits.
  bool keep(const Worker& worker);
  // Whether the state's base workers are in place already (from the layout, lent
  // to this placer: see lent_): then pin() stands for keep() for each of them.
  [[nodiscard]] bool holds_base() const { return lent_; }
  // What keep() does for a worker already in place: ties its job to the type.
  void pin(const Worker& worker);
  // Places `count` workers of `job`, on GPU type `type` only if it is >= 0; all
  // or nothing. Appends them to `out`.
  bool place(int job, int count, bool flexible, std::vector<Worker>& out,
             int type = -1);

  [[nodiscard]] int free_gpus() const;
  // The most workers of `gpus_per_worker` GPUs a job without workers that
  // requires GPU type `gpu_type` ("" = any) could be placed on now: place()
  // refuses more (a non-hetero job keeps to one type, a hetero one spans them).
  [[nodiscard]] int room(const std::string& gpu_type, bool hetero, int gpus_per_worker);
  // The state now holds `jobs` jobs, those beyond the last count new and queued
  // (a kernel pulling queued jobs: ScheduleOptions::feed).
  void add_jobs(std::size_t jobs);
  [[nodiscard]] int free_gpus(int type) const {
    return type_free_[static_cast<std::size_t>(type)];
  }
  [[nodiscard]] int n_types() const { return n_types_; }
  [[nodiscard]] int type_of(int server) const {
    return type_of_[static_cast<std::size_t>(server)];
  }
  [[nodiscard]] double type_speed(int type) const {
    return type_speed_[static_cast<std::size_t>(type)];
  }
  // Removes workers just placed for a job that had none before (unpins it).
  void undo(const std::vector<Worker>& placed);
  // GPUs of usable servers of the type, free or not.
  [[nodiscard]] int capacity(int type) const {
    return type_capacity_[static_cast<std::size_t>(type)];
  }
  // The GPU type the job may use: required or pinned, -1 if any.
  [[nodiscard]] int job_type(int job) const;
  // Whether the job may run on GPU type `type` at all.
  [[nodiscard]] bool may_use(int job, int type) const;
  // Test hook: choose servers by scanning them all instead of by the index
  // (the same choices, slower); the tests check both agree.
  void use_scan(bool on) { scan_ = on; }

 private:
  [[nodiscard]] int required(int job) const;
  [[nodiscard]] bool allowed(int job, int server, int type) const;
  [[nodiscard]] int pool_rank(int job, int server, bool flexible) const;
  int best_server(int job, bool flexible, int type) const;
  [[nodiscard]] int best_server_by_scan(int job, bool flexible, int type) const;
  void add(int job, int server, bool flexible);
  void remove(int job, int server, bool flexible);
  void refile(int server, int from, int to);
  void build_index();
  [[nodiscard]] int bucket_of(int server) const;
  void file(int server);
  void unfile(int server);
  [[nodiscard]] int slots(int type, int d) const;
  [[nodiscard]] int slots_for(int job, int type) const;
  [[nodiscard]] std::vector<int> type_order(int job, bool flexible) const;

  const ClusterState& state_;
  PlacementPolicy policy_;
  // The servers' fixed facts (shared by the placers of one caller), then
  // shorthands for its arrays.
  std::shared_ptr<const ServerLayout> layout_;
  const std::vector<int>& type_of_;        // server -> GPU type id
  const std::vector<double>& type_speed_;  // type -> relative speed
  const std::vector<int>& gpus_;           // server -> GPUs
  const std::vector<char>& inference_;     // server -> in the inference pool
  const std::vector<int>& rank_;           // server -> rank within its type
  const std::vector<std::vector<int>>& type_servers_;  // type -> servers, by rank
  const std::vector<int>& levels_;  // type -> most GPUs of one server + 1
  int n_types_ = 0;
  std::vector<int> type_free_;      // type -> free GPUs on usable servers
  std::vector<int> type_capacity_;  // type -> GPUs of usable servers
  // A layout holding the base workers lends its start (ServerLayout) to one
  // placer at a time: the per-server arrays and the index below are then the
  // layout's, changed in place, and the servers changed are saved first
  // (`saved_`: server, free GPUs, base and flexible workers) and put back when
  // the placer ends. Otherwise they are the placer's own copies.
  bool lent_ = false;
  struct Saved {
    int server, free, fixed, flexible;
  };
  std::vector<Saved> saved_;
  void save(int server);
  std::vector<int> own_free_, own_fixed_, own_flexible_;
  std::vector<std::vector<int>> own_by_free_;
  std::vector<IndexSets> own_index_;
  std::vector<int>& free_;  // server -> free GPUs (-1: not usable)
  // type -> free GPUs -> how many usable servers have that many free
  std::vector<std::vector<int>>& servers_by_free_;
  // Best-fit index: bucket (type x pool x hosts base x hosts flexible workers)
  // -> free GPUs -> usable servers, by their rank among the servers of their
  // type (rank order is index order, so the smallest rank is the lowest index).
  bool scan_ = false;
  std::vector<IndexSets>& index_;  // type -> set bucket x levels + free GPUs
  int total_free_ = 0;             // sum of the usable servers' free GPUs
  std::vector<int>& fixed_;        // server -> base workers hosted
  std::vector<int>& flexible_;     // server -> flexible workers hosted
  std::vector<int> pinned_;        // job -> GPU type id its workers use, or -1
  // job -> GPU type id it requires, -1 any, -2 none exists (see required)
  static constexpr int unresolved = -3;
  mutable std::vector<int> required_;
};

}  // namespace aryl
