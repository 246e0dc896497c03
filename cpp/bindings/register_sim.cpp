#include "prelude.hpp"

#include "aryl/sim/simulator.hpp"

namespace aryl::bindings {
namespace {

sim::Config config_from(const py::dict& c) {
  sim::Config config;
  const auto policy = c["policy"].cast<std::string>();
  if (policy == "tiresias")
    config.allocator = sim::Allocator::tiresias;  // the kernel's policy is then unused
  else
    config.policy = parse_allocation_policy(policy);
  config.placement = parse_placement_policy(c["placement"].cast<std::string>());
  config.reclaim = parse_reclaim_policy(c["reclaim"].cast<std::string>());
  config.backfill = c["backfill"].cast<bool>();
  const auto scaling = c["scaling"].cast<std::string>();
  if (scaling != "linear" && scaling != "imperfect")
    throw py::value_error("scaling must be 'linear' or 'imperfect', got '" + scaling + "'");
  config.scaling = scaling == "linear" ? sim::Scaling::linear : sim::Scaling::imperfect;
  config.schedule_interval = c["schedule_interval"].cast<double>();
  config.loan_interval = c["loan_interval"].cast<double>();
  config.restart_overhead = c["restart_overhead"].cast<double>();
  if (c.contains("reallocation_overhead"))
    config.reallocation_overhead = c["reallocation_overhead"].cast<double>();
  if (c.contains("tiresias_threshold"))
    config.tiresias_threshold = c["tiresias_threshold"].cast<double>();
  config.headroom = c["headroom"].cast<double>();
  config.lend_hold = c["lend_hold"].cast<double>();
  config.hetero_efficiency = c["hetero_efficiency"].cast<double>();
  config.gpu_speed = c["gpu_speed"].cast<std::map<std::string, double>>();
  config.horizon = c["horizon"].cast<double>();
  config.seed = c["seed"].cast<std::uint64_t>();
  config.audit = c["audit"].cast<bool>();
  return config;
}

py::dict result_to_dict(sim::Result&& r) {
  py::dict out;
  out["start_time"] = to_numpy(std::move(r.start_time));
  out["finish_time"] = to_numpy(std::move(r.finish_time));
  out["work_lost"] = to_numpy(std::move(r.work_lost));
  out["preemptions"] = to_numpy(std::move(r.preemptions));
  out["scaling_ops"] = to_numpy(std::move(r.scaling_ops));
  out["ran_on_training"] = to_numpy(std::move(r.ran_on_training));
  out["ran_on_inference"] = to_numpy(std::move(r.ran_on_inference));
  out["ran_mixed"] = to_numpy(std::move(r.ran_mixed));
  out["t"] = to_numpy(std::move(r.t));
  out["training_gpus_used"] = to_numpy(std::move(r.training_gpus_used));
  out["loaned_gpus_used"] = to_numpy(std::move(r.loaned_gpus_used));
  out["on_loan"] = to_numpy(std::move(r.on_loan));
  out["inference_needed"] = to_numpy(std::move(r.inference_needed));
  out["queue_length"] = to_numpy(std::move(r.queue_length));
  out["running_jobs"] = to_numpy(std::move(r.running_jobs));
  for (const auto& [name, value] :
       {std::pair{"end_time", r.end_time}, {"training_gpu_seconds", r.training_gpu_seconds},
        {"loaned_gpu_seconds", r.loaned_gpu_seconds}, {"inference_gpu_seconds", r.inference_gpu_seconds},
        {"loaned_capacity_seconds", r.loaned_capacity_seconds}, {"work_delivered", r.work_delivered},
        {"work_completed", r.work_completed}, {"work_lost_total", r.work_lost_total}})
    out[name] = value;
  for (const auto& [name, value] :
       {std::pair{"reclaims", r.reclaims}, {"servers_reclaimed", r.servers_reclaimed},
        {"servers_reclaimed_free", r.servers_reclaimed_free}, {"collateral_gpus", r.collateral_gpus},
        {"reclaim_demand_gpus", r.reclaim_demand_gpus}, {"epochs_run", r.epochs_run}})
    out[name] = value;
  out["violations"] = r.violations;
  return out;
}

}  // namespace

void register_sim(py::module_& m) {
  m.def(
      "simulate",
      [](const py::dict& servers, const py::dict& jobs, const std::vector<std::vector<double>>& curves,
         const std::vector<double>& load_time, const std::vector<double>& load, const py::dict& config,
         const py::object& progress, const std::vector<Application>& applications,
         const std::vector<int>& job_application, const std::vector<double>& job_batch_size) {
        const std::vector<Server> server_list = servers_from(servers);
        const std::vector<Job> job_list = jobs_from(jobs);
        std::vector<sim::SimJob> sim_jobs(job_list.size());
        for (std::size_t j = 0; j < job_list.size(); ++j)
          sim_jobs[j] = {job_list[j], curves.empty() ? std::vector<double>{} : curves[j]};
        if (!job_application.empty() || !job_batch_size.empty()) {
          if (job_application.size() != job_list.size() || job_batch_size.size() != job_list.size())
            throw py::value_error("job_application and job_batch_size need one value per job");
          for (std::size_t j = 0; j < job_list.size(); ++j) {
            sim_jobs[j].application = job_application[j];
            sim_jobs[j].batch_size = job_batch_size[j];
          }
        }
        std::vector<sim::LoadPoint> points(load_time.size());
        for (std::size_t i = 0; i < points.size(); ++i) points[i] = {load_time[i], load[i]};
        const sim::Config cfg = config_from(config);
        sim::Progress report;
        if (!progress.is_none())
          report = [&progress](double fraction) {
            py::gil_scoped_acquire gil;
            const py::object keep_going = progress(fraction);
            return keep_going.is_none() || keep_going.cast<bool>();
          };
        sim::Result result;
        {
          py::gil_scoped_release release;
          result = sim::simulate(server_list, sim_jobs, points, cfg, report, applications);
        }
        return result_to_dict(std::move(result));
      },
      py::arg("servers"), py::arg("jobs"), py::arg("throughput"), py::arg("load_time"),
      py::arg("load"), py::arg("config"), py::arg("progress") = py::none(),
      py::arg("applications") = std::vector<Application>{},
      py::arg("job_application") = std::vector<int>{},
      py::arg("job_batch_size") = std::vector<double>{},
      "Run the event simulator (see aryl.sim.simulate); returns a dict of arrays and totals. "
      "Goodput-driven jobs: `applications` (aryl._core.Application) and, per job, the index "
      "of its application and its global batch size.");
}

}  // namespace aryl::bindings
