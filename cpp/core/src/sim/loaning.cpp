#include "loaning.hpp"

#include "aryl/capacity.hpp"

#include <algorithm>
#include <cmath>

namespace aryl::sim {

Lender::Lender(const std::vector<Server>& servers, const std::vector<LoadPoint>& load,
               const Config& config)
    : load_(load), headroom_(config.headroom), hold_(config.lend_hold) {
  for (std::size_t s = 0; s < servers.size(); ++s)
    if (servers[s].pool == Pool::inference) {
      servers_.push_back(static_cast<int>(s));
      gpus_ += servers[s].gpus;
    }
}

double Lender::load_at(double t) const {
  if (load_.empty()) return 0.0;
  auto it = std::upper_bound(load_.begin(), load_.end(), t,
                             [](double x, const LoadPoint& p) { return x < p.time; });
  return it == load_.begin() ? load_.front().load : std::prev(it)->load;
}

int Lender::spare_for(double load) const {
  return spare_servers(load, static_cast<int>(servers_.size()), headroom_);
}

int Lender::lendable(double t) const {
  double peak = load_at(t - hold_);
  auto it = std::upper_bound(load_.begin(), load_.end(), t - hold_,
                             [](double x, const LoadPoint& p) { return x < p.time; });
  for (; it != load_.end() && it->time <= t; ++it) peak = std::max(peak, it->load);
  return spare_for(peak);
}

double Lender::short_seconds(double from, double to, int lent) const {
  if (!active() || lent == 0 || !(to > from)) return 0.0;
  double total = 0.0;
  auto it = std::upper_bound(load_.begin(), load_.end(), from,
                             [](double x, const LoadPoint& p) { return x < p.time; });
  for (double t = from; t < to;) {
    const double next = it == load_.end() ? to : std::min(to, it->time);
    total += std::max(0, lent - spare(t)) * (next - t);
    t = next;
    if (it != load_.end() && it->time <= t) ++it;
  }
  return total;
}

double Lender::settled() const {
  return load_.empty() ? 0.0 : load_.back().time + hold_;
}

}  // namespace aryl::sim
