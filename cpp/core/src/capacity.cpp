#include "aryl/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>

namespace aryl {

int spare_servers(double load, int n, double headroom) {
  const double need = std::min(1.0, load * (1.0 + headroom)) * n;
  return n - std::min(n, static_cast<int>(std::ceil(need - 1e-9)));
}

int job_room(const std::vector<Server>& servers, const Job& j, int lendable) {
  const int d = j.gpus_per_worker;
  if (d < 1) throw std::invalid_argument("job_room: gpus_per_worker must be >= 1");
  std::map<std::string, int> slots;                  // workers per GPU type
  std::map<std::string, std::vector<int>> loanable;  // per inference server
  for (const Server& s : servers) {
    if (!j.gpu_type.empty() && s.gpu_type != j.gpu_type) continue;
    if (s.pool == Pool::training || (lendable < 0 && s.on_loan))
      slots[s.gpu_type] += s.gpus / d;
    else if (s.pool == Pool::inference && lendable >= 0)
      loanable[s.gpu_type].push_back(s.gpus / d);
  }
  for (auto& [type, counts] : loanable) {
    const auto take = std::min(counts.size(), static_cast<std::size_t>(lendable));
    std::partial_sort(counts.begin(), counts.begin() + static_cast<long>(take),
                      counts.end(), std::greater<>());
    slots[type] +=
        std::accumulate(counts.begin(), counts.begin() + static_cast<long>(take), 0);
  }
  int best = 0;
  int all = 0;
  for (const auto& kv : slots) {
    best = std::max(best, kv.second);
    all += kv.second;
  }
  return j.hetero ? all : best;
}

std::vector<int> job_rooms(const ClusterState& state,
                           const std::vector<int>& lendable) {
  if (!lendable.empty() && lendable.size() != state.jobs.size())
    throw std::invalid_argument("job_rooms: lendable needs one count per job");
  std::map<std::tuple<int, std::string, bool, int>, int> shapes;
  std::vector<int> out;
  out.reserve(state.jobs.size());
  for (std::size_t i = 0; i < state.jobs.size(); ++i) {
    const Job& j = state.jobs[i];
    const int lend = lendable.empty() ? -1 : lendable[i];
    const auto key = std::make_tuple(j.gpus_per_worker, j.gpu_type, j.hetero, lend);
    auto it = shapes.find(key);
    if (it == shapes.end())
      it = shapes.emplace(key, job_room(state.servers, j, lend)).first;
    out.push_back(it->second);
  }
  return out;
}

}  // namespace aryl
