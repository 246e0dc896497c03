// The goodput model (Pollux's: throughput x statistical efficiency) and its fit
// (a projected BFGS over the model's parameters): one model and the one fit of
// it, over the ~500-line bar by the fit's few hundred lines.
#include "aryl/goodput.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <tuple>

#include "numbers.hpp"

namespace aryl {
namespace {

constexpr double tiny = 1e-8;         // the artifact's lower bound and "no link" time
constexpr double floor_eps = 1e-8;    // tolerance of the batch-size floor/ceil
constexpr int batch_candidates = 50;  // np.geomspace's default count
constexpr int n_params = 7;
constexpr int gamma_index = 6;

using Vector = Eigen::Matrix<double, n_params, 1>;

using detail::finite_positive;

// Which link dominates a step: inter-node, intra-node, or none (one replica).
enum class Link { inter, intra, none };

Link link_of(int num_nodes, int num_replicas) {
  if (num_nodes > 1) return Link::inter;
  if (num_replicas > 1) return Link::intra;
  return Link::none;
}

double retrogression(int num_replicas) { return std::max(num_replicas - 2.0, tiny); }

// log((a^g + n^g)^(1/g)) and the weights a^g / (a^g + n^g), n^g / (...), computed
// without overflow.
struct LogOptim {
  double value, weight_a, weight_n;
};

LogOptim log_optim(double accum, double network, double gamma) {
  const double la = gamma * std::log(accum), ln = gamma * std::log(network);
  const double top = std::max(la, ln);
  const double ea = std::exp(la - top), en = std::exp(ln - top), sum = ea + en;
  return {(top + std::log(sum)) / gamma, ea / sum, en / sum};
}

void check_params(const PerfParams& p) {
  const auto values = p.array();
  static const char* names[n_params] = {"alpha_c", "beta_c", "alpha_n", "beta_n",
                                        "alpha_r", "beta_r", "gamma"};
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]) || values[i] <= 0.0)
      throw std::invalid_argument(fmt::format(
          "perf params: {} must be finite and > 0, got {}", names[i], values[i]));
  if (p.gamma < 1.0 || p.gamma > 10.0)
    throw std::invalid_argument(
        fmt::format("perf params: gamma must be in [1, 10], got {}", p.gamma));
}

void check_limits(const BatchLimits& limits) {
  if (!finite_positive(limits.init_batch_size) ||
      !std::isfinite(limits.max_batch_size) ||
      limits.max_batch_size < limits.init_batch_size)
    throw std::invalid_argument(fmt::format(
        "batch limits: need 0 < init_batch_size <= max_batch_size, got {} and {}",
        limits.init_batch_size, limits.max_batch_size));
  if (limits.min_atomic_bsz < 1 || limits.max_atomic_bsz < limits.min_atomic_bsz)
    throw std::invalid_argument(fmt::format(
        "batch limits: need 1 <= min_atomic_bsz <= max_atomic_bsz, got {} and {}",
        limits.min_atomic_bsz, limits.max_atomic_bsz));
}

void check_samples(const std::vector<ProfileSample>& samples) {
  if (samples.empty())
    throw std::invalid_argument("profile samples: need at least one sample");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const ProfileSample& s = samples[i];
    if (s.num_nodes < 1 || s.num_replicas < s.num_nodes)
      throw std::invalid_argument(
          fmt::format("profile sample {}: need 1 <= num_nodes <= num_replicas, got {} "
                      "nodes, {} replicas",
                      i, s.num_nodes, s.num_replicas));
    if (!finite_positive(s.atomic_bsz))
      throw std::invalid_argument(fmt::format(
          "profile sample {}: atomic_bsz must be > 0, got {}", i, s.atomic_bsz));
    if (!finite_positive(s.accum_time) || !finite_positive(s.step_time))
      throw std::invalid_argument(
          fmt::format("profile sample {}: accum_time and step_time must be finite and "
                      "> 0, got {} and {}",
                      i, s.accum_time, s.step_time));
  }
}

