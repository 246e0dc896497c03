// The kernels' view of the engine's state: the snapshot (usable servers, running
// jobs in trace order, then the queued jobs that could start) rebuilt in place
// at each epoch and reclaim, and the base workers the kept server layout holds.
#include "engine.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace aryl::sim {

void Engine::base_changed(int j) {
  if (!track_base_ || rebase_mark_[at(j)]) return;
  rebase_mark_[at(j)] = 1;
  rebase_.push_back(j);
}

// Job j's base workers by the kernel's rule (schedule.hpp), each as its server
// x 2 + 1 if marked flexible: its first min_workers workers not marked
// flexible, then marked ones; all of them under a policy that does not scale
// elastic jobs.
void Engine::base_servers(int j, std::vector<int>& out) const {
  out.clear();
  const std::vector<Placed>& workers = workers_[at(j)];
  const auto code = [](const Placed& p) { return 2 * p.server + (p.flexible ? 1 : 0); };
  if (!scales_elastic_jobs(config_.policy)) {
    for (const Placed& p : workers) out.push_back(code(p));
    return;
  }
  int need = jobs_[at(j)].job.min_workers;
  for (const bool flexible : {false, true})
    for (const Placed& p : workers)
      if (p.flexible == flexible && need > 0) {
        out.push_back(code(p));
        --need;
      }
}

// Brings the layout's base workers up to date for the jobs whose workers
// changed: the placer of the next epoch starts from them.
void Engine::update_base() {
  for (const int j : rebase_) {
    const int gpus = jobs_[at(j)].job.gpus_per_worker;
    std::vector<int>& servers = base_of_[at(j)];
    for (const int c : servers) layout_->base_worker(c / 2, gpus, c % 2 == 1, -1);
    base_servers(j, servers);
    for (const int c : servers) layout_->base_worker(c / 2, gpus, c % 2 == 1, +1);
    if (servers.empty()) std::vector<int>().swap(servers);  // done or queued: no memory
    rebase_mark_[at(j)] = 0;
  }
  rebase_.clear();
}

// Job j's workers into the snapshot as job `index`: from the last snapshot's
// copy when they have not changed since (the job then ran in it with the same
// workers), else from the job's own list. Unchanged jobs that sat together in
// the last snapshot form a run there, copied at once (copy_run): a finishing
// job shifts every later job's index by the same amount.
void Engine::copy_workers(int j, int index) {
  std::vector<Worker>& out = snapshot_.workers;
  const std::vector<Placed>& workers = workers_[at(j)];
  if (track_base_ && !rebase_mark_[at(j)] && snapshot_at_[at(j)] != not_in_snapshot) {
    if (workers.empty()) return;  // queued: nothing to copy, nothing to find later
    const std::size_t from = snapshot_at_[at(j)];
    const int shift = index - last_workers_[from].job;
    if (from != run_.from + run_.size || shift != run_.shift) {
      copy_run();
      run_ = {from, 0, shift};
    }
    snapshot_at_[at(j)] = static_cast<std::uint32_t>(out.size() + run_.size);
    run_.size += workers.size();
    return;
  }
  copy_run();
  if (track_base_) snapshot_at_[at(j)] = static_cast<std::uint32_t>(out.size());
  for (const Placed& p : workers) out.push_back({index, p.server, p.flexible});
}

void Engine::copy_run() {
  std::vector<Worker>& out = snapshot_.workers;
  const std::size_t first = out.size();
  const auto from = last_workers_.begin() + static_cast<std::ptrdiff_t>(run_.from);
  out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(run_.size));
  for (std::size_t k = first; k < out.size(); ++k) out[k].job += run_.shift;
  run_ = {};
}

