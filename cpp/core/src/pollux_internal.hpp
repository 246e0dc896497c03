// What the Pollux search (pollux.cpp, pollux_search.cpp, pollux_objective.cpp)
// and its reference (pollux_reference.cpp) share: the input checks, the jobs'
// search order and a round's record (pollux_inputs.cpp), the artifact's
// chances, the hash finaliser and the population's selection.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aryl/pollux.hpp"
#include "aryl/rng.hpp"

namespace aryl::pollux_detail {

inline constexpr double kMutateRow = 0.1;    // chance a row resets, or is thinned
inline constexpr double kThinElement = 0.1;  // chance a thinned row's cell is zeroed
inline constexpr double kCrossover = 0.9;    // pymoo's default crossover probability

// std::invalid_argument for a node with negative GPUs.
void check_nodes(const std::vector<int>& node_gpus);

// std::invalid_argument for a bad job (see PolluxPolicy::optimize).
void check_jobs(const std::vector<PolluxJob>& jobs, const std::vector<int>& node_gpus);

// Search order: smallest minimum first (adaptdl's: jobs that want no guarantee
// get the contested GPUs), then least attained service, earliest submitted, key.
std::vector<int> priority_order(const std::vector<PolluxJob>& jobs);

// Appends one round's inputs to `path` as a line of JSON (PolluxOptions::record;
// benchmarks/pollux_replay.py replays them); std::invalid_argument if it cannot.
void record_round(const std::string& path, const std::vector<PolluxJob>& jobs,
                  const std::vector<int>& node_gpus);

// SplitMix64's finaliser: folds a hash (or a seed) so that no bit's difference
// is lost.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

// Rng::uniform() < p decided on the integer draw, exactly: uniform() is
// k * 2^-53 for k = next() >> 11, so it is below p iff k < ceil(p * 2^53).
inline std::uint64_t threshold(double p) {
  if (!(p > 0.0)) return 0;
  if (p >= 1.0) return std::uint64_t{1} << 53U;
  return static_cast<std::uint64_t>(std::ceil(p * 0x1.0p53));
}

inline bool chance(Rng& rng, std::uint64_t threshold) {
  return (rng.next() >> 11U) < threshold;
}

// A member of a population: where its state is kept, its objective and hash.
struct Individual {
  int slot;
  double value;
  std::uint64_t hash;
};

// The best `size` of population + children by value, as stable_sort(population +
// children) gives them (parents before equal children); drop(i) for each of the
// others. The population must be sorted unless `first` (the first generation).
template <typename Individual, typename Drop>
void keep_best(std::vector<Individual>& population, std::vector<Individual>& children,
               std::size_t size, bool first, Drop drop) {
  const auto better = [](const Individual& a, const Individual& b) {
    return a.value > b.value;
  };
  const auto parents = static_cast<std::ptrdiff_t>(population.size());
  std::stable_sort(children.begin(), children.end(), better);
  population.insert(population.end(), children.begin(), children.end());
  if (first)
    std::stable_sort(population.begin(), population.end(), better);
  else
    std::inplace_merge(population.begin(), population.begin() + parents,
                       population.end(), better);
  if (population.size() <= size) return;
  for (std::size_t i = size; i < population.size(); ++i) drop(population[i]);
  population.resize(size);
}

}  // namespace aryl::pollux_detail