// The objective and its gradient with respect to the seven parameters.
double objective(const Vector& p, const std::vector<ProfileSample>& samples,
                 Vector* grad) {
  const double n = static_cast<double>(samples.size());
  const double gamma = p[gamma_index];
  double sum1 = 0.0, sum2 = 0.0;
  Vector g1 = Vector::Zero(), g2 = Vector::Zero();
  for (const ProfileSample& s : samples) {
    const double accum = p[0] + p[1] * s.atomic_bsz;
    const Link link = link_of(s.num_nodes, s.num_replicas);
    const double retro = retrogression(s.num_replicas);
    const int ai = link == Link::inter ? 2 : 4;  // index of this link's alpha
    const double network =
        link == Link::none ? tiny + tiny * retro : p[ai] + p[ai + 1] * retro;
    const LogOptim lo = log_optim(accum, network, gamma);
    const double r1 = std::log(accum) - std::log(s.accum_time);
    const double r2 = lo.value - std::log(s.step_time);
    sum1 += r1 * r1;
    sum2 += r2 * r2;
    if (grad) {
      g1[0] += r1 / accum;
      g1[1] += r1 * s.atomic_bsz / accum;
      g2[0] += r2 * lo.weight_a / accum;
      g2[1] += r2 * lo.weight_a * s.atomic_bsz / accum;
      if (link != Link::none) {
        g2[ai] += r2 * lo.weight_n / network;
        g2[ai + 1] += r2 * lo.weight_n * retro / network;
      }
      g2[gamma_index] +=
          r2 *
          (lo.weight_a * std::log(accum) + lo.weight_n * std::log(network) - lo.value) /
          gamma;
    }
  }
  const double e1 = std::sqrt(sum1 / n), e2 = std::sqrt(sum2 / n);
  const double ratio_n = p[3] / p[2], ratio_r = p[5] / p[4];
  const double value = e1 + e2 + 1e-3 * (gamma - 1.0) * (gamma - 1.0) +
                       1e-2 * (ratio_n * ratio_n + ratio_r * ratio_r);
  if (grad) {
    Vector g = Vector::Zero();
    if (e1 > 0.0) g += g1 / (n * e1);
    if (e2 > 0.0) g += g2 / (n * e2);
    g[gamma_index] += 2e-3 * (gamma - 1.0);
    g[3] += 2e-2 * ratio_n / p[2];
    g[2] -= 2e-2 * ratio_n * ratio_n / p[2];
    g[5] += 2e-2 * ratio_r / p[4];
    g[4] -= 2e-2 * ratio_r * ratio_r / p[4];
    *grad = g;
  }
  return value;
}

// Projected BFGS in the solver's coordinates x: log p for the six positive
// parameters, gamma itself; pinned parameters never move.
class BoundedSolver {
 public:
  BoundedSolver(const std::vector<ProfileSample>& samples,
                const std::array<bool, 7>& pinned)
      : samples_(samples) {
    for (int i = 0; i < n_params; ++i)
      if (!pinned[static_cast<std::size_t>(i)]) free_.push_back(i);
    lower_.setConstant(std::log(tiny));
    upper_.setConstant(std::numeric_limits<double>::infinity());
    lower_[gamma_index] = 1.0;
    upper_[gamma_index] = 10.0;
  }

  // Minimises from p0 (pinned entries of p0 are kept); returns the iterations used.
  int solve(Vector& p) {
    const int d = static_cast<int>(free_.size());
    if (d == 0) return 0;
    Eigen::VectorXd x = project(gather(to_x(p)));
    Eigen::VectorXd g;
    double f = eval(x, p, g);
    Eigen::MatrixXd h = Eigen::MatrixXd::Identity(d, d);
    bool fresh = true;
    std::vector<bool> previous_active(static_cast<std::size_t>(d), false);
    int iteration = 0;
    for (; iteration < max_iterations; ++iteration) {
      const Eigen::VectorXd projected = x - project(x - g);
      if (projected.lpNorm<Eigen::Infinity>() < gradient_tolerance) break;
      std::vector<bool> active(static_cast<std::size_t>(d));
      for (int i = 0; i < d; ++i)
        active[static_cast<std::size_t>(i)] =
            (x[i] <= lo(i) && g[i] > 0) || (x[i] >= hi(i) && g[i] < 0);
      if (active != previous_active) {  // the curvature pairs were of another face
        h.setIdentity();
        fresh = true;
        previous_active = active;
      }
      Eigen::VectorXd direction = direction_of(h, g, active);
      if (direction.dot(g) >=
          0.0) {  // not a descent direction: restart from steepest descent
        h.setIdentity();
        fresh = true;
        direction = direction_of(h, g, active);
        if (direction.dot(g) >= 0.0) break;
      }
      double step = 1.0, f_new = f;
      Eigen::VectorXd x_new, g_new;
      bool accepted = false;
      for (int k = 0; k < 60; ++k, step *= 0.5) {
        x_new = project(x + step * direction);
        f_new = eval(x_new, p, g_new);
        if (std::isfinite(f_new) && f_new <= f + 1e-4 * g.dot(x_new - x)) {
          accepted = true;
          break;
        }
      }
      if (!accepted) {
        if (fresh) break;
        h.setIdentity();
        fresh = true;
        eval(x, p, g);
        continue;
      }
      const Eigen::VectorXd s = x_new - x, y = g_new - g;
      const double sy = s.dot(y);
      if (sy > 1e-12 * s.norm() * y.norm()) {
        if (fresh) h *= sy / y.dot(y);  // scale the first inverse Hessian
        const double rho = 1.0 / sy;
        const Eigen::MatrixXd left =
            Eigen::MatrixXd::Identity(d, d) - rho * s * y.transpose();
        h = left * h * left.transpose() + rho * s * s.transpose();
        fresh = false;
      }
      const double decrease = f - f_new;
      x = x_new;
      g = g_new;
      f = f_new;
      if (decrease <= function_tolerance * std::max({1.0, std::abs(f)})) {
        ++iteration;
        break;
      }
    }
    eval(x, p, g);  // leaves the final parameters in p
    return iteration;
  }

