// The reclaim kernels (Algorithm 1 and its baselines): random, SCF, aryl's
// fewest-preemptions order, least work lost, and the exact search that checks
// them on small states. They share LoanedServers (what returning one server does
// to the jobs on it), so they stay in one file, over the ~500-line bar.
#include "aryl/reclaim.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "index.hpp"

#include "aryl/rng.hpp"

namespace aryl {
namespace {

using Index = std::size_t;

using detail::at;

struct Entry {
  int job;      // in a job's span list: the candidate
  int workers;  // workers of that job on that candidate
};

// What returning one server would do given the current state.
struct Effect {
  double cost = 0.0;  // sum over preempted jobs of 1 / |S_j|
  int preempted = 0;  // jobs that would fall below min_workers
  int scaled = 0;     // workers removed from jobs that stay at or above min
  double work = 0.0;  // least-work: the preempted jobs' work at risk, unshared
};

constexpr double cost_tolerance = 1e-9;

// Work figures (GPU-seconds, possibly large) are equal within a relative 1e-9.
bool same_work(double a, double b) {
  return std::abs(a - b) <= cost_tolerance * (1.0 + std::max(std::abs(a), std::abs(b)));
}

// The on-loan servers ("candidates"; with `eligible`, only those it marks), the
// jobs on them, and the bookkeeping of returning them one at a time: scale in what
// can stay at or above min_workers, preempt (remove everywhere) what cannot.
// Adjacency is kept in flat (CSR) arrays: a few allocations instead of one per
// server and per job.
class LoanedServers {
 public:
  explicit LoanedServers(const ClusterState& state,
                         const std::vector<char>* eligible = nullptr,
                         std::vector<double> risk = {})
      : state_(state),
        initial_(worker_counts(state)),
        count_(initial_),
        risk_(std::move(risk)) {
    if (risk_.empty()) risk_.assign(state.jobs.size(), 0.0);
    std::vector<int> candidate_of(state.servers.size(), -1);
    for (Index s = 0; s < state.servers.size(); ++s) {
      if (!state.servers[s].on_loan || (eligible && !(*eligible)[s])) continue;
      candidate_of[s] = static_cast<int>(candidates_.size());
      candidates_.push_back(static_cast<int>(s));
    }
    build_jobs_on(candidate_of);
    build_spans();
    alive_.assign(state.jobs.size(), 1);
    scaled_.assign(state.jobs.size(), 0);
    returned_.assign(candidates_.size(), 0);
  }

  [[nodiscard]] int size() const { return static_cast<int>(candidates_.size()); }
  [[nodiscard]] int server(int c) const { return candidates_[at(c)]; }
  [[nodiscard]] bool returned(int c) const { return returned_[at(c)] != 0; }
  // (job, workers) of the jobs on candidate c.
  [[nodiscard]] std::span<const Entry> jobs_on(int c) const {
    return {entries_.data() + entry_begin_[at(c)],
            entries_.data() + entry_begin_[at(c) + 1]};
  }
  // (candidate, workers) of the candidates hosting job j.
  [[nodiscard]] std::span<const Entry> span_of(int j) const {
    return {spans_.data() + span_begin_[at(j)], spans_.data() + span_begin_[at(j) + 1]};
  }
  [[nodiscard]] const Job& job(int j) const { return state_.jobs[at(j)]; }
  [[nodiscard]] int initial_workers(int j) const { return initial_[at(j)]; }
  [[nodiscard]] int job_count() const { return static_cast<int>(state_.jobs.size()); }
  // GPU-seconds that preempting job j throws away (work_at_risk; 0 if none given).
  [[nodiscard]] double risk(int j) const { return risk_[at(j)]; }

  // Algorithm 1's view of returning candidate c: each job it would preempt costs
  // 1 / |S_j|.
  [[nodiscard]] Effect effect(int c) const {
    return effect_with(c, [&](Effect& e, int j) { e.cost += 1.0 / span(j); });
  }

