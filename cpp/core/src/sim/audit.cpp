// The invariants every run must keep (checked after every event when
// Config::audit is set): workers within [min, max] while running, none while
// not, no job past its work, nothing on an inference server that is not on
// loan, no server over-committed, and the engine's books matching.
#include <fmt/format.h>

#include <algorithm>

#include "engine.hpp"

namespace aryl::sim {

void Engine::audit() {
  const auto fail = [&](const std::string& what) {
    accounting_.violation(now(), what);
  };
  std::vector<int> used(servers_.size(), 0);
  std::size_t queued = 0, running = 0;
  for (std::size_t j = 0; j < state_.size(); ++j) {
    const Job& job = jobs_[j].job;
    const Status status = status_[j];
    const int n = static_cast<int>(workers_[j].size());
    queued += status == Status::queued;
    running += status == Status::running;
    if (status == Status::running && (n < job.min_workers || n > job.max_workers))
      fail(fmt::format("job '{}' runs {} workers outside [{}, {}]", job.id, n,
                       job.min_workers, job.max_workers));
    if (status != Status::running && n > 0)
      fail(fmt::format("job '{}' holds workers while not running", job.id));
    if (state_[j].done > state_[j].work * (1 + 1e-9))
      fail(fmt::format("job '{}' did more than its work", job.id));
    for (const Placed& p : workers_[j]) {
      used[at(p.server)] += job.gpus_per_worker;
      const Server& srv = servers_[at(p.server)];
      if (srv.pool == Pool::inference && !on_loan_[at(p.server)])
        fail(fmt::format("job '{}' runs on inference server '{}', not on loan", job.id,
                         srv.id));
    }
  }
  if (queued != queue_.size() || running != running_ids_.size())
    fail("queued/running book-keeping is off");
  int usable_free = 0;
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    if (used[s] > servers_[s].gpus || used[s] != used_[s])
      fail(fmt::format("server '{}' holds {} GPUs of {} (book: {})", servers_[s].id,
                       used[s], servers_[s].gpus, used_[s]));
    if (usable(static_cast<int>(s))) usable_free += servers_[s].gpus - used[s];
  }
  if (usable_free != usable_free_)
    fail(fmt::format("usable servers have {} free GPUs (book: {})", usable_free,
                     usable_free_));
}

}  // namespace aryl::sim
