// aryl's kernel in rounds of goodput-driven jobs (paper §7.4: Aryl on Pollux's
// jobs, and Aryl+TunedJobs). A round with an arrival, a completion or something
// a tuned job's agent learnt runs schedule() as a fixed-duration epoch does: SJF
// on base demand, then the knapsack shares the extra replicas. What it sees of a
// job (kernel_view):
//  - untuned (Config::tuned off): the user's batch on every count, so its curve
//    is its measured progress rate on 1..max replicas at that batch;
//  - tuned: once its agent has a model, the goodput that model predicts for
//    1..max replicas, the work left scaled so that the kernel's running times
//    are the model's; before, the rates of the batches it would choose.
// The kernel's counts are kept; its placement is not: with one-GPU replicas,
// best fit per replica would scatter a data-parallel job over the fullest
// servers, so a job whose count changes is re-placed a server's worth of
// replicas at a time (place_replicas), re-chooses its batch and pays the
// reallocation overhead (rounds.cpp).
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine.hpp"

namespace aryl::sim {

void Engine::kernel_allocate() {
  std::vector<int> job_of;
  const ClusterState& state = snapshot(job_of, Queue::startable);
  if (state.jobs.empty()) return;
  options_.remaining.clear();
  options_.throughput.clear();
  for (const int j : job_of) {
    auto [remaining, curve] = kernel_view(j);
    options_.remaining.push_back(remaining);
    options_.throughput.push_back(std::move(curve));
  }
  const Decision d = schedule(state, options_);
  // The kernel decides how many replicas each job runs; a job whose count
  // changes is re-placed compactly (place_replicas).
  std::vector<int> count(job_of.size(), 0);
  for (const Worker& w : state.workers) ++count[at(w.job)];
  for (const int w : d.stop) --count[at(state.workers[at(w)].job)];
  for (const Worker& w : d.start) ++count[at(w.job)];
  std::vector<int> changed;  // jobs, largest new count first (best fit decreasing)
  for (std::size_t i = 0; i < job_of.size(); ++i)
    if (count[i] != static_cast<int>(workers_[at(job_of[i])].size()))
      changed.push_back(static_cast<int>(i));
  std::stable_sort(changed.begin(), changed.end(),
                   [&](int a, int b) { return count[at(a)] > count[at(b)]; });
  std::vector<int> free(servers_.size(), 0);
  for (std::size_t s = 0; s < servers_.size(); ++s)
    if (servers_[s].pool == Pool::training) free[s] = servers_[s].gpus - used_[s];
  for (const int i : changed)
    for (const Placed& p : workers_[at(job_of[at(i)])]) ++free[at(p.server)];
  for (const int i : changed) {
    const int j = job_of[at(i)];
    reassign(j, place_replicas(count[at(i)], jobs_[at(j)].job.min_workers, free));
  }
}

// `replicas` one-GPU replicas on the servers' `free` GPUs (taken from it), as
// best fit decreasing places workers with a server's worth of replicas as one
// worker: each chunk as large as any server still holds, into the server whose
// free GPUs fit it most tightly (ties: the lowest index). A data-parallel job
// then spans as few servers as the free GPUs allow, as the Pollux artifact's
// schedulers place replicas. The first min_workers are its base demand.
std::vector<Placed> Engine::place_replicas(int replicas, int min_workers,
                                           std::vector<int>& free) const {
  std::vector<Placed> out;
  while (static_cast<int>(out.size()) < replicas) {
    const int left = replicas - static_cast<int>(out.size());
    const int most = *std::max_element(free.begin(), free.end());
    const int chunk = std::min(left, most);
    if (chunk <= 0)
      throw std::logic_error("kernel rounds: the kernel's counts exceed the free GPUs");
    std::size_t best = free.size();
    for (std::size_t s = 0; s < free.size(); ++s)
      if (free[s] >= chunk && (best == free.size() || free[s] < free[best])) best = s;
    free[best] -= chunk;
    for (int k = 0; k < chunk; ++k) {
      const bool flexible = static_cast<int>(out.size()) >= min_workers;
      out.push_back({static_cast<int>(best), flexible});
    }
  }
  return out;
}

// (remaining fraction, throughput curve) of job j as the kernel sees it. A tuned
// job's model view is linear in the work left, so it is rebuilt only when its
// agent has learnt something (note_learning).
std::pair<double, std::vector<double>> Engine::kernel_view(int j) {
  const JobProgress& s = state_[at(j)];
  const PolluxJobModel* agent = goodput_[at(j)].learner();
  if (config_.tuned && agent != nullptr && agent->has_model()) {
    const Job& job = jobs_[at(j)].job;
    TunedView& view = views_[at(j)];
    if (stale_[at(j)])
      view = tuned_kernel_view(agent->model(), job.max_workers, job.reference(),
                               node_gpus_, 1.0, job.estimated_duration);
    stale_[at(j)] = 0;
    // The kernel takes a fraction in (0, 1]: a job its model finds slower than
    // its estimate is seen at its estimate.
    if (!view.curve.empty())
      return {std::clamp(view.remaining * std::max(s.work - s.done, 0.0), 1e-12, 1.0),
              view.curve};
  }
  if (config_.tuned && stale_[at(j)] && jobs_[at(j)].throughput.empty()) {
    // no model yet: the rates of the batches it would choose (its own curve)
    curves_[curve_of_[at(j)]] =
        goodput_[at(j)].rate_curve(jobs_[at(j)].job.max_workers, node_gpus_);
    stale_[at(j)] = 0;
  }
  return {s.remaining_fraction(), curve(j)};
}

// After job j stepped: a new profile (its agent refitted) or a new epoch (new
// gradient statistics) changes what the kernel should see of it.
void Engine::note_learning(int j, std::size_t profiles, int epoch) {
  const GoodputJob& g = goodput_[at(j)];
  if (g.learner()->profile().size() == profiles && g.epoch() == epoch) return;
  stale_[at(j)] = 1;
  dirty_ = true;
}

}  // namespace aryl::sim