  // least-work's view of returning candidate c with `left` picks to go (this one
  // included): each job it would preempt costs its work at risk shared among
  // min(|S_j|, left) servers; `work` is the unshared sum.
  [[nodiscard]] Effect work_effect(int c, int left) const {
    return effect_with(c, [&](Effect& e, int j) {
      e.cost += risk(j) / std::min(span(j), left);
      e.work += risk(j);
    });
  }

  // Returns candidate c; `changed` receives the jobs whose state changed.
  void give_back(int c, std::vector<int>& changed) {
    changed.clear();
    returned_[at(c)] = 1;
    const Server& server = state_.servers[at(candidates_[at(c)])];
    plan_.servers.push_back(candidates_[at(c)]);
    plan_.demand_gpus += server.gpus;
    for (const Entry& x : jobs_on(c)) {
      const Index j = at(x.job);
      if (!alive_[j]) continue;
      changed.push_back(x.job);
      if (scales_in(x)) {
        count_[j] -= x.workers;
        scaled_[j] += x.workers;
      } else {
        alive_[j] = 0;
        plan_.preempted.push_back(x.job);
        plan_.work_lost += risk_[j];
      }
    }
  }

  [[nodiscard]] ReclaimPlan finish() const {
    ReclaimPlan plan = plan_;
    for (Index j = 0; j < scaled_.size(); ++j)
      if (alive_[j] && scaled_[j] > 0)
        plan.scaled_in.emplace_back(static_cast<int>(j), scaled_[j]);
    std::vector<char> gone(state_.servers.size(), 0);
    for (int s : plan.servers) gone[at(s)] = 1;
    for (const Worker& w : state_.workers)
      if (!alive_[at(w.job)] && !gone[at(w.server)])
        plan.collateral_gpus += job(w.job).gpus_per_worker;
    return plan;
  }

 private:
  // Whether the job of entry x keeps min_workers without x's workers.
  [[nodiscard]] bool scales_in(const Entry& x) const {
    return count_[at(x.job)] - x.workers >= job(x.job).min_workers;
  }

  // Returning candidate c: the workers scaled in and the jobs preempted, each of
  // which on_preempt(effect, job) charges.
  template <typename OnPreempt>
  [[nodiscard]] Effect effect_with(int c, OnPreempt on_preempt) const {
    Effect e;
    for (const Entry& x : jobs_on(c)) {
      if (!alive_[at(x.job)]) continue;
      if (scales_in(x)) {
        e.scaled += x.workers;
      } else {
        on_preempt(e, x.job);
        ++e.preempted;
      }
    }
    return e;
  }

  // entries_: per candidate, one (job, workers) per job, by counting sort.
  void build_jobs_on(const std::vector<int>& candidate_of) {
    entry_begin_.assign(candidates_.size() + 1, 0);
    for (const Worker& w : state_.workers)
      if (const int c = candidate_of[at(w.server)]; c >= 0) ++entry_begin_[at(c) + 1];
    std::partial_sum(entry_begin_.begin(), entry_begin_.end(), entry_begin_.begin());
    std::vector<Entry> raw(at(entry_begin_.back()));
    std::vector<int> fill(entry_begin_.begin(), entry_begin_.end() - 1);
    for (const Worker& w : state_.workers)
      if (const int c = candidate_of[at(w.server)]; c >= 0)
        raw[at(fill[at(c)]++)] = {w.job, 1};
    // Merge the workers of one job on one server (a server holds few entries).
    entries_.reserve(raw.size());
    for (Index c = 0; c < candidates_.size(); ++c) {
      const auto first = entries_.size();
      for (int i = entry_begin_[c]; i < entry_begin_[c + 1]; ++i) {
        auto same = std::find_if(
            entries_.begin() + static_cast<std::ptrdiff_t>(first), entries_.end(),
            [&](const Entry& e) { return e.job == raw[at(i)].job; });
        if (same != entries_.end())
          ++same->workers;
        else
          entries_.push_back(raw[at(i)]);
      }
      entry_begin_[c] = static_cast<int>(first);
    }
    entry_begin_.back() = static_cast<int>(entries_.size());
  }

