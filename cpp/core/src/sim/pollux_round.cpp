// The Pollux allocation of a round (aryl/pollux.hpp): every active job (arrived,
// unfinished) with what it has learned of itself, its replica cap and minimum
// (its min_workers when above one), its current
// replicas per training server, attained service, age and restarts goes to the
// policy, whose population carries over rounds; each job whose replicas change
// is re-placed (stops first, so that the GPUs they free serve the starts) and
// re-chooses its batch.
#include <algorithm>

#include "engine.hpp"

namespace aryl::sim {

void Engine::pollux_allocate(double interval) {
  for (const int j : running_ids_)
    attained_[at(j)] += interval * static_cast<double>(workers_[at(j)].size());
  std::vector<int> server_of;  // the policy's nodes: the training servers
  std::vector<int> node_gpus, node_of(servers_.size(), -1);
  for (std::size_t s = 0; s < servers_.size(); ++s)
    if (servers_[s].pool == Pool::training) {
      node_of[s] = static_cast<int>(server_of.size());
      server_of.push_back(static_cast<int>(s));
      node_gpus.push_back(servers_[s].gpus);
    }
  std::vector<int> active;
  std::vector<PolluxJob> in;
  for (int j = 0; j < static_cast<int>(jobs_.size()); ++j) {
    const Status st = status_of(j);
    if (st != Status::queued && st != Status::running) continue;
    const PolluxJobModel& learner = *goodput_[at(j)].learner();
    PolluxJob pj;
    pj.key = j;
    if (learner.has_model()) pj.model = learner.model();
    const Job& job = jobs_[at(j)].job;
    // A minimum of one replica is what running means: only larger ones bind
    // (a floor of one would pin every job to the first node in the search).
    pj.min_replicas = job.min_workers > 1 ? job.min_workers : 0;
    // The learned cap grows with what the job has profiled; never below its
    // minimum, or it could never start.
    pj.max_replicas =
        std::min(std::max(learner.max_replicas(), pj.min_replicas), job.max_workers);
    if (!workers_[at(j)].empty()) {
      pj.current.assign(node_gpus.size(), 0);
      for (const Placed& p : workers_[at(j)]) ++pj.current[at(node_of[at(p.server)])];
    }
    pj.attained_service = attained_[at(j)];
    pj.submit_time = jobs_[at(j)].job.submit_time;
    pj.age = std::max(now() - pj.submit_time, 0.0);
    pj.num_restarts = std::max(restarts_[at(j)], 0);
    active.push_back(j);
    in.push_back(std::move(pj));
  }
  const std::vector<std::vector<int>> out = pollux_->optimize(in, node_gpus);
  for (const bool starts : {false, true})
    for (std::size_t i = 0; i < active.size(); ++i) {
      std::vector<int> holds;  // server of each GPU, by server
      for (std::size_t n = 0; n < out[i].size(); ++n)
        holds.insert(holds.end(), static_cast<std::size_t>(out[i][n]), server_of[n]);
      std::vector<int> now_holds;
      for (std::size_t n = 0; n < in[i].current.size(); ++n)
        now_holds.insert(now_holds.end(), static_cast<std::size_t>(in[i].current[n]),
                         server_of[n]);
      if (holds == now_holds || holds.empty() != starts) continue;
      const int j = active[i];
      if (!holds.empty()) ++restarts_[at(j)];  // -1 before the first start
      reallocate(j, holds);
    }
}

}  // namespace aryl::sim
