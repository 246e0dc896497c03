// Sets of small non-negative integers (server ranks) with O(1) insert and erase
// and a fast smallest member: one bitset per set, with a summary word per 64
// words, all sets of a family in one block of memory. The placer's best-fit
// index keeps a family per GPU type, a set per (bucket, free GPUs); a std::set
// there cost a tree node and a malloc for every server filed, and a vector per
// set a malloc per set at every epoch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aryl {

class IndexSets {
 public:
  IndexSets() = default;
  // `sets` empty sets whose members may be 0 .. n - 1.
  IndexSets(int sets, int n)
      : words_per_set_((static_cast<std::size_t>(n) + 63) / 64),
        summary_per_set_((words_per_set_ + 63) / 64),
        words_(static_cast<std::size_t>(sets) * words_per_set_, 0),
        summary_(static_cast<std::size_t>(sets) * summary_per_set_, 0),
        size_(static_cast<std::size_t>(sets), 0) {}

  void insert(int set, int i) {
    const std::size_t w = word(set, i);
    words_[w] |= bit(static_cast<std::size_t>(i));
    const std::size_t local = w - base(set);
    summary_[summary_base(set) + (local >> 6)] |= bit(local);
    ++size_[static_cast<std::size_t>(set)];
  }
  // `i` must be a member of `set`.
  void erase(int set, int i) {
    const std::size_t w = word(set, i);
    words_[w] &= ~bit(static_cast<std::size_t>(i));
    const std::size_t local = w - base(set);
    if (words_[w] == 0) summary_[summary_base(set) + (local >> 6)] &= ~bit(local);
    --size_[static_cast<std::size_t>(set)];
  }
  [[nodiscard]] bool contains(int set, int i) const {
    return (words_[word(set, i)] & bit(static_cast<std::size_t>(i))) != 0;
  }
  [[nodiscard]] bool empty(int set) const { return size(set) == 0; }
  [[nodiscard]] int size(int set) const { return size_[static_cast<std::size_t>(set)]; }
  // The smallest member of `set`, which must not be empty.
  [[nodiscard]] int first(int set) const {
    std::size_t s = summary_base(set);
    while (summary_[s] == 0) ++s;
    const std::size_t local = ((s - summary_base(set)) << 6) + lowest(summary_[s]);
    return static_cast<int>((local << 6) + lowest(words_[base(set) + local]));
  }

 private:
  static std::uint64_t bit(std::size_t i) { return std::uint64_t{1} << (i & 63); }
  static std::size_t lowest(std::uint64_t word) {
    return static_cast<std::size_t>(__builtin_ctzll(word));
  }
  [[nodiscard]] std::size_t base(int set) const {
    return static_cast<std::size_t>(set) * words_per_set_;
  }
  [[nodiscard]] std::size_t summary_base(int set) const {
    return static_cast<std::size_t>(set) * summary_per_set_;
  }
  [[nodiscard]] std::size_t word(int set, int i) const {
    return base(set) + (static_cast<std::size_t>(i) >> 6);
  }

  std::size_t words_per_set_ = 0;
  std::size_t summary_per_set_ = 0;
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> summary_;  // bit w of a set: its word w is not zero
  std::vector<int> size_;               // set -> members
};

}  // namespace aryl
