// The event queue and the clock of the simulator: events ordered by (time,
// kind, sequence), so simultaneous events run in a fixed, documented order.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <tuple>
#include <vector>

namespace aryl::sim {

// At equal times: arrivals, completions, loan decisions, then the epoch, so that
// an epoch sees everything that happened at its instant.
enum class Kind : std::uint8_t { arrival = 0, finish = 1, loan = 2, epoch = 3 };

struct Event {
  double time;
  Kind kind;
  std::uint64_t seq;
  int job;                // arrival, finish
  std::uint64_t version;  // finish: stale when the job's version moved on
  bool operator>(const Event& o) const {
    return std::tie(time, kind, seq) > std::tie(o.time, o.kind, o.seq);
  }
};

class EventQueue {
 public:
  void push(double time, Kind kind, int job = -1, std::uint64_t version = 0) {
    events_.push({time, kind, seq_++, job, version});
  }
  [[nodiscard]] bool empty() const { return events_.empty(); }
  [[nodiscard]] const Event& next() const { return events_.top(); }
  // Removes the next event and moves the clock to its time.
  Event pop() {
    Event e = events_.top();
    events_.pop();
    now_ = e.time;
    return e;
  }
  [[nodiscard]] double now() const { return now_; }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  double now_ = 0.0;
};

}  // namespace aryl::sim