  // spans_: per job, one (candidate, workers) per candidate hosting it.
  void build_spans() {
    span_begin_.assign(state_.jobs.size() + 1, 0);
    for (const Entry& e : entries_) ++span_begin_[at(e.job) + 1];
    std::partial_sum(span_begin_.begin(), span_begin_.end(), span_begin_.begin());
    spans_.resize(entries_.size());
    std::vector<int> fill(span_begin_.begin(), span_begin_.end() - 1);
    for (int c = 0; c < size(); ++c)
      for (const Entry& e : jobs_on(c)) spans_[at(fill[at(e.job)]++)] = {c, e.workers};
  }

  // |S_j|: candidates not yet returned that still host job j.
  [[nodiscard]] int span(int j) const {
    int n = 0;
    for (const Entry& e : span_of(j)) n += returned_[at(e.job)] ? 0 : 1;
    return n;
  }

  const ClusterState& state_;
  std::vector<int> initial_;      // job -> workers at the start
  std::vector<int> count_;        // job -> workers now
  std::vector<int> candidates_;   // candidate -> server index
  std::vector<int> entry_begin_;  // candidate -> first entry in entries_
  std::vector<Entry> entries_;
  std::vector<int> span_begin_;  // job -> first entry in spans_
  std::vector<Entry> spans_;
  std::vector<double> risk_;    // job -> GPU-seconds a preemption throws away
  std::vector<int> scaled_;     // job -> workers scaled in
  std::vector<char> alive_;     // job not preempted
  std::vector<char> returned_;  // candidate returned
  ReclaimPlan plan_;
};

// Is returning a better than returning b? Earlier picks order by cost; the last
// pick has no future to amortise over, so it minimises preempted jobs directly.
bool better(const Effect& a, const Effect& b, bool last) {
  const bool cost_less = a.cost < b.cost - cost_tolerance;
  const bool cost_more = a.cost > b.cost + cost_tolerance;
  if (last && a.preempted != b.preempted) return a.preempted < b.preempted;
  if (cost_less || cost_more) return cost_less;
  if (a.preempted != b.preempted) return a.preempted < b.preempted;
  return a.scaled < b.scaled;
}

// The candidates that preempt nothing, least workers scaled in first (then input
// order): a min-heap of (scaled, candidate) whose entries go stale when the
// candidate is returned or its effect changes (a changed effect pushes a new one).
class FreePicks {
 public:
  void push(int c, const Effect& e) {
    if (e.preempted > 0) return;
    heap_.emplace_back(e.scaled, c);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }
  // The first of them, or -1 if none.
  int first(const LoanedServers& loan, const std::vector<Effect>& effect) {
    while (!heap_.empty()) {
      const auto [scaled, c] = heap_.front();
      const Effect& e = effect[at(c)];
      if (!loan.returned(c) && e.preempted == 0 && e.scaled == scaled) return c;
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
    }
    return -1;
  }

