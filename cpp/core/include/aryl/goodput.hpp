// The Pollux goodput model (Qiao et al., OSDI'21): a job's throughput as a
// function of its placement and batch size, fitted to the step times it has
// measured; its statistical efficiency from gradient-noise statistics; the batch
// size and gradient accumulation that maximise goodput = throughput x efficiency;
// and speedup relative to one GPU. Deterministic, no I/O.
//
// The model (times in seconds, m = per-GPU "atomic" batch, K replicas, N nodes,
// s accumulation steps):
//   T_accum(m)  = alpha_c + beta_c * m
//   T_net(N, K) = alpha_n + beta_n * max(K - 2, 1e-8)   if N > 1 (inter-node)
//               = alpha_r + beta_r * max(K - 2, 1e-8)   if N = 1, K > 1
//               = 1e-8 + 1e-8 * max(K - 2, 1e-8)        if K = 1
//   T_optim     = (T_accum^gamma + T_net^gamma)^(1/gamma)
//   T_iter      = s * T_accum + T_optim,  throughput X = K * m * (s + 1) / T_iter
//   efficiency  E(M) = r / S, S = M / M0, r = (var + sqr) / (var / S + sqr)
//   goodput     G = X * E
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace aryl {

// The seven throughput parameters, in this order everywhere (arrays, bindings).
struct PerfParams {
  double alpha_c = 0.0, beta_c = 0.0;  // compute time per step: alpha_c + beta_c * m
  double alpha_n = 0.0, beta_n = 0.0;  // inter-node network time and retrogression
  double alpha_r = 0.0, beta_r = 0.0;  // intra-node network time and retrogression
  double gamma = 1.0;                  // compute/network overlap, in [1, 10]

  std::array<double, 7> array() const;
  static PerfParams from_array(const std::array<double, 7>& values);
};

// Gradient-noise statistics: |E g|^2 and the variance of a single-sample-scale
// gradient estimate, as Pollux measures them at the initial batch size.
struct GradParams {
  double sqr = 0.0;
  double var = 0.0;
};

// Predicted times of one step (no accumulation) for N nodes, K replicas, atomic
// batch m: compute time T_accum and the whole step T_optim.
double predict_accum_time(const PerfParams& p, double atomic_bsz);
double predict_network_time(const PerfParams& p, int num_nodes, int num_replicas);
double predict_step_time(const PerfParams& p, int num_nodes, int num_replicas,
                         double atomic_bsz);

// One measured profile: N nodes, K replicas, atomic batch m -> compute time
// (step - sync) and whole step time, both > 0.
struct ProfileSample {
  int num_nodes = 1;
  int num_replicas = 1;
  double atomic_bsz = 1.0;
  double accum_time = 0.0;  // step_time - sync_time
  double step_time = 0.0;
};

// What the fit did, for diagnostics and tests.
struct FitReport {
  PerfParams params;
  double objective = 0.0;  // at params, before the post-fit alpha_n/beta_n prior
  int iterations = 0;
  std::array<bool, 7> pinned{};  // parameters held fixed (missing data)
};

// Fits the seven parameters to the samples, minimising the artifact's objective
//   RMSE(log T_accum) + RMSE(log T_optim) + 1e-3 (gamma - 1)^2
//   + 1e-2 ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2)
// within the bounds alpha, beta >= 1e-8, gamma in [1, 10], from the start
// (0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001), with these parameters pinned:
//  - one distinct atomic batch: alpha_c = mean(accum_time) / 2;
//  - no sample with N > 1: alpha_n = beta_n = 1e-8 during the fit, and afterwards
//    alpha_n = max(alpha_n, 1.1 alpha_r), beta_n = max(beta_n, 1.1 beta_r);
//  - no sample with N = 1 and K > 1: alpha_r = beta_r = 1e-8;
//  - no sample with K > 2: beta_n = beta_r = 1e-8.
// The solver is a projected quasi-Newton method (BFGS on the free parameters,
// positive parameters in log space, gamma boxed, Armijo backtracking), with the
// analytic gradient. Deterministic. std::invalid_argument names the first bad
// sample (no samples, N < 1, K < N, m <= 0, non-positive or non-finite times).
FitReport fit_perf_params_report(const std::vector<ProfileSample>& samples);
PerfParams fit_perf_params(const std::vector<ProfileSample>& samples);

// The fit's objective at given parameters (for tests and diagnostics).
double fit_objective(const PerfParams& p, const std::vector<ProfileSample>& samples);

// Limits of a job's batch: the initial (smallest) global batch M0, the largest
// global batch, and the per-GPU atomic batch range.
struct BatchLimits {
  double init_batch_size = 1.0;  // M0 > 0
  double max_batch_size = 1.0;   // >= M0
  int min_atomic_bsz = 1;        // >= 1
  int max_atomic_bsz = 1;        // >= min_atomic_bsz
};

// A batch configuration and what it is worth.
struct BatchChoice {
  int atomic_bsz = 0;
  int accum_steps = 0;
  double goodput = 0.0;     // samples per second x efficiency (0 = infeasible)
  double throughput = 0.0;  // samples per second
  double efficiency = 0.0;
};

// std::invalid_argument unless 0 <= num_nodes <= num_replicas, both 0 or both > 0.
void check_allocation(int num_nodes, int num_replicas);

// (atomic_bsz, accum_steps) of a fixed global batch M on K >= 1 replicas, as the
// artifact's simulator sets it: local = ceil(M / K - 1e-8), s = ceil(local / m_max
// - 1e-8) - 1 (at least 1 when K = 1 and M > M0), m = ceil(local / (s + 1) -
// 1e-8), then m capped at floor(M_max / (K (s + 1))). std::invalid_argument for
// K < 1 or M not finite and > 0.
std::pair<int, int> fixed_batch(const BatchLimits& limits, int num_replicas,
                                double batch_size);

class GoodputModel {
 public:
  // std::invalid_argument for non-finite parameters, gamma outside [1, 10],
  // negative grad statistics, or inconsistent limits.
  GoodputModel(PerfParams perf, GradParams grad, BatchLimits limits);

  const PerfParams& perf() const { return perf_; }
  const GradParams& grad() const { return grad_; }
  const BatchLimits& limits() const { return limits_; }

  // Samples per second for N nodes, K replicas, atomic batch m, s accumulation steps.
  double throughput(int num_nodes, int num_replicas, double atomic_bsz,
                    int accum_steps) const;
  // Statistical efficiency of the global batch M (1 at M = M0, <= 1 above).
  double efficiency(double batch_size) const;
  // throughput x efficiency(K m (s + 1)).
  double goodput(int num_nodes, int num_replicas, double atomic_bsz,
                 int accum_steps) const;

  // The batch a Pollux job would choose on N nodes with K replicas: 50 global
  // batches geometrically spaced in [max(M0, m_min K), M_max]; local = M / K;
  // s = ceil(local / m_max - 1e-8) - 1 (at least 1 when K = 1 and local > M0);
  // m = ceil(local / (s + 1) - 1e-8); configurations with m outside
  // [m_min, m_max] are worth 0; the first best goodput wins. goodput = 0 (and
  // atomic_bsz = 0) for K = 0. std::invalid_argument unless 0 <= N <= K and
  // (N > 0) == (K > 0).
  BatchChoice optimize(int num_nodes, int num_replicas) const;
  // optimize(N, K).goodput / optimize(1, 1).goodput (0 for K = 0).
  double speedup(int num_nodes, int num_replicas) const;
  // The batch a job actually runs on N nodes and K >= 1 replicas, as the
  // artifact's simulator sets it: with batch_size <= 0 the adaptive choice of
  // optimize(); with a fixed global batch M (the user's, as Tiresias jobs keep)
  // local = ceil(M / K - 1e-8), s = ceil(local / m_max - 1e-8) - 1 (at least 1
  // when K = 1 and M > M0), m = ceil(local / (s + 1) - 1e-8). Either way m is then
  // capped at floor(M_max / (K (s + 1))), and goodput/throughput/efficiency are
  // those of the result (per the model).
  BatchChoice configure(int num_nodes, int num_replicas, double batch_size = 0.0) const;

 private:
  PerfParams perf_;
  GradParams grad_;
  BatchLimits limits_;
};

// The statistical gain of one step at scale S = M / M0:
// (var + sqr) / (var / S + sqr), or 1 when the denominator is not positive.
double statistical_gain(const GradParams& grad, double scale);

}  // namespace aryl
