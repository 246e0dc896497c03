#include "aryl/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
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

Placer::Placer(const ClusterState& state, PlacementPolicy policy, const std::vector<double>& speed)
    : state_(state), policy_(policy) {
  std::map<std::string, int> types;
  for (std::size_t i = 0; i < state.servers.size(); ++i) {
    const Server& s = state.servers[i];
    const auto [it, added] = types.try_emplace(s.gpu_type, n_types_);
    if (added) {
      ++n_types_;
      type_speed_.push_back(speed.empty() ? 1.0 : speed[i]);
      type_free_.push_back(0);
      type_capacity_.push_back(0);
    }
    type_of_.push_back(it->second);
    const bool usable = s.pool == Pool::training || s.on_loan;
    free_.push_back(usable ? s.gpus : -1);
    total_free_ += usable ? s.gpus : 0;
    type_free_[at(it->second)] += usable ? s.gpus : 0;
    type_capacity_[at(it->second)] += usable ? s.gpus : 0;
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

bool Placer::may_use(int job, int type) const {
  const int required = required_[at(job)];
  return required == -1 || required == type;
}

void Placer::add(int job, int server, bool flexible) {
  const int d = state_.jobs[at(job)].gpus_per_worker;
  free_[at(server)] -= d;
  total_free_ -= d;
  type_free_[at(type_of_[at(server)])] -= d;
  (flexible ? flexible_ : fixed_)[at(server)] += 1;
  if (!state_.jobs[at(job)].hetero) pinned_[at(job)] = type_of_[at(server)];
}

void Placer::remove(int job, int server, bool flexible) {
  const int d = state_.jobs[at(job)].gpus_per_worker;
  free_[at(server)] += d;
  total_free_ += d;
  type_free_[at(type_of_[at(server)])] += d;
  (flexible ? flexible_ : fixed_)[at(server)] -= 1;
}

void Placer::undo(const std::vector<Worker>& placed) {
  for (const Worker& w : placed) {
    remove(w.job, w.server, w.flexible);
    pinned_[at(w.job)] = -1;
  }
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

// Key: (faster first, pool preference, base/flexible kept apart, empty servers
// last, least GPUs left over, server index). Within one GPU type the speed term
// is constant, so for non-hetero jobs this is the paper's best fit with aryl's
// preferences; it only steers hetero jobs to the fastest free GPUs.
int Placer::best_server(int job, bool flexible, int type) const {
  using Key = std::tuple<double, int, int, int, int>;
  Key best{0.0, 0, 0, 0, 0};
  int chosen = -1;
  const int d = state_.jobs[at(job)].gpus_per_worker;
  for (int s = 0; s < static_cast<int>(free_.size()); ++s) {
    if (!allowed(job, s, type)) continue;
    const int mixed = policy_ == PlacementPolicy::aryl &&
                      (flexible ? fixed_[at(s)] : flexible_[at(s)]) > 0;
    const int empty = free_[at(s)] == state_.servers[at(s)].gpus;
    const Key key{-type_speed_[at(type_of_[at(s)])], pool_rank(job, s, flexible), mixed, empty,
                  free_[at(s)] - d};
    if (chosen < 0 || key < best) {
      best = key;
      chosen = s;
    }
  }
  return chosen;
}

// GPU types to try for a non-hetero job not yet on one: fastest first; among
// equally fast types, the type of the job's most preferred server first.
std::vector<int> Placer::type_order(int job, bool flexible) const {
  std::vector<int> types;
  for (int t = 0; t < n_types_; ++t)
    if (may_use(job, t)) types.push_back(t);
  const int first = best_server(job, flexible, -1);
  const int preferred = first < 0 ? -1 : type_of_[at(first)];
  std::stable_sort(types.begin(), types.end(), [&](int a, int b) {
    if (type_speed_[at(a)] != type_speed_[at(b)]) return type_speed_[at(a)] > type_speed_[at(b)];
    return (a == preferred) > (b == preferred);
  });
  return types;
}

bool Placer::place(int job, int count, bool flexible, std::vector<Worker>& out, int type) {
  const Job& j = state_.jobs[at(job)];
  if (count * j.gpus_per_worker > total_free_) return false;  // cheap reject: long queues
  const int was_pinned = pinned_[at(job)];
  std::vector<int> types;
  if (type >= 0) {
    if (!may_use(job, type) || (!j.hetero && job_type(job) >= 0 && job_type(job) != type))
      return false;
    types.push_back(type);
  } else if (j.hetero || job_type(job) >= 0 || required_[at(job)] == -2) {
    types.push_back(j.hetero ? -1 : job_type(job));
  } else {
    types = type_order(job, flexible);
  }
  for (int t : types) {
    if (t >= 0 && count * j.gpus_per_worker > type_free_[at(t)]) continue;
    std::vector<Worker> placed;
    for (int k = 0; k < count; ++k) {
      const int s = best_server(job, flexible, t);
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
