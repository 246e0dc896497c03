#include "aryl/placement.hpp"

#include <fmt/format.h>

#include <limits>
#include <map>
#include <stdexcept>

#include "index.hpp"
#include <tuple>

namespace aryl {
namespace {

using detail::at;

}  // namespace

PlacementPolicy parse_placement_policy(std::string_view name) {
  if (name == "aryl") return PlacementPolicy::aryl;
  if (name == "bfd") return PlacementPolicy::bfd;
  throw std::invalid_argument(
      fmt::format("unknown placement '{}'; expected one of: aryl, bfd", name));
}

Placer::Placer(const ClusterState& state, PlacementPolicy policy)
    : state_(state), policy_(policy) {
  std::map<std::string, int> types;
  for (const Server& s : state.servers) {
    const auto [it, added] = types.try_emplace(s.gpu_type, n_types_);
    n_types_ += added ? 1 : 0;
    type_of_.push_back(it->second);
    const bool usable = s.pool == Pool::training || s.on_loan;
    free_.push_back(usable ? s.gpus : -1);
    total_free_ += usable ? s.gpus : 0;
  }
  fixed_.assign(state.servers.size(), 0);
  flexible_.assign(state.servers.size(), 0);
  pinned_.assign(state.jobs.size(), -1);
  for (const Job& j : state.jobs) {
    if (j.gpu_type.empty()) {
      required_.push_back(-1);
    } else {
      const auto it = types.find(j.gpu_type);
      required_.push_back(it == types.end() ? -2 : it->second);
    }
  }
}

int Placer::free_gpus() const { return total_free_; }

int Placer::job_type(int job) const {
  return required_[at(job)] >= 0 ? required_[at(job)] : pinned_[at(job)];
}

void Placer::add(int job, int server, bool flexible) {
  free_[at(server)] -= state_.jobs[at(job)].gpus_per_worker;
  total_free_ -= state_.jobs[at(job)].gpus_per_worker;
  (flexible ? flexible_ : fixed_)[at(server)] += 1;
  if (!state_.jobs[at(job)].hetero) pinned_[at(job)] = type_of_[at(server)];
}

void Placer::remove(int job, int server, bool flexible) {
  free_[at(server)] += state_.jobs[at(job)].gpus_per_worker;
  total_free_ += state_.jobs[at(job)].gpus_per_worker;
  (flexible ? flexible_ : fixed_)[at(server)] -= 1;
}

bool Placer::keep(const Worker& w) {
  if (free_[at(w.server)] < state_.jobs[at(w.job)].gpus_per_worker) return false;
  add(w.job, w.server, w.flexible);
  return true;
}

bool Placer::allowed(int job, int server, int type) const {
  const Job& j = state_.jobs[at(job)];
  if (free_[at(server)] < j.gpus_per_worker) return false;
  const int required = required_[at(job)];
  if (required == -2 || (required >= 0 && type_of_[at(server)] != required)) return false;
  return type < 0 || type_of_[at(server)] == type;
}

int Placer::pool_rank(int job, int server, bool flexible) const {
  if (policy_ == PlacementPolicy::bfd) return 0;
  const Job& j = state_.jobs[at(job)];
  const bool inference = state_.servers[at(server)].pool == Pool::inference;
  const bool wants_inference = j.hetero ? flexible : j.elastic();
  return inference == wants_inference ? 0 : 1;
}

int Placer::best_server(int job, bool flexible, int type) const {
  using Key = std::tuple<int, int, int, int>;
  Key best{std::numeric_limits<int>::max(), 0, 0, 0};
  int chosen = -1;
  const int d = state_.jobs[at(job)].gpus_per_worker;
  for (int s = 0; s < static_cast<int>(free_.size()); ++s) {
    if (!allowed(job, s, type)) continue;
    const int mixed = policy_ == PlacementPolicy::aryl &&
                      (flexible ? fixed_[at(s)] : flexible_[at(s)]) > 0;
    const int empty = free_[at(s)] == state_.servers[at(s)].gpus;
    const Key key{pool_rank(job, s, flexible), mixed, empty, free_[at(s)] - d};
    if (chosen < 0 || key < best) {
      best = key;
      chosen = s;
    }
  }
  return chosen;
}

bool Placer::place(int job, int count, bool flexible, std::vector<Worker>& out) {
  const Job& j = state_.jobs[at(job)];
  if (count * j.gpus_per_worker > total_free_) return false;  // cheap reject: long queues
  const int was_pinned = pinned_[at(job)];
  // Non-hetero jobs not yet pinned to a GPU type try each type; the first worker's
  // most preferred server decides which type is tried first.
  std::vector<int> types;
  if (j.hetero || job_type(job) >= 0 || required_[at(job)] == -2) {
    types.push_back(j.hetero ? -1 : job_type(job));
  } else {
    const int first = best_server(job, flexible, -1);
    if (first < 0) return false;
    types.push_back(type_of_[at(first)]);
    for (int t = 0; t < n_types_; ++t)
      if (t != types.front()) types.push_back(t);
  }
  for (int type : types) {
    std::vector<Worker> placed;
    for (int k = 0; k < count; ++k) {
      const int s = best_server(job, flexible, type);
      if (s < 0) break;
      add(job, s, flexible);
      placed.push_back({job, s, flexible});
    }
    if (static_cast<int>(placed.size()) == count) {
      out.insert(out.end(), placed.begin(), placed.end());
      return true;
    }
    for (const Worker& w : placed) remove(w.job, w.server, w.flexible);
    pinned_[at(job)] = was_pinned;
  }
  return false;
}

}  // namespace aryl
