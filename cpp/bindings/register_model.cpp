#include "prelude.hpp"

#include "aryl/model.hpp"

namespace aryl::bindings {

std::vector<Server> servers_from(const py::dict& t) {
  const auto id = string_column(t, "id");
  const auto pool = column<std::uint8_t>(t, "pool");
  const auto gpus = column<int>(t, "gpus");
  const auto type = string_column(t, "gpu_type");
  const auto on_loan = column<bool>(t, "on_loan");
  std::vector<Server> out(id.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = {id[i], static_cast<Pool>(pool[i]), gpus[i], type[i], on_loan[i]};
  return out;
}

std::vector<Job> jobs_from(const py::dict& t) {
  const auto id = string_column(t, "id");
  const auto d = column<int>(t, "gpus_per_worker");
  const auto lo = column<int>(t, "min_workers");
  const auto hi = column<int>(t, "max_workers");
  const auto duration = column<double>(t, "duration");
  const auto submit = column<double>(t, "submit_time");
  const auto estimate = column<double>(t, "estimated_duration");
  const auto type = string_column(t, "gpu_type");
  const auto checkpoint = column<bool>(t, "checkpoint");
  const auto hetero = column<bool>(t, "hetero");
  const auto reference = column<int>(t, "reference_workers");
  std::vector<Job> out(id.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = {id[i],      d[i],       lo[i],         hi[i],     duration[i], submit[i],
              estimate[i], type[i], checkpoint[i], hetero[i], reference[i]};
  return out;
}

namespace {

std::vector<Worker> workers_from(const py::dict& t) {
  const auto job = column<int>(t, "job");
  const auto server = column<int>(t, "server");
  const auto flexible = column<bool>(t, "flexible");
  std::vector<Worker> out(job.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = {job[i], server[i], flexible[i]};
  return out;
}

}  // namespace

void register_model(py::module_& m) {
  py::class_<ClusterState>(m, "ClusterState",
                           "Servers, jobs and worker placement, as the kernels see them.")
      .def(py::init([](const py::dict& servers, const py::dict& jobs, const py::dict& workers) {
             ClusterState state{servers_from(servers), jobs_from(jobs), workers_from(workers)};
             validate(state);  // once, here: the kernels take a valid state
             return state;
           }),
           py::arg("servers"), py::arg("jobs"), py::arg("workers"),
           "Build and validate from three dicts of equal-length columns (ids and GPU "
           "types as strings, pool as 0 = training / 1 = inference, workers by index). "
           "Raises ValueError naming the first bad record.")
      .def_property_readonly("n_servers", [](const ClusterState& s) { return s.servers.size(); })
      .def_property_readonly("n_jobs", [](const ClusterState& s) { return s.jobs.size(); })
      .def_property_readonly("n_workers", [](const ClusterState& s) { return s.workers.size(); });
  m.def("validate", &validate, py::arg("state"),
        "Raise ValueError naming the first bad record of the state.");
}

}  // namespace aryl::bindings
