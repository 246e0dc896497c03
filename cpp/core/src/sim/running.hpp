// The running jobs in trace order, for the engine's epochs to visit. A start or a
// stop is noted in O(1); the ordered list is settled once, in one pass, when it is
// next read. A sorted vector kept exact moved every later id at each start and
// stop: at millions of jobs with thousands running, that was a cost of jobs x
// running jobs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace aryl::sim {

class RunningJobs {
 public:
  void started(int j) {
    started_.push_back(j);
    ++size_;
  }
  void stopped(int j) {
    stopped_.push_back(j);
    --size_;
  }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // The running jobs in trace order.
  [[nodiscard]] const std::vector<int>& ids() const {
    if (!started_.empty() || !stopped_.empty()) settle();
    return ids_;
  }
  [[nodiscard]] std::vector<int>::const_iterator begin() const { return ids().begin(); }
  [[nodiscard]] std::vector<int>::const_iterator end() const { return ids().end(); }

 private:
  // Starts and stops of one job alternate, so its count in the list plus its
  // starts less its stops is 0 or 1: merge in the starts, take out the stops
  // (a multiset difference of sorted ranges).
  void settle() const {
    std::sort(started_.begin(), started_.end());
    std::sort(stopped_.begin(), stopped_.end());
    merged_.clear();
    std::merge(ids_.begin(), ids_.end(), started_.begin(), started_.end(),
               std::back_inserter(merged_));
    ids_.clear();
    std::set_difference(merged_.begin(), merged_.end(), stopped_.begin(),
                        stopped_.end(), std::back_inserter(ids_));
    started_.clear();
    stopped_.clear();
  }

  mutable std::vector<int> ids_, started_, stopped_, merged_;
  std::size_t size_ = 0;
};

}  // namespace aryl::sim
