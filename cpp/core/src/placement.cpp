#include "aryl/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include "index.hpp"

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

Placer::Placer(const ClusterState& state, PlacementPolicy policy,
               const std::vector<double>& speed)
    : Placer(state, policy,
             std::make_shared<const ServerLayout>(state.servers, speed)) {}

Placer::Placer(const ClusterState& state, PlacementPolicy policy,
               std::shared_ptr<const ServerLayout> layout)
    : state_(state),
      policy_(policy),
      layout_(std::move(layout)),
      type_of_(layout_->type_of_),
      type_speed_(layout_->type_speed_),
      gpus_(layout_->gpus_),
      inference_(layout_->inference_),
      rank_(layout_->rank_),
      type_servers_(layout_->type_servers_),
      levels_(layout_->levels_),
      n_types_(static_cast<int>(layout_->names_.size())),
      type_free_(layout_->type_usable_),
      type_capacity_(layout_->type_usable_),
      lent_(layout_->holds_base_ && !layout_->lent_),
      free_(lent_ ? layout_->start_free_ : own_free_),
      servers_by_free_(lent_ ? layout_->servers_by_free_ : own_by_free_),
      index_(lent_ ? layout_->index_ : own_index_),
      total_free_(layout_->usable_gpus_),
      fixed_(lent_ ? layout_->base_workers_ : own_fixed_),
      flexible_(lent_ ? layout_->base_flexible_ : own_flexible_) {
  if (layout_->size() != state.servers.size()) {
    lent_ = false;  // nothing borrowed yet: the destructor has nothing to put back
    throw std::invalid_argument(
        fmt::format("the server layout has {} servers, the state {}", layout_->size(),
                    state.servers.size()));
  }
  const std::size_t n = state.servers.size();
  if (lent_) {
    layout_->lent_ = true;
    for (std::size_t t = 0; t < at(n_types_); ++t)
      type_free_[t] -= layout_->type_base_[t];
    total_free_ -= layout_->base_total_;
  } else {  // no base workers held, or another placer has them: kept one by one
    own_free_ = layout_->free_;
    own_fixed_.assign(n, 0);
    own_flexible_.assign(n, 0);
    own_by_free_.resize(at(n_types_));
  }
  pinned_.assign(state.jobs.size(), -1);
  required_.assign(state.jobs.size(), unresolved);
}

// Puts back the servers changed in the start the layout lent (see lent_).
Placer::~Placer() {
  if (!lent_) return;
  for (const Saved& s : saved_) {
    refile(s.server, free_[at(s.server)], s.free);
    unfile(s.server);
    free_[at(s.server)] = s.free;
    fixed_[at(s.server)] = s.fixed;
    flexible_[at(s.server)] = s.flexible;
    file(s.server);
    layout_->saved_[at(s.server)] = 0;
  }
  layout_->lent_ = false;
}

void Placer::save(int server) {
  if (!lent_ || layout_->saved_[at(server)] != 0) return;
  layout_->saved_[at(server)] = 1;
  saved_.push_back(
      {server, free_[at(server)], fixed_[at(server)], flexible_[at(server)]});
}

// Resolved on first use: most jobs of an epoch are running ones the placer
// never asks about, and a type's name is a string comparison per type.
int Placer::required(int job) const {
  int& cached = required_[at(job)];
  if (cached == unresolved) {
    const std::string& name = state_.jobs[at(job)].gpu_type;
    if (name.empty()) {
      cached = -1;
    } else {
      const int type = layout_->type_named(name);
      cached = type < 0 ? -2 : type;
    }
  }
  return cached;
}

int Placer::free_gpus() const { return total_free_; }

int Placer::room(const std::string& gpu_type, bool hetero, int gpus_per_worker) {
  if (gpus_per_worker > total_free_) return 0;
  if (index_.empty() && n_types_ > 0) build_index();
  if (!gpu_type.empty()) {
    const int type = layout_->type_named(gpu_type);
    return type < 0 ? 0 : slots(type, gpus_per_worker);
  }
  int most = 0;
  for (int t = 0; t < n_types_; ++t)
    most = hetero ? most + slots(t, gpus_per_worker)
                  : std::max(most, slots(t, gpus_per_worker));
  return most;
}

void Placer::add_jobs(std::size_t jobs) {
  pinned_.resize(jobs, -1);
  required_.resize(jobs, unresolved);
}

int Placer::job_type(int job) const {
  const int type = required(job);
  return type >= 0 ? type : pinned_[at(job)];
}

