#include "sim_hooks.hpp"

#include <fmt/format.h>

#include <utility>

namespace aryl::bindings {
namespace {

// The engine's state as the columns aryl.sim.hooks builds its view from: the
// trace index of each state job, the workers (state job, server, flexible), each
// server's loan, and a copy of the state itself (an aryl._core.ClusterState: the
// view's compiled copy, validated already, so the view need not rebuild one).
py::tuple state_columns(const ClusterState& state, const std::vector<int>& job_of) {
  std::vector<std::int64_t> job, server;
  std::vector<std::uint8_t> flexible, on_loan;
  job.reserve(state.workers.size());
  server.reserve(state.workers.size());
  flexible.reserve(state.workers.size());
  for (const Worker& w : state.workers) {
    job.push_back(w.job);
    server.push_back(w.server);
    flexible.push_back(w.flexible ? 1 : 0);
  }
  on_loan.reserve(state.servers.size());
  for (const Server& s : state.servers) on_loan.push_back(s.on_loan ? 1 : 0);
  std::vector<std::int64_t> trace(job_of.begin(), job_of.end());
  return py::make_tuple(to_numpy(std::move(trace)), to_numpy(std::move(job)),
                        to_numpy(std::move(server)), to_numpy(std::move(flexible)),
                        to_numpy(std::move(on_loan)),
                        py::cast(state, py::return_value_policy::copy));
}

// Each state job's service (JobService) as aryl.sim.hooks reads it: (attained
// GPU-s, waited s, preemptions).
py::tuple service_columns(const sim::JobService& service) {
  std::vector<double> attained = service.attained, waited = service.waited;
  std::vector<std::int64_t> preemptions = service.preemptions;
  return py::make_tuple(to_numpy(std::move(attained)), to_numpy(std::move(waited)),
                        to_numpy(std::move(preemptions)));
}

// A hook's answer of `count` int arrays (a sequence of them).
std::vector<std::vector<int>> int_arrays(const py::object& answer, std::size_t count,
                                         const char* what) {
  if (!PySequence_Check(answer.ptr()) ||
      static_cast<std::size_t>(PySequence_Size(answer.ptr())) != count)
    throw py::type_error(fmt::format("{} must answer {} arrays", what, count));
  const auto arrays = py::reinterpret_borrow<py::sequence>(answer);
  std::vector<std::vector<int>> out;
  for (std::size_t k = 0; k < count; ++k)
    out.push_back(int_arg(arrays[k], fmt::format("{}[{}]", what, k).c_str()));
  return out;
}

Decision decision_from(const py::object& answer) {
  auto arrays = int_arrays(answer, 4, "allocate");
  const auto& [job, server, flexible, stop] =
      std::tie(arrays[0], arrays[1], arrays[2], arrays[3]);
  if (server.size() != job.size() || flexible.size() != job.size())
    throw py::value_error("allocate: the start columns differ in length");
  Decision d;
  d.start.reserve(job.size());
  for (std::size_t k = 0; k < job.size(); ++k)
    d.start.push_back({job[k], server[k], flexible[k] != 0});
  d.stop = std::move(stop);
  return d;
}

py::object hook(const py::object& hooks, const char* name) {
  py::object f = hooks.attr(name);
  if (!f.is_none() && !PyCallable_Check(f.ptr()))
    throw py::type_error(fmt::format("hooks.{} must be a callable or None", name));
  return f;
}

}  // namespace

sim::Hooks hooks_from(const py::object& hooks) {
  sim::Hooks out;
  if (hooks.is_none()) return out;
  if (py::object allocate = hook(hooks, "allocate"); !allocate.is_none())
    out.allocate = [allocate](const ClusterState& state, const std::vector<int>& job_of,
                              const std::vector<double>& remaining,
                              const std::vector<std::vector<double>>& throughput,
                              const sim::JobService& service, const sim::Epoch& e) {
      py::gil_scoped_acquire gil;
      std::vector<double> left = remaining;
      return decision_from(allocate(state_columns(state, job_of),
                                    to_numpy(std::move(left)), throughput,
                                    service_columns(service), e.index, e.now));
    };
  if (py::object reclaim = hook(hooks, "reclaim"); !reclaim.is_none())
    out.reclaim = [reclaim](const ClusterState& state, const std::vector<int>& job_of,
                            const sim::JobService& service, int n,
                            const sim::Epoch& e) {
      py::gil_scoped_acquire gil;
      return int_arg(reclaim(state_columns(state, job_of), service_columns(service), n,
                             e.index, e.now),
                     "reclaim");
    };
  if (py::object admit = hook(hooks, "admit"); !admit.is_none())
    out.admit = [admit](int job, const sim::Epoch& e) {
      py::gil_scoped_acquire gil;
      return bool_arg(admit(job, e.index, e.now), "admit");
    };
  return out;
}

}  // namespace aryl::bindings
