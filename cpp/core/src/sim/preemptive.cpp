// The Tiresias allocation of a round (the Pollux artifact's deterministic
// baseline; the rules are aryl::tiresias_round's): the engine keeps the two
// queues and each job's executed time between rounds, hands the kernel every
// active job's GPUs (one node per GPU, in the order taken), and applies its
// decision. New arrivals join the back of queue 0 in trace order; executed time
// grows by the interval for each job that held an allocation through it.
#include <algorithm>

#include "aryl/tiresias.hpp"
#include "engine.hpp"

namespace aryl::sim {

void Engine::tiresias_allocate(double interval) {
  const auto gone = [&](int j) { return status_of(j) == Status::finished; };
  queue0_.erase(std::remove_if(queue0_.begin(), queue0_.end(), gone), queue0_.end());
  queue1_.erase(std::remove_if(queue1_.begin(), queue1_.end(), gone), queue1_.end());
  for (const int j : running_ids_) executed_[at(j)] += interval;
  // Arrivals since the last round (on_arrival noted them), in trace order.
  std::sort(arrived_.begin(), arrived_.end());
  queue0_.insert(queue0_.end(), arrived_.begin(), arrived_.end());
  arrived_.clear();

  // The kernel's input: active jobs in queue order (queue 0 then queue 1).
  std::vector<int> active(queue0_);
  active.insert(active.end(), queue1_.begin(), queue1_.end());
  TiresiasInput in;
  in.threshold = config_.tiresias_threshold;
  for (const Server& s : servers_)
    in.node_gpus.push_back(s.pool == Pool::training ? s.gpus : 0);
  for (std::size_t i = 0; i < active.size(); ++i) {
    const int j = active[i];
    TiresiasJob tj{jobs_[at(j)].job.max_workers, executed_[at(j)], {}};
    for (const Placed& p : workers_[at(j)]) tj.allocation.push_back(p.server);
    in.jobs.push_back(std::move(tj));
    (i < queue0_.size() ? in.queue0 : in.queue1).push_back(static_cast<int>(i));
  }
  const TiresiasDecision d = tiresias_round(in);
  queue0_.clear();
  queue1_.clear();
  for (int i : d.queue0) queue0_.push_back(active[at(i)]);
  for (int i : d.queue1) queue1_.push_back(active[at(i)]);
  // Stops first, so that the GPUs they free are free for the starts.
  for (const bool starts : {false, true})
    for (std::size_t i = 0; i < active.size(); ++i) {
      const std::vector<int>& holds = d.allocations[i];
      if (holds != in.jobs[i].allocation && holds.empty() != starts)
        reallocate(active[i], holds);
    }
}

}  // namespace aryl::sim