bool Placer::may_use(int job, int type) const {
  const int type_required = required(job);
  return type_required == -1 || type_required == type;
}

// Every usable server in its bucket of the best-fit index (see placement.hpp)
// and in the slot counts. Built at the first placement, not in the constructor:
// an epoch first keeps thousands of existing workers, which need neither. A
// placer lent its layout's start has it built already.
void Placer::build_index() {
  index_.resize(at(n_types_));
  for (std::size_t t = 0; t < at(n_types_); ++t) {
    servers_by_free_[t].assign(at(levels_[t]), 0);
    index_[t] = IndexSets(buckets_per_type * levels_[t],
                          static_cast<int>(type_servers_[t].size()));
  }
  for (int i = 0; i < static_cast<int>(free_.size()); ++i)
    if (free_[at(i)] >= 0) {
      ++servers_by_free_[at(type_of_[at(i)])][at(free_[at(i)])];
      file(i);
    }
}

// The bucket of a usable server: its type, pool, whether it hosts base and
// flexible workers. Within a bucket every part of best_server's key but the GPUs
// left over and the index is the same.
int Placer::bucket_of(int server) const {
  const int b = index_bucket(inference_[at(server)] != 0, fixed_[at(server)],
                             flexible_[at(server)]);
  return b * levels_[at(type_of_[at(server)])] + free_[at(server)];
}

// Index upkeep, once it is built (index_ empty: not yet).
void Placer::file(int server) {
  if (!index_.empty())
    index_[at(type_of_[at(server)])].insert(bucket_of(server), rank_[at(server)]);
}
void Placer::unfile(int server) {
  if (!index_.empty())
    index_[at(type_of_[at(server)])].erase(bucket_of(server), rank_[at(server)]);
}

// Moves a usable server from one bucket of the free-GPU index to another.
void Placer::refile(int server, int from, int to) {
  if (index_.empty()) return;
  std::vector<int>& count = servers_by_free_[at(type_of_[at(server)])];
  --count[at(from)];
  ++count[at(to)];
}

// Workers of d GPUs that fit on the usable servers of the type as they are now.
int Placer::slots(int type, int d) const {
  int n = 0;
  const std::vector<int>& count = servers_by_free_[at(type)];
  for (std::size_t f = at(d); f < count.size(); ++f)
    n += count[f] * (static_cast<int>(f) / d);
  return n;
}

// Workers of the job's size that fit on GPU type `type` (-1: every type it may use).
int Placer::slots_for(int job, int type) const {
  const int d = state_.jobs[at(job)].gpus_per_worker;
  if (type >= 0) return may_use(job, type) ? slots(type, d) : 0;
  int n = 0;
  for (int t = 0; t < n_types_; ++t)
    if (may_use(job, t)) n += slots(t, d);
  return n;
}

void Placer::add(int job, int server, bool flexible) {
  save(server);
  const int d = state_.jobs[at(job)].gpus_per_worker;
  refile(server, free_[at(server)], free_[at(server)] - d);
  unfile(server);
  free_[at(server)] -= d;
  total_free_ -= d;
  type_free_[at(type_of_[at(server)])] -= d;
  (flexible ? flexible_ : fixed_)[at(server)] += 1;
  file(server);
  if (!state_.jobs[at(job)].hetero) pinned_[at(job)] = type_of_[at(server)];
}

void Placer::remove(int job, int server, bool flexible) {
  save(server);
  const int d = state_.jobs[at(job)].gpus_per_worker;
  refile(server, free_[at(server)], free_[at(server)] + d);
  unfile(server);
  free_[at(server)] += d;
  total_free_ += d;
  type_free_[at(type_of_[at(server)])] += d;
  (flexible ? flexible_ : fixed_)[at(server)] -= 1;
  file(server);
}

void Placer::pin(const Worker& w) {
  if (!state_.jobs[at(w.job)].hetero) pinned_[at(w.job)] = type_of_[at(w.server)];
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
  const int type_required = required(job);
  if (type_required == -2 ||
      (type_required >= 0 && type_of_[at(server)] != type_required))
    return false;
  return type < 0 || type_of_[at(server)] == type;
}

int Placer::pool_rank(int job, int server, bool flexible) const {
  if (policy_ == PlacementPolicy::bfd) return 0;
  const Job& j = state_.jobs[at(job)];
  const bool inference = inference_[at(server)] != 0;
  const bool wants_inference = j.hetero ? flexible : j.elastic();
  return inference == wants_inference ? 0 : 1;
}

