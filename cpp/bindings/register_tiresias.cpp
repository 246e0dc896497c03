// Tiresias, the Pollux artifact's deterministic baseline, one round at a time.
#include "prelude.hpp"

#include "aryl/tiresias.hpp"

namespace aryl::bindings {

void register_tiresias(py::module_& m) {
  m.attr("tiresias_default_threshold") = tiresias_default_threshold;
  m.def(
      "tiresias_round",
      [](const py::handle& gpus, const py::handle& executed_time,
         const py::list& allocations, const py::handle& queue0,
         const py::handle& queue1, const py::handle& node_gpus, double threshold) {
        TiresiasInput in;
        const auto g = int_arg(gpus, "gpus");
        const auto e = double_arg(executed_time, "executed_time");
        if (e.size() != g.size() || allocations.size() != g.size())
          throw py::value_error(
              "gpus, executed_time and allocations must have one entry per job");
        for (std::size_t j = 0; j < g.size(); ++j)
          in.jobs.push_back({g[j], e[j], int_arg(allocations[j], "allocations[j]")});
        in.queue0 = int_arg(queue0, "queue0");
        in.queue1 = int_arg(queue1, "queue1");
        in.node_gpus = int_arg(node_gpus, "node_gpus");
        in.threshold = threshold;
        TiresiasDecision d;
        {
          py::gil_scoped_release release;
          d = tiresias_round(in);
        }
        py::dict out;
        out["queue0"] = d.queue0;
        out["queue1"] = d.queue1;
        out["running"] = d.running;
        out["allocations"] = d.allocations;
        out["demoted"] = d.demoted;
        return out;
      },
      py::arg("gpus"), py::arg("executed_time"), py::arg("allocations"),
      py::arg("queue0"), py::arg("queue1"), py::arg("node_gpus"),
      py::arg("threshold") = tiresias_default_threshold,
      "One Tiresias round (two queues, demotion at threshold GPU-seconds, preemptive): "
      "{'queue0', 'queue1', 'running', 'allocations', 'demoted'} with per-job node "
      "lists.");
  m.def("allocation_placement", &allocation_placement, py::arg("allocation"),
        "GPUs per node of an allocation's consecutive runs ([0, 0, 3] -> [2, 1]).");
}

}  // namespace aryl::bindings
