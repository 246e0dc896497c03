// The servers as the placer reads them, kept across epochs by a caller that
// places on the same servers again and again (the simulator): their fixed facts,
// their loans, the base workers they host and, from those, the best-fit index a
// placer starts from. A placer then copies it instead of reading every server
// record, keeping every base worker and filing every server at each epoch.
#pragma once

#include <string>
#include <vector>

#include "aryl/index_set.hpp"
#include "aryl/model.hpp"

namespace aryl {

// Bucket of the best-fit index (see Placer): pool x hosts base workers x hosts
// flexible workers.
inline constexpr int buckets_per_type = 8;
inline int index_bucket(bool inference, int fixed, int flexible) {
  return (inference ? 4 : 0) + (fixed > 0 ? 2 : 0) + (flexible > 0 ? 1 : 0);
}

// Type names are short: compared inline, not by a call to memcmp per server.
inline bool same_type_name(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k] != b[k]) return false;
  return true;
}

class ServerLayout {
 public:
  // `speed`: relative GPU speed per server (empty = all 1.0); a type's speed is
  // its first server's. Loans as the records say.
  ServerLayout(const std::vector<Server>& servers, const std::vector<double>& speed);

  // Lends (usable) or returns (not usable) an inference server: its GPUs join
  // or leave the free capacity a new placer starts from.
  void set_usable(int server, bool usable);
  [[nodiscard]] bool usable(int server) const {
    return free_[static_cast<std::size_t>(server)] >= 0;
  }
  [[nodiscard]] std::size_t size() const { return free_.size(); }
  [[nodiscard]] int n_types() const { return static_cast<int>(names_.size()); }
  [[nodiscard]] int type_of(int server) const {
    return type_of_[static_cast<std::size_t>(server)];
  }
  // The id of the GPU type of that name, -1 if no server has it.
  [[nodiscard]] int type_named(const std::string& name) const;

  // From now on the layout holds base workers, for a caller that keeps them up
  // to date as its jobs' workers change: a placer on this layout then starts
  // with them in place (and its index filed) instead of keeping each one. They
  // must be exactly the state's base workers (Epoch's rule: a running job's
  // first min_workers not marked flexible, then marked ones; every worker under
  // a policy that does not scale elastic jobs), on usable servers.
  void hold_base_workers();
  [[nodiscard]] bool holds_base() const { return holds_base_; }
  // One base worker of `gpus` GPUs starts (+1) or stops (-1) on the server;
  // `flexible` is its mark (a base worker marked flexible counts as one, as
  // Placer::keep counts it).
  void base_worker(int server, int gpus, bool flexible, int sign);
  [[nodiscard]] int base_gpus(int server) const {
    return base_gpus_[static_cast<std::size_t>(server)];
  }
  [[nodiscard]] int base_workers(int server, bool flexible) const {
    return (flexible ? base_flexible_
                     : base_workers_)[static_cast<std::size_t>(server)];
  }
  // The set of the index a usable server is filed in (bucket x levels + free
  // GPUs), with its base workers only.
  [[nodiscard]] int filed_set(int server) const;

 private:
  friend class Placer;
  void file(int server, int sign);

  std::vector<std::string> names_;  // type id -> name, in order of first server
  std::vector<int> type_of_;        // server -> GPU type id
  std::vector<double> type_speed_;  // type -> relative speed
  std::vector<int> gpus_;           // server -> GPUs
  std::vector<char> inference_;     // server -> in the inference pool
  std::vector<int> rank_;           // server -> rank within its type
  std::vector<std::vector<int>> type_servers_;  // type -> servers, by rank
  std::vector<int> levels_;                     // type -> most GPUs of one server + 1
  std::vector<int> free_;                       // server -> its GPUs if usable, else -1
  std::vector<int> type_usable_;                // type -> GPUs of its usable servers
  int usable_gpus_ = 0;                         // GPUs of all usable servers
  // Base workers (once held): per server, their GPUs and how many are
  // unmarked and marked flexible; per type and overall, their GPUs; and the
  // usable servers filed as a placer files them, with base workers only.
  bool holds_base_ = false;
  std::vector<int> base_gpus_;
  std::vector<int> type_base_;
  int base_total_ = 0;
  // What a placer starts from, with the base workers in place: per server the
  // base workers (unmarked, marked flexible) and the GPUs they leave free, and
  // the index. Lent to one placer at a time, which changes them in place and
  // puts back the servers it changed when it ends (Placer::lent_): at 100,000
  // servers a copy per epoch cost more than the epoch's placements.
  mutable std::vector<int> base_workers_;
  mutable std::vector<int> base_flexible_;
  mutable std::vector<int> start_free_;   // free_ - base_gpus_
  mutable std::vector<IndexSets> index_;  // type -> sets, as Placer's
  mutable std::vector<std::vector<int>>
      servers_by_free_;              // type -> free GPUs -> servers
  mutable std::vector<char> saved_;  // server -> changed by the placer lent them
  mutable bool lent_ = false;
};

}  // namespace aryl
