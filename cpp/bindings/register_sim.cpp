#include "prelude.hpp"

#include <fmt/format.h>

#include <cmath>

#include "aryl/sim/simulator.hpp"
#include "sim_hooks.hpp"

namespace aryl::bindings {
namespace {

sim::Config config_from(const py::dict& c) {
  const auto text = [&](const char* key) {
    return str_arg(item(c, "config", key), fmt::format("config '{}'", key));
  };
  const auto real = [&](const char* key) {
    return real_arg(item(c, "config", key), fmt::format("config '{}'", key));
  };
  const auto flag = [&](const char* key) {
    return bool_arg(item(c, "config", key), fmt::format("config '{}'", key));
  };
  sim::Config config;
  const std::string policy = text("policy");
  if (policy == "tiresias")
    config.allocator = sim::Allocator::tiresias;  // the kernel's policy is then unused
  else if (policy == "pollux")
    config.allocator = sim::Allocator::pollux;
  else
    config.policy = parse_allocation_policy(policy);
  config.placement = parse_placement_policy(text("placement"));
  config.reclaim = parse_reclaim_policy(text("reclaim"));
  config.backfill = flag("backfill");
  if (c.contains("start_on_loan")) config.start_on_loan = flag("start_on_loan");
  const auto scaling = text("scaling");
  if (scaling != "linear" && scaling != "imperfect")
    throw py::value_error("scaling must be 'linear' or 'imperfect', got '" + scaling +
                          "'");
  config.scaling = scaling == "linear" ? sim::Scaling::linear : sim::Scaling::imperfect;
  config.schedule_interval = real("schedule_interval");
  config.loan_interval = real("loan_interval");
  config.restart_overhead = real("restart_overhead");
  if (c.contains("start_overhead")) config.start_overhead = real("start_overhead");
  if (c.contains("reallocation_overhead"))
    config.reallocation_overhead = real("reallocation_overhead");
  if (c.contains("tiresias_threshold"))
    config.tiresias_threshold = real("tiresias_threshold");
  const auto count = [&](const char* key, long long lo) {
    return static_cast<int>(int_arg(item(c, "config", key),
                                    fmt::format("config '{}'", key), lo, 1'000'000));
  };
  if (c.contains("pollux_population"))
    config.pollux_population = count("pollux_population", 2);
  if (c.contains("pollux_generations"))
    config.pollux_generations = count("pollux_generations", 0);
  if (c.contains("tuned")) config.tuned = flag("tuned");
  config.headroom = real("headroom");
  config.lend_hold = real("lend_hold");
  config.hetero_efficiency = real("hetero_efficiency");
  const py::handle speeds = item(c, "config", "gpu_speed");
  if (!PyDict_Check(speeds.ptr()))
    throw py::type_error("config 'gpu_speed' must be a dict of str to number");
  config.gpu_speed.clear();
  for (const auto& [type, speed] : py::reinterpret_borrow<py::dict>(speeds)) {
    const std::string name = str_arg(type, "config 'gpu_speed' key");
    const double v = real_arg(speed, fmt::format("config 'gpu_speed' of '{}'", name));
    if (!std::isfinite(v) || !(v > 0.0))
      throw py::value_error(fmt::format(
          "config 'gpu_speed' of '{}' must be finite and > 0, got {}", name, v));
    config.gpu_speed[name] = v;
  }
  config.horizon = real("horizon");
  config.seed = seed_arg(item(c, "config", "seed"), "config 'seed'");
  config.audit = flag("audit");
  if (c.contains("history")) config.history = flag("history");
  for (const auto& [key, value] :
       {std::pair{"schedule_interval", config.schedule_interval},
        {"loan_interval", config.loan_interval}})
    if (!std::isfinite(value) || !(value > 0.0))
      throw py::value_error(
          fmt::format("config '{}' must be finite and > 0, got {}", key, value));
  if (std::isnan(config.horizon))
    throw py::value_error("config 'horizon' must not be NaN");
  return config;
}

// The history's columns as NumPy arrays, moved in as the per-job columns are.
py::dict history_to_dict(sim::History&& h) {
  py::dict out;
  out["job"] = to_numpy(std::move(h.job));
  out["interval"] = to_numpy(std::move(h.interval));
  out["start"] = to_numpy(std::move(h.start));
  out["end"] = to_numpy(std::move(h.end));
  out["opened"] = to_numpy(std::move(h.opened));
  out["closed"] = to_numpy(std::move(h.closed));
  out["server"] = to_numpy(std::move(h.server));
  out["workers"] = to_numpy(std::move(h.workers));
  return out;
}

// `hooks`: the run asked a caller's policy, whose admit may have rejected jobs.
py::dict result_to_dict(sim::Result&& r, bool config_history, bool hooks) {
  py::dict out;
  out["start_time"] = to_numpy(std::move(r.start_time));
  out["finish_time"] = to_numpy(std::move(r.finish_time));
  out["work_lost"] = to_numpy(std::move(r.work_lost));
  out["preemptions"] = to_numpy(std::move(r.preemptions));
  out["scaling_ops"] = to_numpy(std::move(r.scaling_ops));
  out["ran_on_training"] = to_numpy(std::move(r.ran_on_training));
  out["ran_on_inference"] = to_numpy(std::move(r.ran_on_inference));
  out["ran_mixed"] = to_numpy(std::move(r.ran_mixed));
  if (hooks) out["rejected"] = to_numpy(std::move(r.rejected));
  out["t"] = to_numpy(std::move(r.t));
  out["training_gpus_used"] = to_numpy(std::move(r.training_gpus_used));
  out["loaned_gpus_used"] = to_numpy(std::move(r.loaned_gpus_used));
  out["on_loan"] = to_numpy(std::move(r.on_loan));
  out["inference_needed"] = to_numpy(std::move(r.inference_needed));
  out["queue_length"] = to_numpy(std::move(r.queue_length));
  out["running_jobs"] = to_numpy(std::move(r.running_jobs));
  for (const auto& [name, value] :
       {std::pair{"end_time", r.end_time},
        {"training_gpu_seconds", r.training_gpu_seconds},
        {"loaned_gpu_seconds", r.loaned_gpu_seconds},
        {"inference_gpu_seconds", r.inference_gpu_seconds},
        {"loaned_capacity_seconds", r.loaned_capacity_seconds},
        {"work_delivered", r.work_delivered},
        {"work_completed", r.work_completed},
        {"work_lost_total", r.work_lost_total},
        {"work_lost_gpu_seconds", r.work_lost_gpu_seconds},
        {"restart_gpu_seconds", r.restart_gpu_seconds},
        {"inference_short_server_seconds", r.inference_short_server_seconds}})
    out[name] = value;
  for (const auto& [name, value] :
       {std::pair{"reclaims", r.reclaims},
        {"servers_reclaimed", r.servers_reclaimed},
        {"servers_reclaimed_free", r.servers_reclaimed_free},
        {"collateral_gpus", r.collateral_gpus},
        {"reclaim_demand_gpus", r.reclaim_demand_gpus},
        {"epochs_run", r.epochs_run}})
    out[name] = value;
  py::dict engine;
  for (const auto& [name, value] : {std::pair{"epochs", r.engine.epochs},
                                    {"epochs_quiet", r.engine.epochs_quiet},
                                    {"jobs_touched", r.engine.jobs_touched},
                                    {"jobs_pulled", r.engine.jobs_pulled},
                                    {"most_touched", r.engine.most_touched}})
    engine[name] = value;
  out["engine_counters"] = engine;
  out["violations"] = r.violations;
  if (config_history) out["history"] = history_to_dict(std::move(r.history));
  return out;
}

}  // namespace

// Per-job throughput curves: none at all, or one (possibly empty) per job.
std::vector<std::vector<double>> curves_from(const py::handle& curves,
                                             std::size_t jobs) {
  if (PyUnicode_Check(curves.ptr()) || !PySequence_Check(curves.ptr()))
    throw py::type_error(
        "throughput must be a sequence of per-job sequences of numbers");
  const auto outer = py::reinterpret_borrow<py::sequence>(curves);
  const std::size_t n = outer.size();
  if (n != 0 && n != jobs)
    throw py::value_error(fmt::format(
        "throughput has {} curves for {} jobs; give none or one per job", n, jobs));
  std::vector<std::vector<double>> out(n);
  for (std::size_t j = 0; j < n; ++j)
    out[j] = real_sequence(outer[j], fmt::format("throughput[{}]", j));
  return out;
}

void register_sim(py::module_& m) {
  // The names of sim::Change, in its order: the history's `opened` / `closed` codes.
  m.attr("history_changes") =
      py::make_tuple("start", "scale_out", "scale_in", "move", "reclaim_scale_in",
                     "reclaim_preemption", "preemption", "finish", "end");
  m.def(
      "simulate",
      [](const py::dict& servers, const py::dict& jobs, const py::object& throughput,
         const py::object& load_time, const py::object& load, const py::dict& config,
         const py::object& progress, const std::vector<Application>& applications,
         const py::object& job_application, const py::object& job_batch_size,
         const py::object& job_work_scale, const py::object& hooks) {
        const std::vector<Server> server_list = servers_from(servers);
        // Read straight into the engine's records, curves moved in: at 500k
        // jobs each copy of them would cost ~60 MB.
        std::vector<sim::SimJob> sim_jobs;
        fill_jobs(
            jobs, [&sim_jobs](std::size_t n) { sim_jobs.resize(n); },
            [&sim_jobs](std::size_t j) -> Job& { return sim_jobs[j].job; });
        {
          std::vector<std::vector<double>> curves =
              curves_from(throughput, sim_jobs.size());
          for (std::size_t j = 0; j < curves.size(); ++j)
            sim_jobs[j].throughput = std::move(curves[j]);
        }
        const std::vector<double> times = real_sequence(load_time, "load_time");
        const std::vector<double> loads = real_sequence(load, "load");
        if (times.size() != loads.size())
          throw py::value_error(fmt::format("load has {} values but load_time has {}",
                                            loads.size(), times.size()));
        std::vector<sim::LoadPoint> points(times.size());
        for (std::size_t i = 0; i < points.size(); ++i)
          points[i] = {times[i], loads[i]};
        const std::vector<int> app_of = int_arg(job_application, "job_application");
        const std::vector<double> batch_of =
            double_arg(job_batch_size, "job_batch_size");
        if (!app_of.empty() || !batch_of.empty()) {
          if (app_of.size() != sim_jobs.size() || batch_of.size() != sim_jobs.size())
            throw py::value_error(
                "job_application and job_batch_size need one value per job");
          for (std::size_t j = 0; j < sim_jobs.size(); ++j) {
            sim_jobs[j].application = app_of[j];
            sim_jobs[j].batch_size = batch_of[j];
          }
        }
        const std::vector<double> scale_of =
            double_arg(job_work_scale, "job_work_scale");
        if (!scale_of.empty() && scale_of.size() != sim_jobs.size())
          throw py::value_error("job_work_scale needs one value per job (or none)");
        for (std::size_t j = 0; j < scale_of.size(); ++j)
          sim_jobs[j].work_scale = scale_of[j];
        const sim::Config cfg = config_from(config);
        if (!progress.is_none() && !PyCallable_Check(progress.ptr()))
          throw py::type_error("progress must be a callable or None");
        // Called about every 1% of simulated time, with the GIL: runs Python's
        // signal handlers (so Ctrl-C stops a run even without a progress
        // callback) and the callback, progress(fraction, now), whose answer must
        // be a bool or None (aryl.sim.simulate adapts a one-argument callback).
        const sim::Progress report = [&progress](double fraction, double now) {
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          if (progress.is_none()) return true;
          const py::object keep_going = progress(fraction, now);
          if (keep_going.is_none()) return true;
          return bool_arg(keep_going, "the value returned by progress");
        };
        const sim::Hooks policy = hooks_from(hooks);
        sim::Result result;
        {
          py::gil_scoped_release release;
          result = sim::simulate(server_list, sim_jobs, points, cfg, report,
                                 applications, policy);
        }
        return result_to_dict(std::move(result), cfg.history, policy.any());
      },
      py::arg("servers"), py::arg("jobs"), py::arg("throughput"), py::arg("load_time"),
      py::arg("load"), py::arg("config"), py::arg("progress") = py::none(),
      py::arg("applications") = std::vector<Application>{},
      py::arg("job_application") = py::list(), py::arg("job_batch_size") = py::list(),
      py::arg("job_work_scale") = py::list(), py::arg("hooks") = py::none(),
      "Run the event simulator (see aryl.sim.simulate); returns a dict of arrays and "
      "totals. Goodput-driven jobs: `applications` (aryl._core.Application) and, per "
      "job, the index of its application, its global batch size and (optionally) the "
      "fraction of its application's work it does. `progress(fraction, now)`: the "
      "run's progress in [0, 1] and the simulated time in s. `hooks`: a policy of the "
      "caller's (aryl.engine.hooks.CoreHooks), asked instead of the built-in kernels.");
}

}  // namespace aryl::bindings
