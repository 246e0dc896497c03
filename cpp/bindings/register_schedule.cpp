#include "prelude.hpp"

#include <fmt/format.h>

#include <climits>

#include "aryl/capacity.hpp"
#include "aryl/knapsack.hpp"
#include "aryl/schedule.hpp"

namespace aryl::bindings {
namespace {

// groups: a sequence of sequences of (weight, value) pairs.
std::vector<std::vector<KnapsackItem>> knapsack_groups(const py::handle& groups) {
  if (PyUnicode_Check(groups.ptr()) || !PySequence_Check(groups.ptr()))
    throw py::type_error(
        "groups must be a sequence of sequences of (weight, value) pairs");
  const auto outer = py::reinterpret_borrow<py::sequence>(groups);
  std::vector<std::vector<KnapsackItem>> items(outer.size());
  for (std::size_t g = 0; g < items.size(); ++g) {
    const py::object group = outer[g];
    if (PyUnicode_Check(group.ptr()) || !PySequence_Check(group.ptr()))
      throw py::type_error(
          fmt::format("groups[{}] must be a sequence of (weight, value) pairs", g));
    for (py::handle pair : py::reinterpret_borrow<py::sequence>(group)) {
      const std::string where = fmt::format("group {}, item {}", g, items[g].size());
      if (PyUnicode_Check(pair.ptr()) || !PySequence_Check(pair.ptr()) ||
          py::len(pair) != 2)
        throw py::type_error(where + ": expected a (weight, value) pair");
      const auto wv = py::reinterpret_borrow<py::sequence>(pair);
      items[g].push_back(
          {static_cast<int>(int_arg(wv[0], where + ": weight", INT_MIN, INT_MAX)),
           real_arg(wv[1], where + ": value")});
    }
  }
  return items;
}

py::array_t<int> int_array(const std::vector<int>& values) {
  return column_of<int>(values.size(), [&](std::size_t i) { return values[i]; });
}

// One field of the decision's new workers, as a NumPy array.
template <typename T>
py::array_t<T> start_column(const Decision& d, T Worker::* field) {
  return column_of<T>(d.start.size(), [&](std::size_t i) { return d.start[i].*field; });
}

}  // namespace

void register_schedule(py::module_& m) {
  m.def(
      "knapsack",
      [](const py::object& groups, const py::object& capacity) {
        std::vector<std::vector<KnapsackItem>> items = knapsack_groups(groups);
        const int c = static_cast<int>(int_arg(capacity, "capacity", INT_MIN, INT_MAX));
        py::gil_scoped_release release;
        return knapsack(items, c);
      },
      py::arg("groups"), py::arg("capacity"),
      "Multiple-choice knapsack over lists of (weight, value) pairs: per group the "
      "chosen item's index or -1 (see aryl.knapsack).");

  m.def(
      "base_demands",
      [](const py::object& state_object, const py::object& policy) {
        const ClusterState& state = state_arg(state_object);
        const AllocationPolicy p = parse_allocation_policy(str_arg(policy, "policy"));
        std::vector<int> out;
        out.reserve(state.jobs.size());
        for (const Job& job : state.jobs) out.push_back(base_demand(job, p));
        return out;
      },
      py::arg("state"), py::arg("policy"),
      "Workers each job must get to start under `policy` (the kernel's rule).");

  m.def(
      "advance_remaining",
      [](const py::object& state_object, const py::object& remaining,
         const py::object& seconds, const py::object& speed,
         const py::object& hetero_efficiency, const py::object& throughput) {
        const ClusterState& state = state_arg(state_object);
        std::vector<double> left = real_sequence(remaining, "remaining");
        const double s = real_arg(seconds, "seconds");
        std::vector<double> speeds = real_sequence(speed, "speed");
        const double efficiency = real_arg(hetero_efficiency, "hetero_efficiency");
        auto curves = curves_from(throughput, state.jobs.size());
        py::gil_scoped_release release;
        return advance_remaining(state, std::move(left), s, speeds, efficiency, curves);
      },
      py::arg("state"), py::arg("remaining"), py::arg("seconds"),
      py::arg("speed") = py::list(), py::arg("hetero_efficiency") = 0.7,
      py::arg("throughput") = py::list(),
      "Each job's remaining work after `seconds` more on its workers, as the "
      "simulator moves it (see aryl.ClusterState.advance).");

  m.def(
      "job_rooms",
      [](const py::object& state, const std::vector<int>& lendable) {
        return job_rooms(state_arg(state), lendable);
      },
      py::arg("state"), py::arg("lendable") = std::vector<int>(),
      "Workers of each job that fit on an empty cluster: training servers plus the "
      "on-loan inference servers, or with `lendable` (one count per job) that many "
      "inference servers of each GPU type (the most roomy). A job whose base demand "
      "(base_demands) exceeds its room can never start.");

  m.def(
      "spare_servers",
      [](const std::vector<double>& load, int inference_servers, double headroom) {
        if (inference_servers < 0 || !(headroom >= 0.0))
          throw py::value_error(
              fmt::format("inference_servers and headroom must be >= 0, got {} and {}",
                          inference_servers, headroom));
        std::vector<int> out;
        out.reserve(load.size());
        for (double x : load)
          out.push_back(spare_servers(x, inference_servers, headroom));
        return out;
      },
      py::arg("load"), py::arg("inference_servers"), py::arg("headroom") = 0.0,
      "Inference servers each load spares out of `inference_servers`: N - min(N, "
      "ceil(min(1, load x (1 + headroom)) x N - 1e-9)), the simulator's lending rule.");

  py::class_<Decision>(m, "Decision",
                       "Index-based scheduling decision (see aryl.schedule).")
      .def_property_readonly(
          "start",
          [](const Decision& d) {
            py::list out;
            for (const Worker& w : d.start)
              out.append(py::make_tuple(w.job, w.server, w.flexible));
            return out;
          })
      .def_readonly("stop", &Decision::stop)
      .def_readonly("allocation", &Decision::allocation)
      .def_readonly("pending", &Decision::pending)
      // The same as NumPy arrays, for aryl.ClusterState (no per-row Python objects).
      .def_property_readonly(
          "start_job", [](const Decision& d) { return start_column(d, &Worker::job); })
      .def_property_readonly(
          "start_server",
          [](const Decision& d) { return start_column(d, &Worker::server); })
      .def_property_readonly(
          "start_flexible",
          [](const Decision& d) { return start_column(d, &Worker::flexible); })
      .def_property_readonly("stop_array",
                             [](const Decision& d) { return int_array(d.stop); })
      .def_property_readonly("allocation_array",
                             [](const Decision& d) { return int_array(d.allocation); })
      .def_property_readonly("pending_array",
                             [](const Decision& d) { return int_array(d.pending); });
  m.def(
      "schedule",
      [](const py::object& state_object, const py::object& policy,
         const py::object& placement, const py::object& backfill,
         const py::object& remaining, const py::object& speed,
         const py::object& hetero_efficiency, const py::object& throughput,
         const py::object& queue, const py::object& may_grow) {
        const ClusterState& state = state_arg(state_object);
        ScheduleOptions options;
        if (!queue.is_none()) options.queue = int_arg(queue, "queue");
        for (const int g : int_arg(may_grow, "may_grow"))
          options.may_grow.push_back(g != 0 ? 1 : 0);
        options.policy = parse_allocation_policy(str_arg(policy, "policy"));
        options.placement = parse_placement_policy(str_arg(placement, "placement"));
        options.backfill = bool_arg(backfill, "backfill");
        options.remaining = real_sequence(remaining, "remaining");
        options.speed = real_sequence(speed, "speed");
        options.hetero_efficiency = real_arg(hetero_efficiency, "hetero_efficiency");
        options.throughput = curves_from(throughput, state.jobs.size());
        py::gil_scoped_release release;
        return schedule(state, options);
      },
      py::arg("state"), py::arg("policy") = "aryl", py::arg("placement") = "aryl",
      py::arg("backfill") = false, py::arg("remaining") = py::list(),
      py::arg("speed") = py::list(), py::arg("hetero_efficiency") = 0.7,
      py::arg("throughput") = py::list(), py::arg("queue") = py::none(),
      py::arg("may_grow") = py::list(),
      "One scheduling epoch on a validated state (see aryl.schedule): per-server "
      "relative GPU speeds (empty = all 1.0), the mixed-type efficiency, per-job "
      "throughput curves (empty = linear), the caller's queue (queued jobs to "
      "admit, in order; None = the policy's) and the jobs that may grow (per-job "
      "flags; empty = all).");
}

}  // namespace aryl::bindings
