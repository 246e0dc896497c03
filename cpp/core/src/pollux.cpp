// The Pollux policy's rounds (PolluxPolicy): one call of optimize checks the
// round's inputs, builds its problem (pollux_objective.cpp), seeds the population
// with last round's (the warm start, rows moved to this round's jobs), runs the
// generations and keeps the final population for the next round.
//
// Each generation makes as many tries as it needs to breed a population of
// children (binary tournament, then the operators of pollux_search.cpp:
// crossover, mutation, repair, score), drops duplicates and keeps the best of
// parents and children (elitist; the artifact's NSGA-II also ranks a second,
// cluster-utility objective, which only matters for autoscaling). A try draws
// from its own stream (the generation's seed and the try's index), so tries run
// on any number of threads (PolluxWorkers) with the same result; the children
// are admitted in try order.
#include "aryl/pollux.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pollux_internal.hpp"
#include "pollux_search.hpp"

namespace aryl {

// Fork-join over the items of a batch: the calling thread and threads - 1
// workers take items in turn; run() returns when every item is done.
class PolluxWorkers {
 public:
  explicit PolluxWorkers(int threads) {
    for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { loop(w); });
  }
  PolluxWorkers(const PolluxWorkers&) = delete;
  PolluxWorkers& operator=(const PolluxWorkers&) = delete;
  ~PolluxWorkers() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  [[nodiscard]] int size() const { return static_cast<int>(threads_.size()) + 1; }

