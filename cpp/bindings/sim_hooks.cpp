#include "sim_hooks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace aryl::bindings {
namespace {

// `a`, made read-only: a policy's view hands its columns out as they are.
template <typename T>
py::array_t<T> read_only(py::array_t<T>&& a) {
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return std::move(a);
}

// The engine's state as the columns aryl.engine.hooks builds its view from: the
// trace index of each state job, the workers (state job, server, flexible), each
// server's loan, a copy of the state itself (an aryl._core.ClusterState: the
// view's compiled copy, validated already, so the view need not rebuild one),
// each job's worker count and the queue (the jobs without workers, in submit
// order: StateColumns' `workers` and `queue`, so a policy's view need not work
// them out in Python at every epoch).
py::tuple state_columns(const ClusterState& state, const std::vector<int>& job_of) {
  const auto& workers = state.workers;
  std::vector<std::int64_t> held(state.jobs.size(), 0), queue;
  for (const Worker& w : workers) ++held[static_cast<std::size_t>(w.job)];
  for (std::size_t j = 0; j < held.size(); ++j)
    if (held[j] == 0) queue.push_back(static_cast<std::int64_t>(j));
  std::stable_sort(queue.begin(), queue.end(), [&](std::int64_t a, std::int64_t b) {
    return state.jobs[static_cast<std::size_t>(a)].submit_time <
           state.jobs[static_cast<std::size_t>(b)].submit_time;
  });
  return py::make_tuple(
      column_of<std::int64_t>(job_of.size(), [&](std::size_t i) { return job_of[i]; }),
      column_of<std::int64_t>(workers.size(),
                              [&](std::size_t i) { return workers[i].job; }),
      column_of<std::int64_t>(workers.size(),
                              [&](std::size_t i) { return workers[i].server; }),
      column_of<bool>(workers.size(),
                      [&](std::size_t i) { return workers[i].flexible; }),
      column_of<bool>(state.servers.size(),
                      [&](std::size_t i) { return state.servers[i].on_loan; }),
      py::cast(state, py::return_value_policy::copy),
      read_only(to_numpy(std::move(held))), read_only(to_numpy(std::move(queue))));
}

// Each state job's service (JobService) as aryl.engine.hooks reads it: (attained
// GPU-s, waited s, preemptions).
py::tuple service_columns(const sim::JobService& service) {
  std::vector<double> attained = service.attained, waited = service.waited;
  std::vector<std::int64_t> preemptions = service.preemptions;
  return py::make_tuple(read_only(to_numpy(std::move(attained))),
                        read_only(to_numpy(std::move(waited))),
                        read_only(to_numpy(std::move(preemptions))));
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

// An allocate answer: the kernel's own Decision on the state asked about (rows of
// that state, taken as they are: the engine checks them all), or its 4 columns.
Decision decision_from(const py::object& answer) {
  if (py::isinstance<Decision>(answer)) return answer.cast<Decision>();
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
                                    read_only(to_numpy(std::move(left))), throughput,
                                    service_columns(service), e.index, e.now));
    };
  if (py::object reclaim = hook(hooks, "reclaim"); !reclaim.is_none())
    out.reclaim = [reclaim](const ClusterState& state, const std::vector<int>& job_of,
                            const sim::JobService& service, int n,
                            const sim::Epoch& e) {
      py::gil_scoped_acquire gil;
      std::vector<double> left = service.remaining;
      return int_arg(reclaim(state_columns(state, job_of), service_columns(service), n,
                             e.index, e.now, read_only(to_numpy(std::move(left)))),
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
