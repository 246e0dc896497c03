#include "prelude.hpp"

#include <climits>

#include "aryl/reclaim.hpp"

namespace aryl::bindings {

void register_reclaim(py::module_& m) {
  py::class_<ReclaimPlan>(m, "ReclaimPlan",
                          "Indices of the servers returned and jobs hit.")
      .def_readonly("servers", &ReclaimPlan::servers)
      .def_readonly("preempted", &ReclaimPlan::preempted)
      .def_readonly("scaled_in", &ReclaimPlan::scaled_in)
      .def_readonly("demand_gpus", &ReclaimPlan::demand_gpus)
      .def_readonly("collateral_gpus", &ReclaimPlan::collateral_gpus)
      .def_readonly("work_lost", &ReclaimPlan::work_lost);
  m.def(
      "reclaim",
      [](const py::object& state_object, const py::object& n, const py::object& policy,
         const py::object& seed, const std::optional<std::vector<int>>& among,
         const py::object& unsaved, const py::object& restart_overhead) {
        const ClusterState& state = state_arg(state_object);
        const int count = static_cast<int>(int_arg(n, "n", INT_MIN, INT_MAX));
        const ReclaimPolicy p = parse_reclaim_policy(str_arg(policy, "policy"));
        const std::uint64_t s = seed_arg(seed, "seed");
        WorkAtRisk work;
        if (!unsaved.is_none()) work.unsaved = double_arg(unsaved, "unsaved");
        work.restart_overhead = real_arg(restart_overhead, "restart_overhead");
        py::gil_scoped_release release;
        return among ? reclaim(state, count, p, s, *among, work)
                     : reclaim(state, count, p, s, work);
      },
      py::arg("state"), py::arg("n"), py::arg("policy") = "aryl", py::arg("seed") = 0,
      py::arg("among") = py::none(), py::arg("unsaved") = py::none(),
      py::arg("restart_overhead") = 0.0,
      "Choose n on-loan servers to return (see aryl.reclaim); `among`: server indices "
      "to choose from (default: every on-loan server); `unsaved`: per job, the "
      "GPU-seconds a preemption throws away (default: none), and "
      "`restart_overhead` (s), for the least-work and exact-work policies and the "
      "plan's work_lost.");
  m.def(
      "preemption_costs",
      [](const py::object& state) { return preemption_costs(state_arg(state)); },
      py::arg("state"),
      "Algorithm 1's preemption cost of each on-loan server, in server order.");
  m.attr("exact_subset_limit") = exact_subset_limit;
}

}  // namespace aryl::bindings
