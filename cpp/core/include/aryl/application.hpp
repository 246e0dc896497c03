// One Pollux application's measured tables (the artifact's traces/<app>/ folder),
// held in C++ so a simulator can compute a job's true progress rate for any
// placement, batch and epoch without calling Python. The tables arrive as columns
// (Python reads the CSVs); nothing here reads files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "aryl/goodput.hpp"

namespace aryl {

// placements.csv: a placement string (GPUs per node, e.g. "22"), the per-GPU
// batch, and the measured step and sync times of one step.
struct PlacementTable {
  std::vector<std::string> placement;
  std::vector<double> local_bsz, step_time, sync_time;
};

// scalability.csv: the same measurements keyed by (nodes, replicas).
struct ScalabilityTable {
  std::vector<int> num_nodes, num_replicas;
  std::vector<double> local_bsz, step_time, sync_time;
};

// validation-<batch_size>.csv: one row per epoch.
struct ValidationTable {
  double batch_size = 0.0;
  std::vector<double> progress, iteration, grad_sqr, grad_var;
};

class Application {
 public:
  // max_epochs <= 0: the fewest rows of any validation table; max_local_bsz <= 0:
  // the largest local_bsz in placements (yolov3 passes 8). std::invalid_argument
  // names the table, row and column of the first bad value (columns of unequal
  // length, a placement that is not digits 1-9, a non-positive batch or time,
  // sync > step, no validation table, duplicate validation batch sizes, max_epochs
  // beyond a table's rows).
  Application(std::string name, PlacementTable placements, ScalabilityTable scalability,
              std::vector<ValidationTable> validation, int max_epochs = 0,
              int max_local_bsz = 0);

  const std::string& name() const { return name_; }
  double init_batch_size() const { return validation_.front().batch_size; }
  double max_batch_size() const { return validation_.back().batch_size; }
  int min_local_bsz() const { return min_local_bsz_; }
  int max_local_bsz() const { return max_local_bsz_; }
  int max_epochs() const { return max_epochs_; }
  BatchLimits limits() const;

  // (step_time, sync_time) of one step on `placement` (GPUs per node; zeros are
  // dropped) at per-GPU batch local_bsz. A measured placement (up to rotation:
  // "1322" is "2213"'s row) is interpolated linearly in local_bsz. Otherwise the
  // point (min(N, 16), K, local_bsz) is interpolated in the (nodes, replicas,
  // local_bsz) measurements (placement means plus scalability rows): linearly in
  // local_bsz at each measured (nodes, replicas), linearly in replicas at the
  // same replicas-per-node ratio on the two measured node counts around N, then
  // linearly in nodes. (The artifact triangulates the points instead; both are
  // exact on measured points.) Along local_bsz, a curve is held below its
  // smallest measured batch and extended linearly above its largest, up to
  // max_local_bsz(). std::invalid_argument past that, or for node counts and
  // replica ratios outside the measured ones.
  std::pair<double, double> step_time(const std::vector<int>& placement,
                                      double local_bsz) const;

  // (grad_sqr, grad_var) during `epoch` at global batch M, interpolated linearly
  // between the validated batch sizes around M (std::invalid_argument outside
  // [init, max] batch or past the tables' rows).
  GradParams grad_stats(double batch_size, int epoch) const;

  // Progress (M0-equivalent steps) at the end of epoch - 1: 0 for epoch 0, else
  // the smallest progress of row epoch - 1 over the validation tables.
  double epoch_progress(int epoch) const;
  // The epoch a job with this progress is in: max over tables of the number of
  // rows whose progress is <= it.
  int epoch_at(double progress) const;
  // The job completes when it passes this epoch's end: max_epochs - 1.
  int completion_epoch() const { return max_epochs_ - 1; }

  // True progress per second on `placement` with atomic batch m and s
  // accumulation steps during `epoch`: gain(M / M0) / (step + s (step - sync)),
  // M = K m (s + 1), gain from grad_stats(M, epoch).
  double progress_rate(const std::vector<int>& placement, int atomic_bsz,
                       int accum_steps, int epoch) const;

  // An upper bound on progress_rate over every placement, batch and epoch: the
  // gain is at most M / M0 <= max_batch_size / init_batch_size, and a step takes
  // at least the shortest measured step (interpolation stays within the measured
  // times; above the largest batch they grow). For bounding a run's span.
  double max_progress_rate() const;

  // Every measured row as a profile sample (placements then scalability), for
  // fitting the throughput model to all of the application's data.
  std::vector<ProfileSample> profile_samples() const;

 private:
  struct Point {
    double local_bsz, step_time, sync_time;
  };
  struct Curve {  // measurements at one key, sorted by local_bsz
    std::vector<Point> points;
  };
  struct Grid {  // measurements at one (nodes, replicas)
    int num_nodes, num_replicas;
    Curve curve;
  };

  std::pair<double, double> along(const Curve& curve, double local_bsz) const;
  std::pair<double, double> interpolate(int num_nodes, int num_replicas,
                                        double local_bsz) const;
  std::pair<double, double> at_nodes(int num_nodes, double ratio,
                                     double local_bsz) const;

  std::string name_;
  std::vector<std::pair<std::string, Curve>> measured_;  // sorted by placement key
  std::vector<Grid> grid_;                               // sorted by (nodes, replicas)
  std::vector<ValidationTable> validation_;              // sorted by batch size
  std::vector<ProfileSample> samples_;
  int min_local_bsz_ = 1, max_local_bsz_ = 1, max_epochs_ = 0;
};

// The placement key of the artifact: zeros dropped, the lexicographically
// smallest rotation, digits joined ("" when a node has more than 9 GPUs).
std::string placement_key(const std::vector<int>& placement);

}  // namespace aryl
