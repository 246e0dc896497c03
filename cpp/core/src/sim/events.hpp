// The event queue and the clock of the simulator: events ordered by (time,
// kind, sequence), so simultaneous events run in a fixed, documented order.
#pragma once

#include <cstddef>
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

// Arrivals pushed in order (the engine pushes every job's at the start, sorted
// by time) wait in a plain array; the heap holds the other events, a few hundred
// at most, so a pop costs log(those) instead of log(jobs).
class EventQueue {
 public:
  void push(double time, Kind kind, int job = -1, std::uint64_t version = 0) {
    const Event e{time, kind, seq_++, job, version};
    if (kind == Kind::arrival && (arrivals_.empty() || !(arrivals_.back() > e)))
      arrivals_.push_back(e);
    else
      events_.push(e);
  }
  [[nodiscard]] bool empty() const {
    return events_.empty() && next_arrival_ == arrivals_.size();
  }
  [[nodiscard]] const Event& next() const {
    return arrival_first() ? arrivals_[next_arrival_] : events_.top();
  }
  // Removes the next event and moves the clock to its time.
  Event pop() {
    Event e;
    if (arrival_first()) {
      e = arrivals_[next_arrival_++];
    } else {
      e = events_.top();
      events_.pop();
    }
    now_ = e.time;
    return e;
  }
  [[nodiscard]] double now() const { return now_; }

 private:
  [[nodiscard]] bool arrival_first() const {
    return next_arrival_ < arrivals_.size() &&
           (events_.empty() || events_.top() > arrivals_[next_arrival_]);
  }

  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Event> arrivals_;  // in (time, kind, sequence) order
  std::size_t next_arrival_ = 0;
  std::uint64_t seq_ = 0;
  double now_ = 0.0;
};

}  // namespace aryl::sim
