#include "aryl/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace aryl {
namespace {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw std::invalid_argument(fmt::format(format, std::forward<Args>(args)...));
}

// Ids seen so far, for the duplicate checks: open addressing over row numbers in
// one allocation, where a node-based set allocates per id (most of a 3,000-job
// state's check). Views, not copies: the records outlive the check.
class IdSet {
 public:
  explicit IdSet(std::size_t n) : slots_(std::bit_ceil(2 * n + 2), 0) {}
  // Adds `id`; false when it is there already.
  bool insert(std::string_view id) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = std::hash<std::string_view>{}(id)&mask;;
         at = (at + 1) & mask) {
      if (slots_[at] == 0) {
        ids_.push_back(id);
        slots_[at] = ids_.size();  // row + 1: 0 marks an empty slot
        return true;
      }
      if (ids_[slots_[at] - 1] == id) return false;
    }
  }

 private:
  std::vector<std::size_t> slots_;
  std::vector<std::string_view> ids_;
};

void validate_servers(const std::vector<Server>& servers) {
  IdSet seen(servers.size());
  for (const Server& s : servers) {
    if (!seen.insert(s.id)) fail("duplicate server id '{}'", s.id);
    if (s.gpus < 1) fail("server '{}': gpus must be >= 1, got {}", s.id, s.gpus);
    if (s.gpus > max_server_gpus)
      fail("server '{}': gpus must be at most {}, got {}", s.id, max_server_gpus,
           s.gpus);
    if (s.on_loan && s.pool != Pool::inference)
      fail("server '{}': only inference servers can be on loan", s.id);
  }
}

void validate_time(const Job& j, const char* field, double value) {
  if (!std::isfinite(value) || value < 0.0)
    fail("job '{}': {} must be a finite number >= 0, got {}", j.id, field, value);
  if (value > max_time_s)
    fail("job '{}': {} must be at most {:g} s, got {:g}", j.id, field, max_time_s,
         value);
}

// Views, not copies, of the ids: the jobs outlive the check (500k jobs: ~25 MB less).
void check_jobs(std::size_t n, const JobAt& job, int largest_server) {
  IdSet seen(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Job& j = job(i);
    if (!seen.insert(j.id)) fail("duplicate job id '{}'", j.id);
    if (j.gpus_per_worker < 1)
      fail("job '{}': gpus_per_worker must be >= 1, got {}", j.id, j.gpus_per_worker);
    if (largest_server > 0 && j.gpus_per_worker > largest_server)
      fail("job '{}': gpus_per_worker {} is more than any server has ({})", j.id,
           j.gpus_per_worker, largest_server);
    if (j.min_workers < 1)
      fail("job '{}': min_workers must be >= 1, got {}", j.id, j.min_workers);
    if (j.min_workers > j.max_workers)
      fail("job '{}': min_workers {} > max_workers {}", j.id, j.min_workers,
           j.max_workers);
    if (j.reference_workers != 0 &&
        (j.reference_workers < j.min_workers || j.reference_workers > j.max_workers))
      fail("job '{}': reference_workers {} is outside [min_workers {}, max_workers {}]",
           j.id, j.reference_workers, j.min_workers, j.max_workers);
    if (static_cast<long long>(j.gpus_per_worker) * j.max_workers > max_job_gpus)
      fail("job '{}': {} workers of {} GPUs are more than the limit of {} GPUs per job",
           j.id, j.max_workers, j.gpus_per_worker, max_job_gpus);
    validate_time(j, "duration", j.duration);
    validate_time(j, "submit_time", j.submit_time);
    validate_time(j, "estimated_duration", j.estimated_duration);
  }
}

void validate_workers(const ClusterState& state) {
  const auto n_servers = static_cast<int>(state.servers.size());
  const auto n_jobs = static_cast<int>(state.jobs.size());
  std::vector<long long> used(state.servers.size(), 0);
  std::vector<const Server*> first_server(state.jobs.size(), nullptr);
  for (std::size_t w = 0; w < state.workers.size(); ++w) {
    const Worker& worker = state.workers[w];
    if (worker.job < 0 || worker.job >= n_jobs)
      fail("worker {}: unknown job index {}", w, worker.job);
    if (worker.server < 0 || worker.server >= n_servers)
      fail("worker {}: unknown server index {}", w, worker.server);
    const Job& j = state.jobs[static_cast<std::size_t>(worker.job)];
    const Server& s = state.servers[static_cast<std::size_t>(worker.server)];
    if (s.pool == Pool::inference && !s.on_loan)
      fail("worker {} of job '{}' is on inference server '{}', which is not on loan", w,
           j.id, s.id);
    if (!j.gpu_type.empty() && j.gpu_type != s.gpu_type)
      fail("worker {} of job '{}' (needs {}) is on server '{}' of type {}", w, j.id,
           j.gpu_type, s.id, s.gpu_type);
    used[static_cast<std::size_t>(worker.server)] += j.gpus_per_worker;
    const Server*& first = first_server[static_cast<std::size_t>(worker.job)];
    if (first == nullptr) first = &s;
    if (!j.hetero && first->gpu_type != s.gpu_type)
      fail("job '{}' is not hetero but runs on GPU types {} and {}", j.id,
           first->gpu_type, s.gpu_type);
  }
  for (std::size_t s = 0; s < used.size(); ++s)
    if (used[s] > state.servers[s].gpus)
      fail("server '{}' is over-committed: its workers use {} GPUs, it has {}",
           state.servers[s].id, used[s], state.servers[s].gpus);
  const std::vector<int> count = worker_counts(state);
  for (std::size_t j = 0; j < count.size(); ++j) {
    const Job& job = state.jobs[j];
    if (count[j] != 0 && (count[j] < job.min_workers || count[j] > job.max_workers))
      fail("job '{}' runs {} workers, outside [min_workers {}, max_workers {}]", job.id,
           count[j], job.min_workers, job.max_workers);
  }
}

}  // namespace

std::vector<int> worker_counts(const ClusterState& state) {
  std::vector<int> count(state.jobs.size(), 0);
  for (const Worker& w : state.workers) ++count[static_cast<std::size_t>(w.job)];
  return count;
}

// The servers' checks; returns the most GPUs one server has.
int checked_servers(const std::vector<Server>& servers) {
  validate_servers(servers);
  int largest = 0;
  long long total = 0;
  for (const Server& s : servers) {
    largest = std::max(largest, s.gpus);
    total += s.gpus;
  }
  if (total > max_cluster_gpus)
    fail("the servers have {} GPUs in all, more than the limit of {}", total,
         max_cluster_gpus);
  return largest;
}

void validate_jobs(const std::vector<Server>& servers, std::size_t n_jobs,
                   const JobAt& job) {
  check_jobs(n_jobs, job, checked_servers(servers));
}

void validate(const ClusterState& state) {
  checked_servers(state.servers);
  // A state may hold a job wider than every server: it stays queued, and the
  // scheduler reports it unplaceable (a live cluster's queue may hold one).
  check_jobs(
      state.jobs.size(),
      [&state](std::size_t j) -> const Job& { return state.jobs[j]; }, 0);
  validate_workers(state);
}

}  // namespace aryl