  // task(worker, item) for every item in [0, count); the first exception a task
  // throws is rethrown here, after all have stopped.
  void run(int count, const std::function<void(int, int)>& task) {
    if (threads_.empty() || count < 2) {
      for (int i = 0; i < count; ++i) task(0, i);
      return;
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      count_ = count;
      next_ = 0;
      busy_ = static_cast<int>(threads_.size());
      ++epoch_;
    }
    wake_.notify_all();
    work(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void work(int worker) {
    for (int i = next_++; i < count_; i = next_++) {
      try {
        (*task_)(worker, i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  void loop(int worker) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || epoch_ != seen; });
        if (stop_) return;
        seen = epoch_;
      }
      work(worker);
      const std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* task_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0};
  int busy_ = 0;
  std::uint64_t epoch_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

namespace {

using pollux_detail::Breeder;
using pollux_detail::Cell;
using pollux_detail::Genome;
using pollux_detail::Individual;
using pollux_detail::RoundProblem;

constexpr int kParallelJobs = 32;  // fewer jobs: one thread (measured)

// The genomes of a round, recycled through a free list.
class GenomePool {
 public:
  int acquire() {
    if (free_.empty()) {
      genomes_.emplace_back();
      return static_cast<int>(genomes_.size()) - 1;
    }
    const int slot = free_.back();
    free_.pop_back();
    return slot;
  }
  void release(int slot) { free_.push_back(slot); }
  Genome& operator[](int slot) { return genomes_[static_cast<std::size_t>(slot)]; }

 private:
  std::deque<Genome> genomes_;  // stable addresses while tries run
  std::vector<int> free_;
};

// Per individual, per job (search order), its (node, replicas) cells.
using States = std::vector<std::vector<std::vector<std::pair<int, int>>>>;

// The first population: last round's (`prev`, jobs `prev_keys`), its rows moved
// to this round's jobs (new jobs start with nothing); the current allocation on
// the first round, or when the nodes changed (`warm` false).
std::vector<Genome> first_states(const RoundProblem& problem,
                                 const std::vector<PolluxJob>& jobs,
                                 const std::vector<int>& order,
                                 const std::vector<std::int64_t>& prev_keys,
                                 const States& prev, bool warm) {
  std::vector<Genome> seeds;
  if (!warm || prev.empty()) {
    seeds.push_back(problem.base);
    return seeds;
  }
  std::unordered_map<std::int64_t, std::size_t> prev_row;
  for (std::size_t i = 0; i < prev_keys.size(); ++i) prev_row[prev_keys[i]] = i;
  for (const auto& old : prev) {
    Genome s;
    for (const int j : order) {
      const auto it = prev_row.find(jobs[static_cast<std::size_t>(j)].key);
      if (it != prev_row.end())
        for (const auto& [node, count] : old[it->second])
          s.cells.push_back({node, count});
      s.close_row();
    }
    seeds.push_back(std::move(s));
  }
  return seeds;
}

// The population's states as rows of cells, to seed the next round.
States states_of(GenomePool& pool, const std::vector<Individual>& population,
                 int jobs) {
  States states;
  for (const Individual& i : population) {
    const Genome& s = pool[i.slot];
    auto& rows = states.emplace_back(static_cast<std::size_t>(jobs));
    for (int j = 0; j < jobs; ++j)
      for (const Cell* c = s.begin(j); c != s.end(j); ++c)
        rows[static_cast<std::size_t>(j)].emplace_back(c->node, c->count);
  }
  return states;
}

}  // namespace

PolluxPolicy::PolluxPolicy(PolluxOptions options)
    : options_(options), rng_(options.seed) {
  if (options.population < 2 || options.generations < 0 ||
      options.max_nodes_per_job < 1 || options.threads < 1 ||
      !(options.restart_delay >= 0.0))
    throw std::invalid_argument(fmt::format(
        "pollux: need population >= 2, generations >= 0, max_nodes_per_job >= 1, "
        "threads >= 1 and restart_delay >= 0, got {}, {}, {}, {}, {}",
        options.population, options.generations, options.max_nodes_per_job,
        options.threads, options.restart_delay));
}

PolluxPolicy::~PolluxPolicy() = default;
PolluxPolicy::PolluxPolicy(PolluxPolicy&&) noexcept = default;
PolluxPolicy& PolluxPolicy::operator=(PolluxPolicy&&) noexcept = default;

std::vector<std::vector<int>> PolluxPolicy::optimize(
    const std::vector<PolluxJob>& jobs, const std::vector<int>& node_gpus) {
  pollux_detail::check_nodes(node_gpus);
  pollux_detail::check_jobs(jobs, node_gpus);
  if (!options_.record.empty() && rounds_++ % std::max(options_.record_every, 1) == 0)
    pollux_detail::record_round(options_.record, jobs, node_gpus);
  const int nodes = static_cast<int>(node_gpus.size());
  std::vector<std::vector<int>> result(jobs.size(),
                                       std::vector<int>(node_gpus.size(), 0));
  const int total = std::accumulate(node_gpus.begin(), node_gpus.end(), 0);
  if (jobs.empty() || total == 0) {
    prev_states_.clear();
    prev_keys_.clear();
    goodputs_.clear();
    last_objective_ = 0.0;
    return result;
  }
  const std::vector<int> order = pollux_detail::priority_order(jobs);
  const RoundProblem problem(
      jobs, order, node_gpus, options_,
      pollux_detail::goodput_tables(
          jobs, order, std::min(options_.max_nodes_per_job, nodes), goodputs_));
  const int jobs_n = problem.jobs;
  if (!workers_) workers_ = std::make_unique<PolluxWorkers>(options_.threads);
  // Waking threads costs more than a small round's batch of tries.
  const bool parallel = workers_->size() > 1 && jobs_n >= kParallelJobs;
  std::vector<Breeder> breeders(
      static_cast<std::size_t>(parallel ? workers_->size() : 1), Breeder(problem));

  const std::vector<Genome> seeds = first_states(problem, jobs, order, prev_keys_,
                                                 prev_states_, prev_nodes_ == nodes);
  GenomePool pool;
  std::vector<Individual> population, children;
  std::unordered_set<std::uint64_t> seen;
  // Keeps the scored child in `slot` (in `into`) unless a duplicate.
  const auto admit = [&](int slot, std::vector<Individual>& into) {
    const Genome& s = pool[slot];
    if (!seen.insert(s.hash).second) {
      pool.release(slot);
      return;
    }
    into.push_back({slot, s.value, s.hash});
  };
  const std::uint64_t seed_stream = rng_.next();
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const int slot = pool.acquire();
    Rng rng = pollux_detail::stream(seed_stream, static_cast<int>(i));
    breeders[0].admit_seed(seeds[i], rng, pool[slot]);
    admit(slot, population);
  }

  const auto size = static_cast<std::size_t>(options_.population);
  const auto better = [](const Individual& a, const Individual& b) {
    return a.value > b.value;
  };
  std::vector<std::pair<int, int>> slots;  // children of each try of a batch
  for (int g = 0; g < options_.generations; ++g) {
    children.clear();
    const std::uint64_t generation_seed = rng_.next();
    // Tries in batches of as many as could still fill the children, at most
    // `size` in all; a try's children are admitted in try order.
    for (std::size_t tries = 0; children.size() < size && tries < size;) {
      const std::size_t batch =
          std::min((size - children.size() + 1) / 2, size - tries);
      slots.clear();
      for (std::size_t t = 0; t < batch; ++t)
        slots.emplace_back(pool.acquire(), pool.acquire());
      const std::function<void(int, int)> try_one = [&](int worker, int t) {
        // Its own stream: the same children on any number of threads.
        Rng rng = pollux_detail::stream(generation_seed, static_cast<int>(tries) + t);
        const auto pick = [&]() -> int {  // binary tournament
          const Individual& a = population[rng.below(population.size())];
          const Individual& b = population[rng.below(population.size())];
          return (b.value > a.value ? b : a).slot;
        };
        const int b = pick(), a = pick();
        const auto [c, d] = slots[static_cast<std::size_t>(t)];
        breeders[static_cast<std::size_t>(worker)].breed(pool[a], pool[b], rng, pool[c],
                                                         pool[d]);
      };
      if (parallel)
        workers_->run(static_cast<int>(batch), try_one);
      else
        for (int t = 0; t < static_cast<int>(batch); ++t) try_one(0, t);
      for (const auto& [c, d] : slots) {
        for (const int slot : {c, d})
          if (children.size() < size)
            admit(slot, children);
          else
            pool.release(slot);
      }
      tries += batch;
    }
    pollux_detail::keep_best(population, children, size, g == 0,
                             [&](const Individual& i) {
                               seen.erase(i.hash);
                               pool.release(i.slot);
                             });
  }
  std::stable_sort(population.begin(), population.end(), better);

  const Genome& best = pool[population.front().slot];
  for (int j = 0; j < jobs_n; ++j)
    for (const Cell* c = best.begin(j); c != best.end(j); ++c)
      result[static_cast<std::size_t>(order[j])][static_cast<std::size_t>(c->node)] =
          c->count;
  last_objective_ = population.front().value;
  prev_states_ = states_of(pool, population, jobs_n);
  prev_keys_.clear();
  for (const int j : order) prev_keys_.push_back(jobs[static_cast<std::size_t>(j)].key);
  prev_nodes_ = nodes;
  return result;
}

}  // namespace aryl