// Key: (faster first, pool preference, base/flexible kept apart, empty servers
// last, least GPUs left over, server index). Within one GPU type the speed term
// is constant, so for non-hetero jobs this is the paper's best fit with aryl's
// preferences; it only steers hetero jobs to the fastest free GPUs.
int Placer::best_server(int job, bool flexible, int type) const {
  if (scan_) return best_server_by_scan(job, flexible, type);
  using Key = std::tuple<double, int, int, int, int, int>;  // ..., server index
  Key best{0.0, 0, 0, 0, 0, -1};
  const int d = state_.jobs[at(job)].gpus_per_worker;
  // The best server of each bucket is its first with the fewest GPUs >= d free:
  // the least over buckets is the least over all servers a scan would find.
  for (int t = 0; t < n_types_; ++t) {
    if ((type >= 0 && t != type) || !may_use(job, t)) continue;
    const IndexSets& sets = index_[at(t)];
    const int levels = levels_[at(t)];
    for (int b = 0; b < buckets_per_type; ++b) {
      for (int f = d; f < levels; ++f) {
        if (sets.empty(b * levels + f)) continue;
        const int s = type_servers_[at(t)][at(sets.first(b * levels + f))];
        const int mixed = policy_ == PlacementPolicy::aryl &&
                          (flexible ? fixed_[at(s)] : flexible_[at(s)]) > 0;
        const int empty = free_[at(s)] == gpus_[at(s)];
        const Key key{-type_speed_[at(t)],
                      pool_rank(job, s, flexible),
                      mixed,
                      empty,
                      free_[at(s)] - d,
                      s};
        if (std::get<5>(best) < 0 || key < best) best = key;
        break;
      }
    }
  }
  return std::get<5>(best);
}

// The same choice by scanning every server (the reference the tests compare with).
int Placer::best_server_by_scan(int job, bool flexible, int type) const {
  using Key = std::tuple<double, int, int, int, int>;
  Key best{0.0, 0, 0, 0, 0};
  int chosen = -1;
  const int d = state_.jobs[at(job)].gpus_per_worker;
  for (int s = 0; s < static_cast<int>(free_.size()); ++s) {
    if (!allowed(job, s, type)) continue;
    const int mixed = policy_ == PlacementPolicy::aryl &&
                      (flexible ? fixed_[at(s)] : flexible_[at(s)]) > 0;
    const int empty = free_[at(s)] == gpus_[at(s)];
    const Key key{-type_speed_[at(type_of_[at(s)])], pool_rank(job, s, flexible), mixed,
                  empty, free_[at(s)] - d};
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
    if (type_speed_[at(a)] != type_speed_[at(b)])
      return type_speed_[at(a)] > type_speed_[at(b)];
    return (a == preferred) > (b == preferred);
  });
  return types;
}

bool Placer::place(int job, int count, bool flexible, std::vector<Worker>& out,
                   int type) {
  const Job& j = state_.jobs[at(job)];
  if (count * j.gpus_per_worker > total_free_)
    return false;  // cheap reject: long queues
  if (index_.empty() && n_types_ > 0) build_index();
  const int was_pinned = pinned_[at(job)];
  std::vector<int> types;
  if (type >= 0) {
    if (!may_use(job, type) ||
        (!j.hetero && job_type(job) >= 0 && job_type(job) != type))
      return false;
    types.push_back(type);
  } else if (j.hetero || job_type(job) >= 0 || required(job) == -2) {
    types.push_back(j.hetero ? -1 : job_type(job));
  } else {
    types = type_order(job, flexible);
  }
  for (int t : types) {
    if (t >= 0 && count * j.gpus_per_worker > type_free_[at(t)]) continue;
    // Each worker placed takes exactly one slot, so best fit succeeds iff there
    // are `count` slots: a job that cannot fit is refused without a scan.
    if (slots_for(job, t) < count) continue;
    const std::size_t first = out.size();  // placed here; taken back if too few fit
    for (int k = 0; k < count; ++k) {
      const int s = best_server(job, flexible, t);
      if (s < 0) break;
      add(job, s, flexible);
      out.push_back({job, s, flexible});
    }
    if (out.size() - first == static_cast<std::size_t>(count)) return true;
    for (std::size_t k = first; k < out.size(); ++k)
      remove(job, out[k].server, flexible);
    out.resize(first);
    pinned_[at(job)] = was_pinned;
  }
  return false;
}

}  // namespace aryl
