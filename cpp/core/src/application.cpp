#include "aryl/application.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "numbers.hpp"

namespace aryl {
namespace {

constexpr int max_interpolated_nodes = 16;  // the artifact caps nodes here

using detail::finite_positive;

void check_length(std::size_t expected, std::size_t got, const char* table,
                  const char* column) {
  if (got != expected)
    throw std::invalid_argument(fmt::format("{}: column '{}' has {} rows, expected {}",
                                            table, column, got, expected));
}

void check_times(const char* table, std::size_t row, double local_bsz, double step,
                 double sync) {
  if (!finite_positive(local_bsz))
    throw std::invalid_argument(fmt::format(
        "{}: row {}, column 'local_bsz': must be > 0, got {}", table, row, local_bsz));
  if (!finite_positive(step))
    throw std::invalid_argument(fmt::format(
        "{}: row {}, column 'step_time': must be > 0, got {}", table, row, step));
  if (!std::isfinite(sync) || sync < 0.0 || sync >= step)
    throw std::invalid_argument(fmt::format(
        "{}: row {}, column 'sync_time': must be in [0, step_time = {}), got {}", table,
        row, step, sync));
}

std::vector<int> parse_placement(const std::string& text, std::size_t row) {
  std::vector<int> out;
  for (char c : text) {
    if (c < '1' || c > '9')
      throw std::invalid_argument(
          fmt::format("placements: row {}, column 'placement': must be digits 1-9 "
                      "(GPUs per node), got '{}'",
                      row, text));
    out.push_back(c - '0');
  }
  if (out.empty())
    throw std::invalid_argument(
        fmt::format("placements: row {}, column 'placement': empty", row));
  return out;
}

// Linear interpolation weight of x in [a, b] (0 when a == b).
double weight(double a, double b, double x) { return b > a ? (x - a) / (b - a) : 0.0; }

std::pair<double, double> mix(const std::pair<double, double>& lo,
                              const std::pair<double, double>& hi, double w) {
  return {lo.first + (hi.first - lo.first) * w,
          lo.second + (hi.second - lo.second) * w};
}

}  // namespace

std::string placement_key(const std::vector<int>& placement) {
  std::vector<int> p;
  for (int g : placement)
    if (g != 0) p.push_back(g);
  if (p.empty()) return "";
  std::vector<int> best = p;
  for (std::size_t i = 1; i < p.size(); ++i) {
    std::vector<int> r(p.begin() + static_cast<std::ptrdiff_t>(i), p.end());
    r.insert(r.end(), p.begin(), p.begin() + static_cast<std::ptrdiff_t>(i));
    best = std::min(best, r);
  }
  std::string key;
  for (int g : best) {
    if (g > 9) return "";
    key += static_cast<char>('0' + g);
  }
  return key;
}

Application::Application(std::string name, PlacementTable placements,
                         ScalabilityTable scalability,
                         std::vector<ValidationTable> validation, int max_epochs,
                         int max_local_bsz)
    : name_(std::move(name)) {
  const std::size_t np = placements.placement.size();
  check_length(np, placements.local_bsz.size(), "placements", "local_bsz");
  check_length(np, placements.step_time.size(), "placements", "step_time");
  check_length(np, placements.sync_time.size(), "placements", "sync_time");
  if (np == 0) throw std::invalid_argument("placements: no rows");
  const std::size_t ns = scalability.num_nodes.size();
  check_length(ns, scalability.num_replicas.size(), "scalability", "num_replicas");
  check_length(ns, scalability.local_bsz.size(), "scalability", "local_bsz");
  check_length(ns, scalability.step_time.size(), "scalability", "step_time");
  check_length(ns, scalability.sync_time.size(), "scalability", "sync_time");

  // Measured placements, and their means per (nodes, replicas, local_bsz).
  std::map<std::string, Curve> by_key;
  std::map<std::tuple<int, int, double>, std::tuple<double, double, int>> sums;
  double lo_bsz = placements.local_bsz[0], hi_bsz = lo_bsz;
  for (std::size_t i = 0; i < np; ++i) {
    check_times("placements", i, placements.local_bsz[i], placements.step_time[i],
                placements.sync_time[i]);
    const std::vector<int> p = parse_placement(placements.placement[i], i);
    int replicas = 0;
    for (int g : p) replicas += g;
    const int nodes = static_cast<int>(p.size());
    const Point point{placements.local_bsz[i], placements.step_time[i],
                      placements.sync_time[i]};
    by_key[placement_key(p)].points.push_back(point);
    auto& [step, sync, count] = sums[{nodes, replicas, point.local_bsz}];
    step += point.step_time;
    sync += point.sync_time;
    ++count;
    samples_.push_back({nodes, replicas, point.local_bsz,
                        point.step_time - point.sync_time, point.step_time});
    lo_bsz = std::min(lo_bsz, point.local_bsz);
    hi_bsz = std::max(hi_bsz, point.local_bsz);
  }
  for (auto& [key, curve] : by_key) {
    std::stable_sort(
        curve.points.begin(), curve.points.end(),
        [](const Point& a, const Point& b) { return a.local_bsz < b.local_bsz; });
    measured_.emplace_back(key, std::move(curve));
  }
  for (std::size_t i = 0; i < ns; ++i) {
    const int nodes = scalability.num_nodes[i], replicas = scalability.num_replicas[i];
    if (nodes < 1 || replicas < nodes)
      throw std::invalid_argument(fmt::format(
          "scalability: row {}: need 1 <= num_nodes <= num_replicas, got {} and {}", i,
          nodes, replicas));
    check_times("scalability", i, scalability.local_bsz[i], scalability.step_time[i],
                scalability.sync_time[i]);
    auto& [step, sync, count] = sums[{nodes, replicas, scalability.local_bsz[i]}];
    step += scalability.step_time[i];
    sync += scalability.sync_time[i];
    ++count;
    samples_.push_back({nodes, replicas, scalability.local_bsz[i],
                        scalability.step_time[i] - scalability.sync_time[i],
                        scalability.step_time[i]});
  }
  for (const auto& [at, total] : sums) {
    const auto& [nodes, replicas, bsz] = at;
    const auto& [step, sync, count] = total;
    if (grid_.empty() || grid_.back().num_nodes != nodes ||
        grid_.back().num_replicas != replicas)
      grid_.push_back({nodes, replicas, {}});
    grid_.back().curve.points.push_back(
        {bsz, step / count, sync / count});  // map order: sorted
  }

  if (validation.empty())
    throw std::invalid_argument("validation: need at least one table");
  std::sort(validation.begin(), validation.end(),
            [](const ValidationTable& a, const ValidationTable& b) {
              return a.batch_size < b.batch_size;
            });
  std::size_t fewest_rows = validation.front().progress.size();
  for (std::size_t t = 0; t < validation.size(); ++t) {
    const ValidationTable& v = validation[t];
    const std::string table = fmt::format("validation-{}", v.batch_size);
    if (!finite_positive(v.batch_size))
      throw std::invalid_argument(fmt::format("{}: batch size must be > 0", table));
    if (t > 0 && v.batch_size == validation[t - 1].batch_size)
      throw std::invalid_argument(fmt::format("{}: duplicate batch size", table));
    const std::size_t rows = v.progress.size();
    if (rows == 0) throw std::invalid_argument(fmt::format("{}: no rows", table));
    check_length(rows, v.iteration.size(), table.c_str(), "iteration");
    check_length(rows, v.grad_sqr.size(), table.c_str(), "grad_sqr");
    check_length(rows, v.grad_var.size(), table.c_str(), "grad_var");
    for (std::size_t r = 0; r < rows; ++r) {
      if (!std::isfinite(v.progress[r]) || (r > 0 && v.progress[r] < v.progress[r - 1]))
        throw std::invalid_argument(fmt::format(
            "{}: row {}, column 'progress': must be finite and non-decreasing, got {}",
            table, r, v.progress[r]));
      if (!std::isfinite(v.grad_sqr[r]) || !std::isfinite(v.grad_var[r]))
        throw std::invalid_argument(
            fmt::format("{}: row {}: grad_sqr and grad_var must be finite", table, r));
    }
    fewest_rows = std::min(fewest_rows, rows);
  }
  validation_ = std::move(validation);

  min_local_bsz_ = static_cast<int>(lo_bsz);
  max_local_bsz_ = max_local_bsz > 0 ? max_local_bsz : static_cast<int>(hi_bsz);
  max_epochs_ = max_epochs > 0 ? max_epochs : static_cast<int>(fewest_rows);
  if (static_cast<std::size_t>(max_epochs_) > fewest_rows)
    throw std::invalid_argument(fmt::format(
        "{}: max_epochs = {} exceeds the {} rows of the shortest validation table",
        name_, max_epochs_, fewest_rows));
  if (max_batch_size() < min_local_bsz_)
    throw std::invalid_argument(fmt::format(
        "{}: the largest validated batch ({}) is below the smallest local batch ({})",
        name_, max_batch_size(), min_local_bsz_));
}

BatchLimits Application::limits() const {
  return {init_batch_size(), max_batch_size(), min_local_bsz_, max_local_bsz_};
}

std::pair<double, double> Application::along(const Curve& curve,
                                             double local_bsz) const {
  const auto& pts = curve.points;
  // Below the smallest measured batch the step is held at its values; above the
  // largest it grows linearly from the last two (compute time is affine in the
  // local batch: the throughput model's own form). An elastic job spreading its
  // batch over more or fewer nodes than were measured with it lands there.
  if (local_bsz <= pts.front().local_bsz || pts.size() == 1)
    return {pts.front().step_time, pts.front().sync_time};
  if (local_bsz > pts.back().local_bsz) {
    if (local_bsz > max_local_bsz_)  // no job runs such a batch: a caller's error
      throw std::invalid_argument(fmt::format(
          "step time: local_bsz {} is outside the measured range [{}, {}] of {} "
          "(and above its largest local batch, {})",
          local_bsz, pts.front().local_bsz, pts.back().local_bsz, name_,
          max_local_bsz_));
    const Point& a = pts[pts.size() - 2];
    const Point& b = pts.back();
    const double t = (local_bsz - a.local_bsz) / (b.local_bsz - a.local_bsz);
    return {a.step_time + t * (b.step_time - a.step_time),
            a.sync_time + t * (b.sync_time - a.sync_time)};
  }
  auto hi = std::lower_bound(pts.begin(), pts.end(), local_bsz,
                             [](const Point& p, double x) { return p.local_bsz < x; });
  if (hi->local_bsz == local_bsz) return {hi->step_time, hi->sync_time};
  const Point& a = *(hi - 1);
  const Point& b = *hi;
  return mix({a.step_time, a.sync_time}, {b.step_time, b.sync_time},
             weight(a.local_bsz, b.local_bsz, local_bsz));
}

std::pair<double, double> Application::at_nodes(int num_nodes, double ratio,
                                                double local_bsz) const {
  // The measured replica counts at this node count, sorted.
  auto first = std::lower_bound(grid_.begin(), grid_.end(), num_nodes,
                                [](const Grid& g, int n) { return g.num_nodes < n; });
  auto last = first;
  while (last != grid_.end() && last->num_nodes == num_nodes) ++last;
  const double replicas = ratio * num_nodes;
  if (first == last || replicas < first->num_replicas - 1e-9 ||
      replicas > (last - 1)->num_replicas + 1e-9)
    throw std::invalid_argument(fmt::format(
        "step time: {} replicas on {} nodes is outside the measured configurations",
        replicas, num_nodes));
  auto hi = first;
  while (hi + 1 != last && hi->num_replicas < replicas - 1e-9) ++hi;
  if (hi == first || std::abs(hi->num_replicas - replicas) <= 1e-9)
    return along(hi->curve, local_bsz);
  auto lo = hi - 1;
  return mix(along(lo->curve, local_bsz), along(hi->curve, local_bsz),
             weight(lo->num_replicas, hi->num_replicas, replicas));
}

std::pair<double, double> Application::interpolate(int num_nodes, int num_replicas,
                                                   double local_bsz) const {
  const double ratio = static_cast<double>(num_replicas) / num_nodes;
  int below = 0, above = 0;
  for (const Grid& g : grid_) {
    if (g.num_nodes <= num_nodes) below = g.num_nodes;
    if (g.num_nodes >= num_nodes && above == 0) above = g.num_nodes;
  }
  if (below == 0 || above == 0)
    throw std::invalid_argument(
        fmt::format("step time: {} nodes is outside the measured node counts of {}",
                    num_nodes, name_));
  if (below == above) return at_nodes(below, ratio, local_bsz);
  return mix(at_nodes(below, ratio, local_bsz), at_nodes(above, ratio, local_bsz),
             weight(below, above, num_nodes));
}

std::pair<double, double> Application::step_time(const std::vector<int>& placement,
                                                 double local_bsz) const {
  int nodes = 0, replicas = 0;
  for (int g : placement) {
    if (g < 0)
      throw std::invalid_argument(
          fmt::format("step time: GPUs per node must be >= 0, got {}", g));
    if (g > 0) ++nodes, replicas += g;
  }
  if (replicas == 0)
    throw std::invalid_argument("step time: the placement has no GPUs");
  if (!finite_positive(local_bsz))
    throw std::invalid_argument(
        fmt::format("step time: local_bsz must be > 0, got {}", local_bsz));
  const std::string key = placement_key(placement);
  auto it = std::lower_bound(
      measured_.begin(), measured_.end(), key,
      [](const auto& entry, const std::string& k) { return entry.first < k; });
  if (!key.empty() && it != measured_.end() && it->first == key)
    return along(it->second, local_bsz);
  return interpolate(std::min(nodes, max_interpolated_nodes), replicas, local_bsz);
}

GradParams Application::grad_stats(double batch_size, int epoch) const {
  if (!std::isfinite(batch_size) || batch_size < init_batch_size() ||
      batch_size > max_batch_size())
    throw std::invalid_argument(fmt::format(
        "grad stats: batch size {} is outside the validated range [{}, {}] of {}",
        batch_size, init_batch_size(), max_batch_size(), name_));
  auto hi = std::lower_bound(
      validation_.begin(), validation_.end(), batch_size,
      [](const ValidationTable& v, double b) { return v.batch_size < b; });
  auto lo = hi->batch_size == batch_size ? hi : hi - 1;
  const auto row = static_cast<std::size_t>(epoch);
  if (epoch < 0 || row >= lo->grad_sqr.size() || row >= hi->grad_sqr.size())
    throw std::invalid_argument(fmt::format(
        "grad stats: epoch {} is past the validation rows of {}", epoch, name_));
  if (lo == hi) return {lo->grad_sqr[row], lo->grad_var[row]};
  const double w = weight(lo->batch_size, hi->batch_size, batch_size);
  return {lo->grad_sqr[row] + (hi->grad_sqr[row] - lo->grad_sqr[row]) * w,
          lo->grad_var[row] + (hi->grad_var[row] - lo->grad_var[row]) * w};
}

double Application::epoch_progress(int epoch) const {
  if (epoch == 0) return 0.0;
  if (epoch < 0 || epoch > max_epochs_)
    throw std::invalid_argument(fmt::format(
        "epoch progress: epoch must be in [0, {}], got {}", max_epochs_, epoch));
  double best = validation_.front().progress[static_cast<std::size_t>(epoch - 1)];
  for (const ValidationTable& v : validation_)
    best = std::min(best, v.progress[static_cast<std::size_t>(epoch - 1)]);
  return best;
}

int Application::epoch_at(double progress) const {
  std::size_t most = 0;
  for (const ValidationTable& v : validation_) {
    const auto n = static_cast<std::size_t>(
        std::upper_bound(v.progress.begin(), v.progress.end(), progress) -
        v.progress.begin());
    most = std::max(most, n);
  }
  return static_cast<int>(most);
}

double Application::progress_rate(const std::vector<int>& placement, int atomic_bsz,
                                  int accum_steps, int epoch) const {
  if (atomic_bsz < 1 || accum_steps < 0)
    throw std::invalid_argument(fmt::format(
        "progress rate: need atomic_bsz >= 1 and accum_steps >= 0, got {} and {}",
        atomic_bsz, accum_steps));
  int replicas = 0;
  for (int g : placement) replicas += std::max(g, 0);
  const auto [step, sync] = step_time(placement, atomic_bsz);
  const double batch = static_cast<double>(replicas) * atomic_bsz * (accum_steps + 1);
  const double gain =
      statistical_gain(grad_stats(batch, epoch), batch / init_batch_size());
  return gain / (step + accum_steps * (step - sync));
}

double Application::max_progress_rate() const {
  double shortest = std::numeric_limits<double>::infinity();
  for (const ProfileSample& s : samples_) shortest = std::min(shortest, s.step_time);
  return max_batch_size() / init_batch_size() / shortest;
}

std::vector<ProfileSample> Application::profile_samples() const { return samples_; }

}  // namespace aryl
