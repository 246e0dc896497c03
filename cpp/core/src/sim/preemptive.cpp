// The Tiresias allocation of a round (the Pollux artifact's deterministic
// baseline; the rules are aryl::tiresias_round's): the engine keeps the two
// queues and each job's executed time between rounds, hands the kernel every
// active job's GPUs (one node per GPU, in the order taken), and applies its
// decision. New arrivals join the back of queue 0 in trace order; executed time
// grows by the interval for each job that held an allocation through it.
// Goodput-driven jobs (one-GPU replicas) are re-placed as the kernel says;
// fixed-duration jobs (workers of gpus_per_worker GPUs) take the kernel's queues
// and admission, and are placed worker by worker here (tiresias_fixed).
#include <algorithm>

#include "aryl/tiresias.hpp"
#include "engine.hpp"

namespace aryl::sim {

void Engine::tiresias_allocate(double interval) {
  std::vector<int> active;
  const TiresiasDecision d = tiresias_decide(interval, active);
  // Stops first, so that the GPUs they free are free for the starts.
  for (const bool starts : {false, true})
    for (std::size_t i = 0; i < active.size(); ++i) {
      const std::vector<int>& holds = d.allocations[i];
      const std::vector<int> held = gpus_held(active[i]);
      if (holds != held && holds.empty() != starts) reallocate(active[i], holds);
    }
}

// A fixed-duration job asks its max_workers workers (simulate makes the jobs
// inelastic); the kernel counts GPUs, so a job it admits whose workers do not fit
// on the servers' free GPUs waits for the next epoch. Jobs it stops go back to the
// queue under the usual checkpoint rules (apply).
void Engine::tiresias_fixed() {
  std::vector<int> active;
  const TiresiasDecision d = tiresias_decide(now() - last_round_, active);
  last_round_ = now();
  std::vector<int> job_of;
  const ClusterState& state = snapshot(job_of, Queue::all);
  std::vector<int> in_state(jobs_.size(), -1);
  for (std::size_t i = 0; i < job_of.size(); ++i)
    in_state[at(job_of[i])] = static_cast<int>(i);
  std::vector<char> runs(jobs_.size(), 0);
  for (std::size_t i = 0; i < active.size(); ++i) runs[at(active[i])] = d.running[i];
  std::vector<int> free(servers_.size(), 0);
  for (std::size_t s = 0; s < servers_.size(); ++s)
    if (servers_[s].pool == Pool::training) free[s] = servers_[s].gpus - used_[s];
  Decision out;
  for (std::size_t w = 0; w < state.workers.size(); ++w) {
    const Worker& worker = state.workers[w];
    const int j = job_of[at(worker.job)];
    if (runs[at(j)]) continue;
    out.stop.push_back(static_cast<int>(w));
    free[at(worker.server)] += jobs_[at(j)].job.gpus_per_worker;
  }
  for (std::size_t i = 0; i < active.size(); ++i)  // in queue order
    if (d.running[i] && status_of(active[i]) != Status::running)
      place_workers(active[i], in_state[at(active[i])], free, out.start);
  if (!out.start.empty() || !out.stop.empty()) apply(out, state, job_of);
}

// Job j's max_workers workers, one at a time, on the training server with the most
// free GPUs that fits one (ties: the lowest index), of its required GPU type and,
// unless hetero, of its first worker's type. All or none: `free` and `out` change
// only when every worker fits (as state job `index`).
void Engine::place_workers(int j, int index, std::vector<int>& free,
                           std::vector<Worker>& out) const {
  const Job& job = jobs_[at(j)].job;
  std::vector<int> left = free;
  std::vector<Worker> placed;
  std::string type = job.gpu_type;
  for (int w = 0; w < job.max_workers; ++w) {
    int best = -1;
    for (std::size_t s = 0; s < servers_.size(); ++s)
      if (left[s] >= job.gpus_per_worker &&
          (type.empty() || servers_[s].gpu_type == type) &&
          (best < 0 || left[s] > left[at(best)]))
        best = static_cast<int>(s);
    if (best < 0) return;
    left[at(best)] -= job.gpus_per_worker;
    placed.push_back({index, best, false});
    if (!job.hetero) type = servers_[at(best)].gpu_type;
  }
  free = std::move(left);
  out.insert(out.end(), placed.begin(), placed.end());
}

// Each GPU job j holds, as its server's index (a worker's server once per GPU).
std::vector<int> Engine::gpus_held(int j) const {
  std::vector<int> out;
  for (const Placed& p : workers_[at(j)])
    out.insert(out.end(), static_cast<std::size_t>(jobs_[at(j)].job.gpus_per_worker),
               p.server);
  return out;
}

// The kernel's round: queues kept up to date (finished jobs out, executed time
// grown by `interval` for running jobs, arrivals at the back of queue 0) and its
// decision; `active` gets the jobs of the decision's indices.
TiresiasDecision Engine::tiresias_decide(double interval, std::vector<int>& active) {
  const auto gone = [&](int j) { return status_of(j) == Status::finished; };
  queue0_.erase(std::remove_if(queue0_.begin(), queue0_.end(), gone), queue0_.end());
  queue1_.erase(std::remove_if(queue1_.begin(), queue1_.end(), gone), queue1_.end());
  for (const int j : running_ids_) executed_[at(j)] += interval;
  // Arrivals since the last round (on_arrival noted them), in trace order.
  std::sort(arrived_.begin(), arrived_.end());
  queue0_.insert(queue0_.end(), arrived_.begin(), arrived_.end());
  arrived_.clear();

  // The kernel's input: active jobs in queue order (queue 0 then queue 1).
  active.assign(queue0_.begin(), queue0_.end());
  active.insert(active.end(), queue1_.begin(), queue1_.end());
  TiresiasInput in;
  in.threshold = config_.tiresias_threshold;
  for (const Server& s : servers_)
    in.node_gpus.push_back(s.pool == Pool::training ? s.gpus : 0);
  for (std::size_t i = 0; i < active.size(); ++i) {
    const int j = active[i];
    const Job& job = jobs_[at(j)].job;
    in.jobs.push_back(
        {job.max_workers * job.gpus_per_worker, executed_[at(j)], gpus_held(j)});
    (i < queue0_.size() ? in.queue0 : in.queue1).push_back(static_cast<int>(i));
  }
  TiresiasDecision d = tiresias_round(in);
  queue0_.clear();
  queue1_.clear();
  for (int i : d.queue0) queue0_.push_back(active[at(i)]);
  for (int i : d.queue1) queue1_.push_back(active[at(i)]);
  return d;
}

}  // namespace aryl::sim
