// The running jobs in trace order, for the engine's epochs to visit. A start or a
// stop is noted in O(1); the ordered list is settled once, in one pass, when it is
// next read. A sorted vector kept exact moved every later id at each start and
// stop: at millions of jobs with thousands running, that was a cost of jobs x
// running jobs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace aryl::sim {

class RunningJobs {
 public:
  // `running(j)`: whether job j runs now (the engine's status), read at settling.
  explicit RunningJobs(std::function<bool(int)> running)
      : running_(std::move(running)) {}

  void started(int j) {
    started_.push_back(j);
    ++size_;
  }
  void stopped() {
    --size_;
    stale_ = true;
  }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // The running jobs in trace order.
  [[nodiscard]] const std::vector<int>& ids() const {
    if (stale_ || !started_.empty()) settle();
    return ids_;
  }
  [[nodiscard]] std::vector<int>::const_iterator begin() const { return ids().begin(); }
  [[nodiscard]] std::vector<int>::const_iterator end() const { return ids().end(); }

 private:
  // Drops the jobs stopped since, merges in those started (a job stopped and
  // started again in between appears once).
  void settle() const {
    std::sort(started_.begin(), started_.end());
    const auto middle = static_cast<std::ptrdiff_t>(ids_.size());
    ids_.insert(ids_.end(), started_.begin(), started_.end());
    std::inplace_merge(ids_.begin(), ids_.begin() + middle, ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    ids_.erase(std::remove_if(ids_.begin(), ids_.end(),
                              [this](int j) { return !running_(j); }),
               ids_.end());
    started_.clear();
    stale_ = false;
  }

  std::function<bool(int)> running_;
  mutable std::vector<int> ids_, started_;
  mutable bool stale_ = false;
  std::size_t size_ = 0;
};

}  // namespace aryl::sim
