// The cluster model shared by every kernel: servers, jobs and the placement of
// workers (docs/model.md §1-2). Indices, not ids, link the records; ids are kept as
// strings only so that error messages can name the offending record.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace aryl {

enum class Pool : std::uint8_t { training = 0, inference = 1 };

struct Server {
  std::string id;
  Pool pool = Pool::training;
  int gpus = 8;
  std::string gpu_type = "V100";
  bool on_loan = false;  // an inference server currently lent to training
};

struct Job {
  std::string id;
  int gpus_per_worker = 1;  // D
  int min_workers = 1;
  int max_workers = 1;
  double duration = 0.0;  // running time at reference workers on reference GPUs
  double submit_time = 0.0;
  double estimated_duration = 0.0;  // what the scheduler is told
  std::string gpu_type;             // required type; empty = any type
  bool checkpoint = true;           // a preempted job resumes from its progress
  bool hetero = false;
  // Workers at which `duration` (and `estimated_duration`) was measured, in
  // [min_workers, max_workers]; 0 means max_workers.
  int reference_workers = 0;

  [[nodiscard]] bool elastic() const { return max_workers > min_workers; }
  [[nodiscard]] int reference() const {
    return reference_workers > 0 ? reference_workers : max_workers;
  }
};

struct Worker {
  int job = 0;
  int server = 0;
  bool flexible = false;  // not one of the job's first min_workers
};

// A snapshot of the cluster: what exists and where every worker runs. Kernels
// take it as valid: call validate() once after building or changing it.
struct ClusterState {
  std::vector<Server> servers;
  std::vector<Job> jobs;
  std::vector<Worker> workers;
};

// The model's limits, so that no sum of GPUs or of running times in a kernel can
// overflow: a server has at most max_server_gpus GPUs, a job at most
// max_job_gpus (gpus_per_worker x max_workers), all servers together at most
// max_cluster_gpus, and a time (duration, submit time, estimate) is at most
// max_time_s seconds (~31.7 million years).
inline constexpr int max_server_gpus = 1 << 16;
inline constexpr long long max_job_gpus = 1 << 20;
inline constexpr long long max_cluster_gpus = 1 << 22;
inline constexpr double max_time_s = 1e15;

// Throws std::invalid_argument naming the first offending record: bad numbers,
// duplicate ids, a worker on an unknown server or a server that is neither
// training nor on loan, a server's GPUs over-committed, a number beyond the
// limits above, a running job whose
// worker count is outside [min_workers, max_workers], a GPU-type mismatch. A job
// wider than every server is valid here (it can only stay queued).
void validate(const ClusterState& state);

// validate() of servers and jobs without workers, the jobs read through job(0..n-1):
// for callers that keep jobs inside their own records (the simulator's), uncopied.
// Unlike validate(), it refuses a job wider than every server (it could never run).
using JobAt = std::function<const Job&(std::size_t)>;
void validate_jobs(const std::vector<Server>& servers, std::size_t n_jobs,
                   const JobAt& job);

// Workers per job (index = job index).
std::vector<int> worker_counts(const ClusterState& state);

}  // namespace aryl
