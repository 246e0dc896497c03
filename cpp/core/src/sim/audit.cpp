// The invariants every run must keep (checked after every event when
// Config::audit is set): workers within [min, max] while running, none while
// not, no job past its work, nothing on an inference server that is not on
// loan, no server over-committed, and the engine's books matching.
#include <fmt/format.h>

#include <algorithm>
#include <array>

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
  if (queued != queue_.size() || running != running_ids_.size() ||
      running != running_ids_.ids().size() ||
      !std::all_of(running_ids_.begin(), running_ids_.end(),
                   [this](int j) { return status_of(j) == Status::running; }))
    fail("queued/running book-keeping is off");
  int usable_free = 0;
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    if (used[s] > servers_[s].gpus || used[s] != used_[s])
      fail(fmt::format("server '{}' holds {} GPUs of {} (book: {})", servers_[s].id,
                       used[s], servers_[s].gpus, used_[s]));
    if (usable(static_cast<int>(s))) usable_free += servers_[s].gpus - used[s];
    if (layout_->usable(static_cast<int>(s)) != usable(static_cast<int>(s)))
      fail(fmt::format("server '{}': the placer's layout has its loan wrong",
                       servers_[s].id));
  }
  if (usable_free != usable_free_)
    fail(fmt::format("usable servers have {} free GPUs (book: {})", usable_free,
                     usable_free_));
  int beyond = 0;
  for (std::size_t j = 0; j < jobs_.size(); ++j)
    beyond += beyond_min(static_cast<int>(j));
  if (beyond != beyond_min_gpus_)
    fail(
        fmt::format("{} GPUs beyond min_workers (book: {})", beyond, beyond_min_gpus_));
  int lent = 0;
  for (const int s : lender_.servers()) lent += on_loan_[at(s)];
  if (lent != lent_) fail(fmt::format("{} servers lent (book: {})", lent, lent_));
  audit_base();
}

// The layout's base workers: each job's as last recorded, and that record
// the kernel's rule unless the job's workers changed since.
void Engine::audit_base() {
  if (!track_base_) return;
  const auto fail = [&](const std::string& what) {
    accounting_.violation(now(), what);
  };
  std::vector<int> base(servers_.size(), 0);
  std::vector<std::array<int, 2>> count(servers_.size(), {0, 0});  // unmarked, marked
  std::vector<int> servers;
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    base_servers(static_cast<int>(j), servers);
    std::vector<int> held = base_of_[j];
    std::sort(servers.begin(), servers.end());
    std::sort(held.begin(), held.end());
    if (!rebase_mark_[j] && held != servers)
      fail(fmt::format("job '{}': the layout's base workers are off", jobs_[j].job.id));
    for (const int c : held) {
      base[at(c / 2)] += jobs_[j].job.gpus_per_worker;
      ++count[at(c / 2)][at(c % 2)];
    }
  }
  for (std::size_t s = 0; s < servers_.size(); ++s)
    if (base[s] != layout_->base_gpus(static_cast<int>(s)) ||
        count[s][0] != layout_->base_workers(static_cast<int>(s), false) ||
        count[s][1] != layout_->base_workers(static_cast<int>(s), true))
      fail(fmt::format("server '{}': the layout holds {} GPUs of base workers, not {}",
                       servers_[s].id, layout_->base_gpus(static_cast<int>(s)),
                       base[s]));
}

}  // namespace aryl::sim
