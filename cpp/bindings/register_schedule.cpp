#include "prelude.hpp"

#include "aryl/knapsack.hpp"
#include "aryl/schedule.hpp"

namespace aryl::bindings {

void register_schedule(py::module_& m) {
  m.def(
      "knapsack",
      [](const std::vector<std::vector<std::pair<int, double>>>& groups, int capacity) {
        std::vector<std::vector<KnapsackItem>> items(groups.size());
        for (std::size_t g = 0; g < groups.size(); ++g)
          for (const auto& [weight, value] : groups[g]) items[g].push_back({weight, value});
        py::gil_scoped_release release;
        return knapsack(items, capacity);
      },
      py::arg("groups"), py::arg("capacity"),
      "Multiple-choice knapsack over lists of (weight, value) pairs: per group the "
      "chosen item's index or -1 (see aryl.knapsack).");

  py::class_<Decision>(m, "Decision", "Index-based scheduling decision (see aryl.schedule).")
      .def_property_readonly("start",
                             [](const Decision& d) {
                               py::list out;
                               for (const Worker& w : d.start)
                                 out.append(py::make_tuple(w.job, w.server, w.flexible));
                               return out;
                             })
      .def_readonly("stop", &Decision::stop)
      .def_readonly("allocation", &Decision::allocation)
      .def_readonly("pending", &Decision::pending);
  m.def(
      "schedule",
      [](const ClusterState& state, const std::string& policy, const std::string& placement,
         bool backfill, std::vector<double> remaining, std::vector<double> speed,
         double hetero_efficiency, std::vector<std::vector<double>> throughput) {
        ScheduleOptions options;
        options.policy = parse_allocation_policy(policy);
        options.placement = parse_placement_policy(placement);
        options.backfill = backfill;
        options.remaining = std::move(remaining);
        options.speed = std::move(speed);
        options.hetero_efficiency = hetero_efficiency;
        options.throughput = std::move(throughput);
        py::gil_scoped_release release;
        return schedule(state, options);
      },
      py::arg("state"), py::arg("policy") = "aryl", py::arg("placement") = "aryl",
      py::arg("backfill") = false, py::arg("remaining") = std::vector<double>{},
      py::arg("speed") = std::vector<double>{}, py::arg("hetero_efficiency") = 0.7,
      py::arg("throughput") = std::vector<std::vector<double>>{},
      "One scheduling epoch on a validated state (see aryl.schedule): per-server "
      "relative GPU speeds (empty = all 1.0), the mixed-type efficiency, and per-job "
      "throughput curves (empty = linear).");
}

}  // namespace aryl::bindings
