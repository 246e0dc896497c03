// Every job's allocation intervals (Config::history): the engine reports each
// change of a job's workers once it is complete; the recorder closes the job's
// open interval (one row per server it held) and opens the next. Nothing is
// kept when the history is off.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "aryl/sim/simulator.hpp"
#include "progress.hpp"

namespace aryl::sim {

class HistoryRecorder {
 public:
  HistoryRecorder(std::size_t jobs, bool on);

  [[nodiscard]] bool on() const { return on_; }
  // Job j's workers became `workers` at time t, for `why`: its open interval
  // (if any) ends there, and a new one starts if it holds any workers.
  void changed(int j, double t, Change why, const std::vector<Placed>& workers);
  // The run stopped at t: the intervals still open end there (Change::end).
  void close_all(double t);
  [[nodiscard]] History take() { return std::move(h_); }

 private:
  struct Open {
    double start = 0.0;
    Change opened = Change::start;
    std::vector<std::pair<int, std::int64_t>> per_server;  // (server, workers)
  };

  bool on_;
  std::vector<Open> open_;               // job -> its open interval (none: empty)
  std::vector<std::int64_t> intervals_;  // job -> intervals opened so far
  History h_;
};

// Why a running job's workers went from `before` to `after` (both > 0, or a
// job left with none by its allocator): more, fewer or as many elsewhere.
[[nodiscard]] Change resized(std::size_t before, std::size_t after);

}  // namespace aryl::sim
