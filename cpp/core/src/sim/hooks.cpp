// A caller's policy (Hooks): the engine asks it instead of its own kernels and
// checks every answer whole before applying any of it, so that a bad decision
// stops the run with an error naming the epoch and the job, never with a
// half-applied change or a broken invariant.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine.hpp"

namespace aryl::sim {
namespace {

[[noreturn]] void refuse(const Epoch& e, const std::string& what) {
  throw std::invalid_argument(
      fmt::format("epoch {} (t = {:g} s): the policy's {}", e.index, e.now, what));
}

// What `d` would leave on `state`: every worker on a usable server of a type its
// job may use, no server over-committed, every job with workers within
// [min_workers, max_workers] and, unless hetero, on one GPU type.
void check_decision(const Decision& d, const ClusterState& state, const Epoch& e) {
  const auto n_workers = static_cast<long long>(state.workers.size());
  const auto n_jobs = static_cast<long long>(state.jobs.size());
  const auto n_servers = static_cast<long long>(state.servers.size());
  std::vector<char> stopped(state.workers.size(), 0);
  for (const int w : d.stop) {
    if (w < 0 || w >= n_workers)
      refuse(e, fmt::format("decision stops worker {}, but the state has {} workers", w,
                            n_workers));
    if (stopped[at(w)]++ != 0)
      refuse(e, fmt::format("decision stops worker {} of job '{}' twice", w,
                            state.jobs[at(state.workers[at(w)].job)].id));
  }
  std::vector<int> used(state.servers.size(), 0), count(state.jobs.size(), 0);
  std::vector<const Server*> first(state.jobs.size(), nullptr);
  const auto place = [&](const Worker& w) {
    const Job& job = state.jobs[at(w.job)];
    const Server& server = state.servers[at(w.server)];
    used[at(w.server)] += job.gpus_per_worker;
    ++count[at(w.job)];
    const Server*& type = first[at(w.job)];
    if (type == nullptr) type = &server;
    if (!job.hetero && type->gpu_type != server.gpu_type)
      refuse(e, fmt::format("decision runs job '{}' on GPU types {} and {}; it is "
                            "not hetero",
                            job.id, type->gpu_type, server.gpu_type));
  };
  for (std::size_t w = 0; w < state.workers.size(); ++w)
    if (!stopped[w]) place(state.workers[w]);
  for (const Worker& w : d.start) {
    if (w.job < 0 || w.job >= n_jobs)
      refuse(e, fmt::format("decision starts a worker of job {}, but the state has "
                            "{} jobs",
                            w.job, n_jobs));
    const Job& job = state.jobs[at(w.job)];
    if (w.server < 0 || w.server >= n_servers)
      refuse(e, fmt::format("decision starts a worker of job '{}' on server {}, but "
                            "there are {} servers",
                            job.id, w.server, n_servers));
    const Server& server = state.servers[at(w.server)];
    if (server.pool == Pool::inference && !server.on_loan)
      refuse(e, fmt::format("decision starts a worker of job '{}' on inference "
                            "server '{}', which is not on loan",
                            job.id, server.id));
    if (!job.gpu_type.empty() && job.gpu_type != server.gpu_type)
      refuse(e, fmt::format("decision starts a worker of job '{}' (needs {}) on "
                            "server '{}' of type {}",
                            job.id, job.gpu_type, server.id, server.gpu_type));
    place(w);
    if (used[at(w.server)] > server.gpus)
      refuse(e, fmt::format("decision over-commits server '{}': job '{}' starts a "
                            "worker there, and the workers would use {} of its {} "
                            "GPUs",
                            server.id, job.id, used[at(w.server)], server.gpus));
  }
  for (std::size_t j = 0; j < count.size(); ++j) {
    const Job& job = state.jobs[j];
    if (count[j] != 0 && (count[j] < job.min_workers || count[j] > job.max_workers))
      refuse(e, fmt::format("decision leaves job '{}' with {} workers, outside "
                            "[min_workers {}, max_workers {}]",
                            job.id, count[j], job.min_workers, job.max_workers));
  }
}

}  // namespace

Epoch Engine::epoch() const { return {accounting_.result().epochs_run, now()}; }

void Engine::hold(int j) {
  const double t = now();
  const auto held = static_cast<double>(workers_[at(j)].size());
  if (held > 0) {
    const double dt = t - held_since_[at(j)];
    held_gpu_s_[at(j)] += dt * held * jobs_[at(j)].job.gpus_per_worker;
    held_s_[at(j)] += dt;
  }
  held_since_[at(j)] = t;
}

JobService Engine::service(const std::vector<int>& job_of) const {
  JobService out;
  out.attained.reserve(job_of.size());
  out.waited.reserve(job_of.size());
  out.preemptions.reserve(job_of.size());
  const double t = now();
  for (const int j : job_of) {
    const auto held = static_cast<double>(workers_[at(j)].size());
    const double dt = held > 0 ? t - held_since_[at(j)] : 0.0;
    const Job& job = jobs_[at(j)].job;
    out.attained.push_back(held_gpu_s_[at(j)] + dt * held * job.gpus_per_worker);
    out.waited.push_back(t - job.submit_time - (held_s_[at(j)] + dt));
    out.preemptions.push_back(accounting_.result().preemptions(at(j)));
  }
  return out;
}

Decision Engine::asked_decision(const ClusterState& state,
                                const std::vector<int>& job_of) {
  const Epoch e = epoch();
  Decision d = hooks_.allocate(state, job_of, options_.remaining, options_.throughput,
                               service(job_of), e);
  check_decision(d, state, e);
  return d;
}

ReclaimPlan Engine::asked_reclaim(const ClusterState& state,
                                  const std::vector<int>& job_of, int n) {
  const Epoch e = epoch();
  JobService served = service(job_of);
  served.remaining.reserve(job_of.size());
  for (const int j : job_of) {
    const JobProgress& s = state_[at(j)];
    const double done = s.done_at(now(), status_of(j) == Status::running);
    served.remaining.push_back(std::clamp(1.0 - done / s.work, 1e-9, 1.0));
  }
  const std::vector<int> servers = hooks_.reclaim(state, job_of, served, n, e);
  if (static_cast<int>(servers.size()) != n)
    refuse(e, fmt::format("reclaim returns {} servers; the inference load needs {} "
                          "back",
                          servers.size(), n));
  try {
    return reclaim_servers(state, servers);
  } catch (const std::invalid_argument& error) {
    refuse(e, fmt::format("reclaim: {}", error.what()));
  }
}

}  // namespace aryl::sim
