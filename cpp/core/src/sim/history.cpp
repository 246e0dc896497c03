#include "history.hpp"

#include <algorithm>

namespace aryl::sim {

HistoryRecorder::HistoryRecorder(std::size_t jobs, bool on) : on_(on) {
  if (!on) return;
  open_.resize(jobs);
  intervals_.assign(jobs, 0);
}

void HistoryRecorder::changed(int j, double t, Change why,
                              const std::vector<Placed>& workers) {
  if (!on_) return;
  Open& open = open_[static_cast<std::size_t>(j)];
  for (const auto& [server, count] : open.per_server) {
    h_.job.push_back(j);
    h_.interval.push_back(intervals_[static_cast<std::size_t>(j)] - 1);
    h_.start.push_back(open.start);
    h_.end.push_back(t);
    h_.opened.push_back(static_cast<std::uint8_t>(open.opened));
    h_.closed.push_back(static_cast<std::uint8_t>(why));
    h_.server.push_back(server);
    h_.workers.push_back(count);
  }
  open.per_server.clear();
  if (workers.empty()) return;
  open.start = t;
  open.opened = why;
  for (const Placed& p : workers) {  // a job's workers per server, by server
    auto it = std::lower_bound(
        open.per_server.begin(), open.per_server.end(), p.server,
        [](const auto& entry, int server) { return entry.first < server; });
    if (it != open.per_server.end() && it->first == p.server)
      ++it->second;
    else
      open.per_server.insert(it, {p.server, 1});
  }
  ++intervals_[static_cast<std::size_t>(j)];
}

void HistoryRecorder::close_all(double t) {
  if (!on_) return;
  for (std::size_t j = 0; j < open_.size(); ++j)
    if (!open_[j].per_server.empty()) changed(static_cast<int>(j), t, Change::end, {});
}

Change resized(std::size_t before, std::size_t after) {
  if (after > before) return Change::scale_out;
  return after < before ? Change::scale_in : Change::move;
}

}  // namespace aryl::sim