// The state the kernels see: usable servers, the running jobs (progress up to
// now) in trace order
// and then `queue`'s queued ones in arrival order; job_of maps state job
// index -> trace job index.
// Queue::startable leaves out queued jobs whose base demand exceeds every GPU
// that is free or held by a flexible worker: the placer would reject them
// anyway, and long queues would otherwise be copied and sorted at every epoch.
// Under strict FIFO only the head of the queue that could start counts
// (fifo_blocker). Queue::pulled leaves every queued job out: the kernel pulls
// them (feed.cpp); it also leaves out the running jobs the kernel could not
// change (left_out), so that an epoch's snapshot follows the elastic jobs, not
// every job running. The state is rebuilt in place: the servers are copied once
// (set_loan keeps their loans current), the job records as copy_records keeps them.
// Queue::lent (a reclaim) holds only the running jobs with a worker on a lent server.
const ClusterState& Engine::snapshot(std::vector<int>& job_of, Queue queue) {
  ClusterState& state = snapshot_;
  if (state.servers.empty()) {
    state.servers = servers_;
    for (std::size_t s = 0; s < servers_.size(); ++s)
      state.servers[s].on_loan = on_loan_[s] != 0;
  }
  state.workers.swap(last_workers_);  // the last snapshot's, to copy from
  state.workers.clear();
  state.workers.reserve(last_workers_.size() + last_workers_.size() / 8 + 16);
  std::size_t n_jobs = 0;
  const bool startable = queue == Queue::startable;
  const int bound = startable ? releasable_gpus() : 0;
  const FifoKey blocker = startable ? fifo_blocker(bound) : FifoKey{};
  // Gandiva grows only when nothing is pending: keep one hopeless job to say so.
  bool keep_hopeless = config_.policy == AllocationPolicy::gandiva;
  const auto add = [&](int j) {
    job_of.push_back(j);
    copy_workers(j, static_cast<int>(n_jobs++));
  };
  const bool copies_queue = queue == Queue::all || queue == Queue::startable;
  job_of.reserve(running_ids_.size() + (copies_queue ? queue_.size() : 0));
  // Progress is brought up to now lazily (at a job's own changes); the view and
  // the kernels must see the work each running job has left now, not at its last
  // change (a job two-thirds done would otherwise look untouched).
  for (const int j : running_ids_) {
    if (!goodput_run_) advance(j);  // goodput-driven jobs advance by rounds
    if ((queue == Queue::pulled && left_out(j)) ||
        (queue == Queue::lent && !lent_to(j)))
      snapshot_at_[at(j)] = not_in_snapshot;
    else
      add(j);
  }
  copy_run();
  update_base();  // after copy_workers: it reads which jobs changed
  if (queue == Queue::all)
    for (const FifoKey& key : queue_) add(key.second);
  if (startable)
    for (const FifoKey& key : queue_) {  // in arrival order
      if (!(key < blocker)) break;
      const Job& job = jobs_[at(key.second)].job;
      if (demand(job) * job.gpus_per_worker <= bound ||
          std::exchange(keep_hopeless, false))
        add(key.second);
    }
  copy_records(job_of);
  return state;
}

// The snapshot's job records for job_of, in one pass and in place: a record
// already in its slot stays; one the last snapshot held further right (a job
// before it finished) is moved left; any other is copied from the trace. Old
// slots are read left to right, so none is read after it was overwritten.
void Engine::copy_records(const std::vector<int>& job_of) {
  std::vector<Job>& records = snapshot_.jobs;
  const std::vector<int>& last = snapshot_job_of_;
  std::size_t intact = 0;  // old slots from here on still hold their records
  for (std::size_t i = 0; i < job_of.size(); ++i) {
    const int j = job_of[i];
    const std::size_t k = record_at_[at(j)];
    record_at_[at(j)] = static_cast<std::uint32_t>(i);
    if (k < last.size() && last[k] == j && k >= i && k >= intact) {
      if (k > i) records[i] = std::move(records[k]);
      intact = k + 1;
      continue;
    }
    if (i < records.size())
      records[i] = jobs_[at(j)].job;
    else
      records.push_back(jobs_[at(j)].job);
  }
  records.resize(job_of.size());
  snapshot_job_of_ = job_of;
}

// Whether running job j has a worker on a lent server.
bool Engine::lent_to(int j) const {
  return std::any_of(workers_[at(j)].begin(), workers_[at(j)].end(),
                     [this](const Placed& p) { return on_loan_[at(p.server)] != 0; });
}

// Free GPUs on usable servers plus those an epoch may take from flexible
// workers (kept by add_worker and remove_worker: beyond_min_gpus_).
int Engine::releasable_gpus() const {
  return usable_free_ + (scales_elastic_jobs(config_.policy) ? beyond_min_gpus_ : 0);
}

// Under strict FIFO: the arrival key of the first queued job that surely
// cannot start — the jobs ahead of it, if all admitted, already take more than
// the `bound` GPUs, and if one is not admitted it blocks the rest anyway (past
// every job when there is none, or under any other policy).
Engine::FifoKey Engine::fifo_blocker(int bound) const {
  const FifoKey none{std::numeric_limits<double>::infinity(), 0};
  if (config_.policy != AllocationPolicy::fifo || config_.backfill) return none;
  for (const FifoKey& key : queue_) {
    const Job& job = jobs_[at(key.second)].job;
    bound -= demand(job) * job.gpus_per_worker;
    if (bound < 0) return key;
  }
  return none;
}

}  // namespace aryl::sim
