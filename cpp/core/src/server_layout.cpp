#include "aryl/server_layout.hpp"

#include <algorithm>

#include "index.hpp"

namespace aryl {

using detail::at;

// One pass over the servers, reading each record once: the placers read these
// arrays, not the records.
ServerLayout::ServerLayout(const std::vector<Server>& servers,
                           const std::vector<double>& speed) {
  const std::size_t n = servers.size();
  type_of_.resize(n);
  free_.resize(n);
  gpus_.resize(n);
  inference_.resize(n);
  rank_.resize(n);
  int type = -1;  // the previous server's: servers of one type usually come together
  for (std::size_t i = 0; i < n; ++i) {
    const Server& s = servers[i];
    if (type < 0 || !same_type_name(names_[at(type)], s.gpu_type))
      type = type_named(s.gpu_type);
    if (type < 0) {
      type = static_cast<int>(names_.size());
      names_.push_back(s.gpu_type);
      type_speed_.push_back(speed.empty() ? 1.0 : speed[i]);
      type_usable_.push_back(0);
      type_servers_.emplace_back();
      levels_.push_back(1);
    }
    type_of_[i] = type;
    const bool usable = s.pool == Pool::training || s.on_loan;
    free_[i] = usable ? s.gpus : -1;
    gpus_[i] = s.gpus;
    inference_[i] = s.pool == Pool::inference ? 1 : 0;
    std::vector<int>& members = type_servers_[at(type)];
    rank_[i] = static_cast<int>(members.size());
    members.push_back(static_cast<int>(i));
    levels_[at(type)] = std::max(levels_[at(type)], s.gpus + 1);
    usable_gpus_ += usable ? s.gpus : 0;
    type_usable_[at(type)] += usable ? s.gpus : 0;
  }
}

// GPU types are few: a linear search beats a map of their names.
int ServerLayout::type_named(const std::string& name) const {
  for (std::size_t t = 0; t < names_.size(); ++t)
    if (same_type_name(names_[t], name)) return static_cast<int>(t);
  return -1;
}

void ServerLayout::set_usable(int server, bool usable) {
  if (this->usable(server) == usable) return;
  if (!usable) file(server, -1);
  const int gpus = gpus_[at(server)];
  free_[at(server)] = usable ? gpus : -1;
  if (holds_base_) start_free_[at(server)] = free_[at(server)] - base_gpus_[at(server)];
  usable_gpus_ += usable ? gpus : -gpus;
  type_usable_[at(type_of_[at(server)])] += usable ? gpus : -gpus;
  if (usable) file(server, +1);
}

// No base workers yet: every usable server filed with all its GPUs free.
void ServerLayout::hold_base_workers() {
  if (holds_base_) return;
  holds_base_ = true;
  const std::size_t n = free_.size();
  base_gpus_.assign(n, 0);
  base_workers_.assign(n, 0);
  base_flexible_.assign(n, 0);
  start_free_ = free_;
  saved_.assign(n, 0);
  type_base_.assign(names_.size(), 0);
  index_.clear();
  servers_by_free_.clear();
  for (std::size_t t = 0; t < names_.size(); ++t) {
    index_.emplace_back(buckets_per_type * levels_[t],
                        static_cast<int>(type_servers_[t].size()));
    servers_by_free_.emplace_back(at(levels_[t]), 0);
  }
  for (std::size_t s = 0; s < n; ++s) file(static_cast<int>(s), +1);
}

int ServerLayout::filed_set(int server) const {
  const int bucket =
      index_bucket(inference_[at(server)] != 0, base_workers_[at(server)],
                   base_flexible_[at(server)]);
  return bucket * levels_[at(type_of_[at(server)])] + free_[at(server)] -
         base_gpus_[at(server)];
}

// Files (+1) or unfiles (-1) a usable server as it is now.
void ServerLayout::file(int server, int sign) {
  if (!holds_base_ || !usable(server)) return;
  const std::size_t type = at(type_of_[at(server)]);
  const int set = filed_set(server);
  if (sign > 0)
    index_[type].insert(set, rank_[at(server)]);
  else
    index_[type].erase(set, rank_[at(server)]);
  servers_by_free_[type][at(free_[at(server)] - base_gpus_[at(server)])] += sign;
}

void ServerLayout::base_worker(int server, int gpus, bool flexible, int sign) {
  file(server, -1);
  base_gpus_[at(server)] += sign * gpus;
  start_free_[at(server)] = free_[at(server)] - base_gpus_[at(server)];
  (flexible ? base_flexible_ : base_workers_)[at(server)] += sign;
  type_base_[at(type_of_[at(server)])] += sign * gpus;
  base_total_ += sign * gpus;
  file(server, +1);
}

}  // namespace aryl
