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
// A job whose GPUs change is re-placed (rounds.cpp: it re-chooses its batch and
// pays the reallocation overhead); a stop and a start on one server cancel out.
#include <algorithm>
#include <utility>

#include "engine.hpp"

namespace aryl::sim {
namespace {

std::vector<int> servers_of(const std::vector<Placed>& workers) {
  std::vector<int> servers;
  servers.reserve(workers.size());
  for (const Placed& p : workers) servers.push_back(p.server);
  std::sort(servers.begin(), servers.end());
  return servers;
}

}  // namespace

void Engine::kernel_allocate() {
  std::vector<int> job_of;
  const ClusterState& state = snapshot(job_of, true);
  if (state.jobs.empty()) return;
  options_.remaining.clear();
  options_.throughput.clear();
  for (const int j : job_of) {
    auto [remaining, curve] = kernel_view(j);
    options_.remaining.push_back(remaining);
    options_.throughput.push_back(std::move(curve));
  }
  const Decision d = schedule(state, options_);
  // Each job's workers after the decision: the kept ones, then the started.
  std::vector<std::vector<Placed>> next(job_of.size());
  std::vector<char> stopped(state.workers.size(), 0), touched(job_of.size(), 0);
  for (const int w : d.stop) {
    stopped[at(w)] = 1;
    touched[at(state.workers[at(w)].job)] = 1;
  }
  for (std::size_t w = 0; w < state.workers.size(); ++w)
    if (!stopped[w]) {
      const Worker& k = state.workers[w];
      next[at(k.job)].push_back({k.server, k.flexible});
    }
  for (const Worker& w : d.start) {
    next[at(w.job)].push_back({w.server, w.flexible});
    touched[at(w.job)] = 1;
  }
  for (std::size_t i = 0; i < job_of.size(); ++i) {
    const int j = job_of[i];
    if (!touched[i] || servers_of(workers_[at(j)]) == servers_of(next[i])) continue;
    std::stable_sort(next[i].begin(), next[i].end(),
                     [](const Placed& a, const Placed& b) { return a.server < b.server; });
    reassign(j, next[i]);
  }
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
  if (config_.tuned && stale_[at(j)]) {  // no model yet: its own batch choices
    curves_[at(j)] = goodput_[at(j)].rate_curve(jobs_[at(j)].job.max_workers, node_gpus_);
    stale_[at(j)] = 0;
  }
  return {s.remaining_fraction(), curves_[at(j)]};
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
