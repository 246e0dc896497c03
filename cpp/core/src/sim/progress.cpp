#include "progress.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

double JobProgress::done_at(double now, bool running) const {
  const double from = std::max(updated, paused_until);
  if (!running || !(now > from)) return done;
  return done + std::min(rate * (now - from), work - done);
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

namespace aryl {

std::vector<double> advance_remaining(const ClusterState& state,
                                      std::vector<double> remaining, double seconds,
                                      const std::vector<double>& speed,
                                      double hetero_efficiency,
                                      const std::vector<std::vector<double>>& curves) {
  const std::size_t n = state.jobs.size();
  if (remaining.size() != n || (!curves.empty() && curves.size() != n) ||
      (!speed.empty() && speed.size() != state.servers.size()))
    throw std::invalid_argument(
        "advance_remaining: remaining, curves and speed must hold one value per job, "
        "job and server");
  if (!(seconds >= 0.0) || !std::isfinite(seconds))
    throw std::invalid_argument("seconds must be finite and >= 0");
  check_curves(state, curves);
  std::vector<std::vector<sim::Placed>> placed(n);
  for (const Worker& w : state.workers)
    placed[static_cast<std::size_t>(w.job)].push_back({w.server, w.flexible});
  const std::vector<double> speeds =
      speed.empty() ? std::vector<double>(state.servers.size(), 1.0) : speed;
  for (std::size_t j = 0; j < n; ++j) {
    if (placed[j].empty()) continue;
    const Job& job = state.jobs[j];
    std::vector<double> curve = curves.empty() ? std::vector<double>{} : curves[j];
    if (curve.empty())  // linear, as the scheduler assumes without a curve
      for (int w = 1; w <= job.max_workers; ++w) curve.push_back(w);
    bool mixed = false;
    const double rate = sim::progress_rate(curve, placed[j], state.servers, speeds,
                                           hetero_efficiency, mixed);
    const double work = job.duration * throughput(curve, job.reference());
    remaining[j] = std::max(0.0, remaining[j] - rate * seconds / work);
  }
  return remaining;
}

}  // namespace aryl