 private:
  static constexpr int max_iterations = 2000;
  static constexpr double gradient_tolerance = 1e-10;
  static constexpr double function_tolerance = 1e-12;

  double lo(int i) const { return lower_[free_[static_cast<std::size_t>(i)]]; }
  double hi(int i) const { return upper_[free_[static_cast<std::size_t>(i)]]; }

  static Vector to_x(const Vector& p) {
    Vector x = p;
    for (int i = 0; i < gamma_index; ++i) x[i] = std::log(p[i]);
    return x;
  }

  Eigen::VectorXd gather(const Vector& full) const {
    Eigen::VectorXd out(static_cast<Eigen::Index>(free_.size()));
    for (std::size_t i = 0; i < free_.size(); ++i)
      out[static_cast<Eigen::Index>(i)] = full[free_[i]];
    return out;
  }

  Eigen::VectorXd project(Eigen::VectorXd x) const {
    for (Eigen::Index i = 0; i < x.size(); ++i)
      x[i] = std::clamp(x[i], lo(static_cast<int>(i)), hi(static_cast<int>(i)));
    return x;
  }

  // -H g on the inactive coordinates, 0 on the active ones.
  static Eigen::VectorXd direction_of(const Eigen::MatrixXd& h,
                                      const Eigen::VectorXd& g,
                                      const std::vector<bool>& active) {
    Eigen::VectorXd masked = g;
    for (Eigen::Index i = 0; i < g.size(); ++i)
      if (active[static_cast<std::size_t>(i)]) masked[i] = 0.0;
    Eigen::VectorXd direction = -(h * masked);
    for (Eigen::Index i = 0; i < g.size(); ++i)
      if (active[static_cast<std::size_t>(i)]) direction[i] = 0.0;
    return direction;
  }

  // The objective at the free coordinates x (writing the parameters into p) and
  // its gradient in x.
  double eval(const Eigen::VectorXd& x, Vector& p, Eigen::VectorXd& grad_x) const {
    for (std::size_t i = 0; i < free_.size(); ++i) {
      const int k = free_[i];
      const double v = x[static_cast<Eigen::Index>(i)];
      p[k] =
          k == gamma_index ? v : std::max(std::exp(v), tiny);  // exp(log(1e-8)) < 1e-8
    }
    Vector grad_p;
    const double f = objective(p, samples_, &grad_p);
    grad_x.resize(static_cast<Eigen::Index>(free_.size()));
    for (std::size_t i = 0; i < free_.size(); ++i) {
      const int k = free_[i];
      grad_x[static_cast<Eigen::Index>(i)] =
          k == gamma_index ? grad_p[k] : grad_p[k] * p[k];
    }
    return f;
  }

  const std::vector<ProfileSample>& samples_;
  std::vector<int> free_;
  Vector lower_, upper_;
};

Vector to_vector(const PerfParams& p) {
  const auto a = p.array();
  return Vector(a.data());
}

PerfParams from_vector(const Vector& v) {
  std::array<double, 7> a{};
  for (int i = 0; i < n_params; ++i) a[static_cast<std::size_t>(i)] = v[i];
  return PerfParams::from_array(a);
}

int ceil_int(double x) { return static_cast<int>(std::ceil(x - floor_eps)); }

}  // namespace

std::array<double, 7> PerfParams::array() const {
  return {alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma};
}

