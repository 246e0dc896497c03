// The Pollux policy's genetic search, one round (aryl.schedule(policy="pollux")).
#include "prelude.hpp"

#include <fmt/format.h>

#include "aryl/pollux.hpp"

namespace aryl::bindings {

void register_pollux(py::module_& m) {
  m.def(
      "pollux_optimize",
      [](const py::list& models, const py::handle& max_replicas,
         const py::list& current, const py::handle& attained_service,
         const py::handle& submit_time, const py::handle& age,
         const py::handle& num_restarts, const py::handle& node_gpus,
         const py::handle& population, const py::handle& generations,
         const py::handle& seed, const py::handle& min_replicas,
         const py::handle& threads, bool reference) {
        const auto caps = int_arg(max_replicas, "max_replicas");
        const auto attained = double_arg(attained_service, "attained_service");
        const auto submit = double_arg(submit_time, "submit_time");
        const auto ages = double_arg(age, "age");
        const auto restarts = int_arg(num_restarts, "num_restarts");
        const std::size_t n = models.size();
        const auto mins = min_replicas.is_none()
                              ? std::vector<int>(n, 0)
                              : int_arg(min_replicas, "min_replicas");
        if (caps.size() != n || current.size() != n || attained.size() != n ||
            submit.size() != n || ages.size() != n || restarts.size() != n ||
            mins.size() != n)
          throw py::value_error(
              "pollux_optimize: models, max_replicas, current, attained_service, "
              "submit_time, age, num_restarts and min_replicas need one entry per "
              "job");
        std::vector<PolluxJob> jobs(n);
        for (std::size_t j = 0; j < n; ++j) {
          jobs[j].key = static_cast<std::int64_t>(j);
          if (!models[j].is_none()) jobs[j].model = models[j].cast<GoodputModel>();
          jobs[j].max_replicas = caps[j];
          jobs[j].min_replicas = mins[j];
          jobs[j].current = int_arg(current[j], "current[j]");
          jobs[j].attained_service = attained[j];
          jobs[j].submit_time = submit[j];
          jobs[j].age = ages[j];
          jobs[j].num_restarts = restarts[j];
        }
        PolluxOptions options;
        options.population =
            static_cast<int>(int_arg(population, "population", 2, 1'000'000));
        options.generations =
            static_cast<int>(int_arg(generations, "generations", 0, 1'000'000));
        options.seed = seed_arg(seed, "seed");
        options.threads = static_cast<int>(int_arg(threads, "threads", 1, 256));
        const std::vector<int> nodes = int_arg(node_gpus, "node_gpus");
        PolluxRound out;
        {
          py::gil_scoped_release release;
          if (reference) {
            out = pollux_reference_round(jobs, nodes, options);
          } else {
            PolluxPolicy policy(options);
            out.allocation = policy.optimize(jobs, nodes);
            out.objective = policy.last_objective();
          }
        }
        return py::make_tuple(out.allocation, out.objective);
      },
      py::arg("models"), py::arg("max_replicas"), py::arg("current"),
      py::arg("attained_service"), py::arg("submit_time"), py::arg("age"),
      py::arg("num_restarts"), py::arg("node_gpus"), py::arg("population") = 100,
      py::arg("generations") = 100, py::arg("seed") = 0,
      py::arg("min_replicas") = py::none(), py::arg("threads") = 1,
      py::arg("reference") = false,
      "One round of the Pollux policy's genetic search: (replicas per node of each "
      "job, "
      "objective). models: a GoodputModel or None (not yet profiled) per job; current: "
      "replicas per node now ([] for none); min_replicas: per job, 0 for none (None: "
      "none for all); threads: the search's threads (the result does not depend on "
      "them); reference: the dense search this one replaced (for comparisons).");
}

}  // namespace aryl::bindings
