// A small deterministic RNG (SplitMix64). The standard distributions are
// implementation-defined, so seeded results would differ between standard
// libraries; this one gives the same stream everywhere.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace aryl {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31U);
  }

  // Uniform in [0, bound), bound >= 1, without modulo bias (rejection).
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % bound;
  }

  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11U) * 0x1.0p-53; }

  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[static_cast<std::size_t>(below(i))]);
  }

 private:
  std::uint64_t state_;
};

}  // namespace aryl
