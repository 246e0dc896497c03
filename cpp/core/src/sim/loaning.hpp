// Loaning: how many inference servers the inference side can lend at a time,
// from its load series, the headroom it keeps and the lend hold.
#pragma once

#include <vector>

#include "aryl/sim/simulator.hpp"

namespace aryl::sim {

class Lender {
 public:
  Lender(const std::vector<Server>& servers, const std::vector<LoadPoint>& load,
         const Config& config);

  // Loaning happens at all: a load series and inference servers to lend.
  [[nodiscard]] bool active() const { return !load_.empty() && !servers_.empty(); }
  // Inference server indices, in lending order (lowest index first).
  [[nodiscard]] const std::vector<int>& servers() const { return servers_; }
  [[nodiscard]] int gpus() const { return gpus_; }

  [[nodiscard]] double load_at(double t) const;
  // Servers the inference side can spare at t: N - ceil(min(1, load x (1 +
  // headroom)) x N). Reclaiming follows this at once.
  [[nodiscard]] int spare(double t) const { return spare_for(load_at(t)); }
  // Servers that may be lent at t: those spare throughout the last lend_hold
  // seconds (the peak load over [t - lend_hold, t] decides).
  [[nodiscard]] int lendable(double t) const;
  // Server-seconds in [from, to] during which the load needed more of the servers
  // than the `lent` on loan left it (exact over the series' steps): servers the
  // inference side waits for until the next loan decision reclaims them.
  [[nodiscard]] double short_seconds(double from, double to, int lent) const;
  // From this time on the loan state cannot change any more (the series has
  // ended and the hold has run out).
  [[nodiscard]] double settled() const;

 private:
  [[nodiscard]] int spare_for(double load) const;

  std::vector<LoadPoint> load_;
  std::vector<int> servers_;
  int gpus_ = 0;
  double headroom_ = 0.0;
  double hold_ = 0.0;
};

}  // namespace aryl::sim