 private:
  std::vector<std::pair<int, int>> heap_;
};

// The candidate to return next: the first best by `better`, in input order.
int scan(const LoanedServers& loan, const std::vector<Effect>& effect, bool last) {
  int best = -1;
  for (int c = 0; c < loan.size(); ++c)
    if (!loan.returned(c) &&
        (best < 0 || better(effect[at(c)], effect[at(best)], last)))
      best = c;
  return best;
}

// The scan, except where a candidate that preempts nothing is left: it is the one
// the scan picks. Such a candidate costs 0 and every other one at least
// 1 / |S_j| >= 1 / candidates, more than the tolerance above it, so the scan's
// best is among them; among them `better` compares workers scaled in alone (the
// last pick puts preempted jobs first, 0 for them), so the scan keeps the first
// with the fewest, the heap's top. Each pick then costs O(log n), not a scan.
void select_aryl(LoanedServers& loan, int n) {
  std::vector<Effect> effect(at(loan.size()));
  FreePicks free;
  const bool heap = 1.0 / std::max(loan.size(), 1) > 2 * cost_tolerance;
  const auto set = [&](int c, const Effect& e) {
    effect[at(c)] = e;
    if (heap) free.push(c, e);
  };
  for (int c = 0; c < loan.size(); ++c) set(c, loan.effect(c));
  std::vector<int> changed;
  for (int pick = 0; pick < n; ++pick) {
    int best = heap ? free.first(loan, effect) : -1;
    if (best < 0) best = scan(loan, effect, pick == n - 1);
    loan.give_back(best, changed);
    for (int j : changed)
      for (const Entry& e : loan.span_of(j))
        if (!loan.returned(e.job)) set(e.job, loan.effect(e.job));
  }
}

// Is returning a better than returning b under least-work? Shared cost, then the
// work thrown away now, then jobs preempted, then workers scaled in.
bool less_work(const Effect& a, const Effect& b) {
  if (!same_work(a.cost, b.cost)) return a.cost < b.cost;
  if (!same_work(a.work, b.work)) return a.work < b.work;
  if (a.preempted != b.preempted) return a.preempted < b.preempted;
  return a.scaled < b.scaled;
}

// Every cost depends on the picks left, so all are recomputed at each pick
// (candidates x their jobs per pick: a few thousand operations in a reclaim).
void select_least_work(LoanedServers& loan, int n) {
  std::vector<int> changed;
  for (int pick = 0; pick < n; ++pick) {
    const int left = n - pick;
    int best = -1;
    Effect best_effect;
    for (int c = 0; c < loan.size(); ++c) {
      if (loan.returned(c)) continue;
      const Effect e = loan.work_effect(c, left);
      if (best < 0 || less_work(e, best_effect)) {
        best = c;
        best_effect = e;
      }
    }
    loan.give_back(best, changed);
  }
}

void give_back_all(LoanedServers& loan, const std::vector<int>& order) {
  std::vector<int> changed;
  for (int c : order) loan.give_back(c, changed);
}

std::vector<int> select_scf(const LoanedServers& loan, int n) {
  std::vector<int> order(at(loan.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return loan.jobs_on(a).size() < loan.jobs_on(b).size();
  });
  order.resize(at(n));
  return order;
}

std::vector<int> select_random(const LoanedServers& loan, int n, std::uint64_t seed) {
  std::vector<int> order(at(loan.size()));
  std::iota(order.begin(), order.end(), 0);
  Rng rng(seed);
  rng.shuffle(order);
  order.resize(at(n));
  return order;
}

double binomial(int n, int k) {
  double r = 1.0;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// The objective of `exact`, compared lexicographically: jobs preempted, then
// collateral GPUs, then workers scaled in; `exact-work` puts the work thrown away
// first.
struct Score {
  double work = 0.0;
  int preempted = 0;
  long long collateral = 0;
  long long scaled = 0;

  [[nodiscard]] bool less(const Score& o, bool by_work) const {
    if (by_work && !same_work(work, o.work)) return work < o.work;
    if (preempted != o.preempted) return preempted < o.preempted;
    if (collateral != o.collateral) return collateral < o.collateral;
    return scaled < o.scaled;
  }
};

// Branch and bound over all candidates, in input order, including a candidate
// before excluding it, so the first best set found is the lexicographically
// first. Preemptions (and so the work thrown away) only grow as servers are
// added, which bounds the search;
// idle servers are interchangeable, so an idle server is never taken after an
// earlier one was left out (the swapped set is as good and comes first).
class ExactSearch {
 public:
  ExactSearch(const LoanedServers& loan, int n, bool by_work)
      : loan_(loan), n_(n), by_work_(by_work) {
    removed_.assign(at(loan_.job_count()), 0);
  }

  std::vector<int> run() {
    dfs(0);
    return best_;
  }

 private:
  // What job j contributes to the score at present.
  [[nodiscard]] Score contribution(int j) const {
    const int removed = removed_[at(j)];
    const int left = loan_.initial_workers(j) - removed;
    if (left >= loan_.job(j).min_workers) return {0.0, 0, 0, removed};
    return {loan_.risk(j), 1,
            static_cast<long long>(left) * loan_.job(j).gpus_per_worker, 0};
  }

  // Adds (sign = +1) or removes (sign = -1) candidate c from the chosen set.
  void apply(int c, int sign) {
    for (const Entry& e : loan_.jobs_on(c)) {
      const Score before = contribution(e.job);
      removed_[at(e.job)] += sign * e.workers;
      const Score after = contribution(e.job);
      score_.work += after.work - before.work;
      score_.preempted += after.preempted - before.preempted;
      score_.collateral += after.collateral - before.collateral;
      score_.scaled += after.scaled - before.scaled;
    }
  }

  void dfs(int next) {
    if (found_ && worse_already()) return;
    if (chosen_.size() == at(n_)) {
      if (!found_ || score_.less(best_score_, by_work_)) {
        found_ = true;
        best_ = chosen_;
        best_score_ = score_;
      }
      return;
    }
    if (loan_.size() - next < n_ - static_cast<int>(chosen_.size())) return;
    const bool idle = loan_.jobs_on(next).empty();
    if (!idle || !skipped_idle_) {
      chosen_.push_back(next);
      apply(next, +1);
      dfs(next + 1);
      apply(next, -1);
      chosen_.pop_back();
    }
    const bool skipped = skipped_idle_;
    skipped_idle_ = skipped_idle_ || idle;
    dfs(next + 1);
    skipped_idle_ = skipped;
  }

  // No superset of the chosen servers can beat the best: its objective's first
  // term (work or preemptions) already exceeds the best's.
  [[nodiscard]] bool worse_already() const {
    if (by_work_)
      return score_.work > best_score_.work &&
             !same_work(score_.work, best_score_.work);
    return score_.preempted > best_score_.preempted;
  }

  const LoanedServers& loan_;
  int n_;
  bool by_work_;
  std::vector<int> removed_;  // job -> workers on chosen servers
  std::vector<int> chosen_;
  Score score_;
  bool skipped_idle_ = false;  // an idle server was left out on this branch
  bool found_ = false;
  std::vector<int> best_;
  Score best_score_;
};

// Server sets the exact search may visit: for every number k of idle servers
// taken (always the first k), C(busy, n - k) sets of busy servers.
double exact_search_space(int idle, int busy, int n) {
  double total = 0.0;
  for (int k = 0; k <= std::min(idle, n); ++k)
    if (n - k <= busy) total += binomial(busy, n - k);
  return total;
}

std::vector<int> select_exact(const LoanedServers& loan, int n, bool by_work) {
  int idle = 0;
  for (int c = 0; c < loan.size(); ++c) idle += loan.jobs_on(c).empty() ? 1 : 0;
  const int busy = loan.size() - idle;
  const double sets = exact_search_space(idle, busy, n);
  if (sets > exact_subset_limit)
    throw std::invalid_argument(
        fmt::format("{} reclaim would search {:.3g} server sets ({} busy and {} "
                    "idle on-loan servers, "
                    "{} to return), more than its limit of {:.0e}; use policy '{}' "
                    "for instances this "
                    "large",
                    by_work ? "exact-work" : "exact", sets, busy, idle, n,
                    exact_subset_limit, by_work ? "least-work" : "aryl"));
  return ExactSearch(loan, n, by_work).run();
}

}  // namespace

ReclaimPolicy parse_reclaim_policy(std::string_view name) {
  if (name == "aryl") return ReclaimPolicy::aryl;
  if (name == "scf") return ReclaimPolicy::scf;
  if (name == "random") return ReclaimPolicy::random;
  if (name == "exact") return ReclaimPolicy::exact;
  if (name == "least-work") return ReclaimPolicy::least_work;
  if (name == "exact-work") return ReclaimPolicy::exact_work;
  throw std::invalid_argument(
      fmt::format("unknown reclaim policy '{}'; expected one of: aryl, scf, random, "
                  "exact, least-work, exact-work",
                  name));
}

std::vector<double> work_at_risk(const ClusterState& state, const WorkAtRisk& work) {
  const std::size_t n = state.jobs.size();
  if (!work.unsaved.empty() && work.unsaved.size() != n)
    throw std::invalid_argument(
        fmt::format("unsaved work: {} values for {} jobs", work.unsaved.size(), n));
  if (!std::isfinite(work.restart_overhead) || work.restart_overhead < 0.0)
    throw std::invalid_argument(fmt::format(
        "restart overhead must be finite and >= 0 s, got {}", work.restart_overhead));
  const std::vector<int> count = worker_counts(state);
  std::vector<double> risk(n, 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    const double unsaved = work.unsaved.empty() ? 0.0 : work.unsaved[j];
    if (!std::isfinite(unsaved) || unsaved < 0.0)
      throw std::invalid_argument(fmt::format(
          "job '{}': unsaved work must be finite and >= 0 GPU-seconds, got {}",
          state.jobs[j].id, unsaved));
    risk[j] = unsaved;
    if (state.jobs[j].checkpoint)
      risk[j] += work.restart_overhead * count[j] * state.jobs[j].gpus_per_worker;
  }
  return risk;
}

std::vector<double> preemption_costs(const ClusterState& state) {
  const LoanedServers loan(state);
  std::vector<double> costs;
  for (int c = 0; c < loan.size(); ++c) costs.push_back(loan.effect(c).cost);
  return costs;
}

namespace {

// A caller's server indices, checked: in range, on loan, not given twice.
void check_on_loan(const ClusterState& state, const std::vector<int>& servers) {
  std::vector<char> seen(state.servers.size(), 0);
  for (const int s : servers) {
    if (s < 0 || at(s) >= state.servers.size())
      throw std::invalid_argument(fmt::format("no server index {}", s));
    if (!state.servers[at(s)].on_loan)
      throw std::invalid_argument(
          fmt::format("server '{}' is not on loan", state.servers[at(s)].id));
    if (seen[at(s)]++)
      throw std::invalid_argument(
          fmt::format("server '{}' is given twice", state.servers[at(s)].id));
  }
}

ReclaimPlan choose(LoanedServers& loan, int n, ReclaimPolicy policy, std::uint64_t seed,
                   std::string_view among) {
  if (n < 0) throw std::invalid_argument(fmt::format("cannot reclaim {} servers", n));
  if (n > loan.size())
    throw std::invalid_argument(fmt::format(
        "asked to reclaim {} servers but only {} {}", n, loan.size(), among));
  switch (policy) {
    case ReclaimPolicy::aryl:
      select_aryl(loan, n);
      break;
    case ReclaimPolicy::scf:
      give_back_all(loan, select_scf(loan, n));
      break;
    case ReclaimPolicy::random:
      give_back_all(loan, select_random(loan, n, seed));
      break;
    case ReclaimPolicy::exact:
      give_back_all(loan, select_exact(loan, n, false));
      break;
    case ReclaimPolicy::least_work:
      select_least_work(loan, n);
      break;
    case ReclaimPolicy::exact_work:
      give_back_all(loan, select_exact(loan, n, true));
      break;
  }
  return loan.finish();
}

}  // namespace

ReclaimPlan reclaim(const ClusterState& state, int n, ReclaimPolicy policy,
                    std::uint64_t seed, const WorkAtRisk& work) {
  LoanedServers loan(state, nullptr, work_at_risk(state, work));
  return choose(loan, n, policy, seed, "are on loan");
}

ReclaimPlan reclaim(const ClusterState& state, int n, ReclaimPolicy policy,
                    std::uint64_t seed, const std::vector<int>& among,
                    const WorkAtRisk& work) {
  check_on_loan(state, among);
  std::vector<double> risk = work_at_risk(state, work);
  std::vector<char> eligible(state.servers.size(), 0);
  for (const int s : among) eligible[at(s)] = 1;
  LoanedServers loan(state, &eligible, std::move(risk));
  return choose(loan, n, policy, seed, "of the servers given are on loan");
}

ReclaimPlan reclaim_servers(const ClusterState& state,
                            const std::vector<int>& servers) {
  check_on_loan(state, servers);
  LoanedServers loan(state);
  std::vector<int> candidate_of(state.servers.size(), -1);
  for (int c = 0; c < loan.size(); ++c) candidate_of[at(loan.server(c))] = c;
  std::vector<int> order;
  for (const int s : servers) order.push_back(candidate_of[at(s)]);
  give_back_all(loan, order);
  return loan.finish();
}

}  // namespace aryl