PerfParams PerfParams::from_array(const std::array<double, 7>& v) {
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

double predict_accum_time(const PerfParams& p, double atomic_bsz) {
  return p.alpha_c + p.beta_c * atomic_bsz;
}

double predict_network_time(const PerfParams& p, int num_nodes, int num_replicas) {
  const double retro = retrogression(num_replicas);
  switch (link_of(num_nodes, num_replicas)) {
    case Link::inter:
      return p.alpha_n + p.beta_n * retro;
    case Link::intra:
      return p.alpha_r + p.beta_r * retro;
    case Link::none:
      break;
  }
  return tiny + tiny * retro;
}

double predict_step_time(const PerfParams& p, int num_nodes, int num_replicas,
                         double atomic_bsz) {
  return std::exp(log_optim(predict_accum_time(p, atomic_bsz),
                            predict_network_time(p, num_nodes, num_replicas), p.gamma)
                      .value);
}

double fit_objective(const PerfParams& p, const std::vector<ProfileSample>& samples) {
  check_samples(samples);
  return objective(to_vector(p), samples, nullptr);
}

FitReport fit_perf_params_report(const std::vector<ProfileSample>& samples) {
  check_samples(samples);
  FitReport report;
  Vector p;
  p << 1e-1, 1e-2, 1e-1, 1e-2, 1e-1, 1e-2, 1.0 + 1e-3;
  auto& pinned = report.pinned;
  std::set<double> batches;
  bool multi_node = false, multi_replica_one_node = false, above_two = false;
  double accum_sum = 0.0;
  for (const ProfileSample& s : samples) {
    batches.insert(s.atomic_bsz);
    multi_node = multi_node || s.num_nodes > 1;
    multi_replica_one_node =
        multi_replica_one_node || (s.num_nodes == 1 && s.num_replicas > 1);
    above_two = above_two || s.num_replicas > 2;
    accum_sum += s.accum_time;
  }
  auto pin = [&](int i, double value) {
    p[i] = value;
    pinned[static_cast<std::size_t>(i)] = true;
  };
  if (batches.size() == 1)
    pin(0, accum_sum / static_cast<double>(samples.size()) / 2.0);
  if (!multi_node) pin(2, tiny), pin(3, tiny);
  if (!multi_replica_one_node) pin(4, tiny), pin(5, tiny);
  if (!above_two) pin(3, tiny), pin(5, tiny);

  BoundedSolver solver(samples, pinned);
  report.iterations = solver.solve(p);
  report.objective = objective(p, samples, nullptr);
  if (!multi_node) {  // prior: inter-node links are no faster than intra-node ones
    p[2] = std::max(p[2], p[4] * 1.1);
    p[3] = std::max(p[3], p[5] * 1.1);
  }
  report.params = from_vector(p);
  return report;
}

PerfParams fit_perf_params(const std::vector<ProfileSample>& samples) {
  return fit_perf_params_report(samples).params;
}

double statistical_gain(const GradParams& grad, double scale) {
  const double denom = grad.var / scale + grad.sqr;
  return denom > 0.0 ? (grad.var + grad.sqr) / denom : 1.0;
}

GoodputModel::GoodputModel(PerfParams perf, GradParams grad, BatchLimits limits)
    : perf_(perf), grad_(grad), limits_(limits) {
  check_params(perf_);
  if (!std::isfinite(grad.sqr) || !std::isfinite(grad.var) || grad.sqr < 0.0 ||
      grad.var < 0.0)
    throw std::invalid_argument(
        fmt::format("grad params: sqr and var must be finite and >= 0, got {} and {}",
                    grad.sqr, grad.var));
  check_limits(limits_);
}

double GoodputModel::throughput(int num_nodes, int num_replicas, double atomic_bsz,
                                int accum_steps) const {
  const double accum = predict_accum_time(perf_, atomic_bsz);
  const double optim = predict_step_time(perf_, num_nodes, num_replicas, atomic_bsz);
  const double total = accum_steps * accum + optim;
  return num_replicas * atomic_bsz * (accum_steps + 1) / total;
}

double GoodputModel::efficiency(double batch_size) const {
  const double scale = batch_size / limits_.init_batch_size;
  return statistical_gain(grad_, scale) / scale;
}

double GoodputModel::goodput(int num_nodes, int num_replicas, double atomic_bsz,
                             int accum_steps) const {
  return throughput(num_nodes, num_replicas, atomic_bsz, accum_steps) *
         efficiency(num_replicas * atomic_bsz * (accum_steps + 1));
}

void check_allocation(int num_nodes, int num_replicas) {
  if (num_nodes < 0 || num_nodes > num_replicas ||
      (num_nodes > 0) != (num_replicas > 0))
    throw std::invalid_argument(
        fmt::format("allocation: need 0 <= num_nodes <= num_replicas with both 0 or "
                    "both > 0, got {} nodes, {} replicas",
                    num_nodes, num_replicas));
}

namespace {

// The artifact's last word on a batch: atomic <= floor(M_max / (K (s + 1))).
int cap_atomic(const BatchLimits& limits, int num_replicas, int atomic, int accum) {
  return std::min(
      atomic, static_cast<int>(limits.max_batch_size / (num_replicas * (accum + 1))));
}

}  // namespace

BatchChoice GoodputModel::optimize(int num_nodes, int num_replicas) const {
  check_allocation(num_nodes, num_replicas);
  BatchChoice best;
  if (num_replicas == 0) return best;
  const double k = num_replicas;
  const double lo = std::max(limits_.init_batch_size, limits_.min_atomic_bsz * k);
  const double hi = limits_.max_batch_size;
  const double log_lo = std::log10(lo),
               step = (std::log10(hi) - log_lo) / (batch_candidates - 1);
  bool first = true;
  for (int i = 0; i < batch_candidates; ++i) {
    const double batch = i == 0 ? lo
                         : i == batch_candidates - 1
                             ? hi
                             : std::pow(10.0, log_lo + i * step);
    const double local = batch / k;
    int accum = ceil_int(local / limits_.max_atomic_bsz) - 1;
    if (num_replicas == 1 && local > limits_.init_batch_size + floor_eps)
      accum = std::max(accum, 1);
    const int atomic = ceil_int(local / (accum + 1));
    BatchChoice c{atomic, accum, 0.0, 0.0, 0.0};
    c.throughput = throughput(num_nodes, num_replicas, atomic, accum);
    c.efficiency = efficiency(k * atomic * (accum + 1));
    if (limits_.min_atomic_bsz <= atomic && atomic <= limits_.max_atomic_bsz)
      c.goodput = c.throughput * c.efficiency;
    if (first || c.goodput > best.goodput) best = c;
    first = false;
  }
  return best;
}

double GoodputModel::speedup(int num_nodes, int num_replicas) const {
  check_allocation(num_nodes, num_replicas);
  if (num_replicas == 0) return 0.0;
  return optimize(num_nodes, num_replicas).goodput / optimize(1, 1).goodput;
}

std::pair<int, int> fixed_batch(const BatchLimits& limits, int num_replicas,
                                double batch_size) {
  check_limits(limits);
  if (num_replicas < 1)
    throw std::invalid_argument(
        fmt::format("fixed batch: num_replicas must be >= 1, got {}", num_replicas));
  if (!finite_positive(batch_size))
    throw std::invalid_argument(fmt::format(
        "fixed batch: batch_size must be finite and > 0, got {}", batch_size));
  const int local = ceil_int(batch_size / num_replicas);
  int accum = ceil_int(static_cast<double>(local) / limits.max_atomic_bsz) - 1;
  if (num_replicas == 1 && batch_size > limits.init_batch_size)
    accum = std::max(accum, 1);
  const int atomic = ceil_int(static_cast<double>(local) / (accum + 1));
  return {cap_atomic(limits, num_replicas, atomic, accum), accum};
}

BatchChoice GoodputModel::configure(int num_nodes, int num_replicas,
                                    double batch_size) const {
  check_allocation(num_nodes, num_replicas);
  if (num_replicas == 0)
    throw std::invalid_argument("configure: num_replicas must be >= 1");
  if (!std::isfinite(batch_size))
    throw std::invalid_argument(
        fmt::format("configure: batch_size must be finite, got {}", batch_size));
  int atomic = 0, accum = 0;
  if (batch_size > 0.0) {
    std::tie(atomic, accum) = fixed_batch(limits_, num_replicas, batch_size);
  } else {
    const BatchChoice best = optimize(num_nodes, num_replicas);
    accum = best.accum_steps;
    atomic = cap_atomic(limits_, num_replicas, best.atomic_bsz, accum);
  }
  BatchChoice c{atomic, accum, 0.0, 0.0, 0.0};
  if (atomic > 0) {
    c.throughput = throughput(num_nodes, num_replicas, atomic, accum);
    c.efficiency = efficiency(static_cast<double>(num_replicas) * atomic * (accum + 1));
    c.goodput = c.throughput * c.efficiency;
  }
  return c;
}

}  // namespace aryl
