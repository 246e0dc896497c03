#include "progress.hpp"

#include <algorithm>

#include "aryl/schedule.hpp"

namespace aryl::sim {

std::vector<double> throughput_curve(const SimJob& job, Scaling scaling) {
  if (!job.throughput.empty()) return job.throughput;
  std::vector<double> curve(static_cast<std::size_t>(job.job.max_workers));
  const double mid = 0.5 * (job.job.min_workers + job.job.max_workers);
  for (int w = 1; w <= job.job.max_workers; ++w) {
    // §7.2: beyond the midpoint of [min, max], a further 10% of ideal per step.
    const double beyond = scaling == Scaling::imperfect ? std::max(0.0, w - mid) : 0.0;
    curve[static_cast<std::size_t>(w - 1)] = w * std::max(0.1, 1.0 - 0.1 * beyond);
  }
  return curve;
}

double JobProgress::advance(double now, bool running) {
  const double from = std::max(updated, paused_until);
  double gained = 0.0;
  if (running && now > from) {
    gained = std::min(rate * (now - from), work - done);
    done += gained;
  }
  updated = now;
  return gained;
}

double JobProgress::finish_time(double now) const {
  return std::max(now, paused_until) + std::max(0.0, work - done) / rate;
}

double JobProgress::remaining_fraction() const {
  return std::clamp(1.0 - done / work, 1e-9, 1.0);
}

double progress_rate(const std::vector<double>& curve,
                     const std::vector<Placed>& workers,
                     const std::vector<Server>& servers,
                     const std::vector<double>& speed, double hetero_efficiency,
                     bool& mixed) {
  mixed = false;
  if (workers.empty()) return 0.0;
  double sum = 0.0;
  const std::string& first =
      servers[static_cast<std::size_t>(workers.front().server)].gpu_type;
  for (const Placed& p : workers) {
    sum += speed[static_cast<std::size_t>(p.server)];
    mixed |= servers[static_cast<std::size_t>(p.server)].gpu_type != first;
  }
  const int n = static_cast<int>(workers.size());
  const double mean = sum / n * (mixed ? hetero_efficiency : 1.0);
  return throughput(curve, n) * mean;
}

}  // namespace aryl::sim
