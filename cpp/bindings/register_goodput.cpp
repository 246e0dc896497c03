// The Pollux goodput model and an application's measured tables (aryl.agents).
#include "prelude.hpp"

#include <cmath>

#include "aryl/application.hpp"
#include "aryl/goodput.hpp"
#include "aryl/pollux_job.hpp"

namespace aryl::bindings {

std::vector<int> int_arg(const py::handle& value, const char* name) {
  std::vector<int> out;
  for (double v : double_arg(value, name)) {
    if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 2e9)
      throw py::value_error(std::string(name) + " must hold whole numbers, got " +
                            std::to_string(v));
    out.push_back(static_cast<int>(v));
  }
  return out;
}

std::vector<std::string> string_arg(const py::handle& value, const char* name) {
  if (py::isinstance<py::str>(value) || !py::isinstance<py::sequence>(value))
    throw py::type_error(std::string(name) + " must be a sequence of strings");
  std::vector<std::string> out;
  for (const py::handle& item : value) {
    if (!py::isinstance<py::str>(item))
      throw py::type_error(std::string(name) + " must hold strings, got " +
                           std::string(py::str(py::type::of(item).attr("__name__"))));
    out.push_back(item.cast<std::string>());
  }
  return out;
}

namespace {

PerfParams params_arg(const py::handle& value) {
  const std::vector<double> v = double_arg(value, "perf_params");
  if (v.size() != 7)
    throw py::value_error(
        "perf_params must hold 7 numbers (alpha_c, beta_c, alpha_n, beta_n, "
        "alpha_r, beta_r, gamma), got " +
        std::to_string(v.size()));
  return PerfParams{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

py::tuple params_tuple(const PerfParams& p) {
  return py::make_tuple(p.alpha_c, p.beta_c, p.alpha_n, p.beta_n, p.alpha_r, p.beta_r,
                        p.gamma);
}

py::tuple choice_tuple(const BatchChoice& c) {
  return py::make_tuple(c.goodput, c.atomic_bsz, c.accum_steps, c.throughput,
                        c.efficiency);
}

// Equal-length profile columns as samples (ValueError naming a short column).
std::vector<ProfileSample> samples_arg(const py::handle& nodes,
                                       const py::handle& replicas,
                                       const py::handle& bsz, const py::handle& accum,
                                       const py::handle& step) {
  const auto n = int_arg(nodes, "num_nodes");
  const auto k = int_arg(replicas, "num_replicas");
  const auto m = double_arg(bsz, "atomic_bsz");
  const auto a = double_arg(accum, "accum_time");
  const auto s = double_arg(step, "step_time");
  for (auto [size, name] : {std::pair{k.size(), "num_replicas"},
                            {m.size(), "atomic_bsz"},
                            {a.size(), "accum_time"},
                            {s.size(), "step_time"}})
    if (size != n.size())
      throw py::value_error(std::string(name) + " has " + std::to_string(size) +
                            " values but num_nodes has " + std::to_string(n.size()));
  std::vector<ProfileSample> out(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) out[i] = {n[i], k[i], m[i], a[i], s[i]};
  return out;
}

py::dict samples_dict(const std::vector<ProfileSample>& samples) {
  std::vector<int> n, k;
  std::vector<double> m, a, s;
  for (const ProfileSample& x : samples) {
    n.push_back(x.num_nodes), k.push_back(x.num_replicas), m.push_back(x.atomic_bsz);
    a.push_back(x.accum_time), s.push_back(x.step_time);
  }
  py::dict out;
  out["num_nodes"] = py::array_t<int>(static_cast<py::ssize_t>(n.size()), n.data());
  out["num_replicas"] = py::array_t<int>(static_cast<py::ssize_t>(k.size()), k.data());
  out["atomic_bsz"] = py::array_t<double>(static_cast<py::ssize_t>(m.size()), m.data());
  out["accum_time"] = py::array_t<double>(static_cast<py::ssize_t>(a.size()), a.data());
  out["step_time"] = py::array_t<double>(static_cast<py::ssize_t>(s.size()), s.data());
  return out;
}

Application application_from(const std::string& name, const py::dict& placements,
                             const py::dict& scalability, const py::list& validation,
                             int max_epochs, int max_local_bsz) {
  PlacementTable p{
      string_arg(item(placements, "placements", "placement"), "placements.placement"),
      double_arg(item(placements, "placements", "local_bsz"), "placements.local_bsz"),
      double_arg(item(placements, "placements", "step_time"), "placements.step_time"),
      double_arg(item(placements, "placements", "sync_time"), "placements.sync_time")};
  ScalabilityTable s{
      int_arg(item(scalability, "scalability", "num_nodes"), "scalability.num_nodes"),
      int_arg(item(scalability, "scalability", "num_replicas"),
              "scalability.num_replicas"),
      double_arg(item(scalability, "scalability", "local_bsz"),
                 "scalability.local_bsz"),
      double_arg(item(scalability, "scalability", "step_time"),
                 "scalability.step_time"),
      double_arg(item(scalability, "scalability", "sync_time"),
                 "scalability.sync_time")};
  std::vector<ValidationTable> v;
  for (const py::handle& entry : validation) {
    if (!py::isinstance<py::dict>(entry))
      throw py::type_error("validation must be a list of dicts of columns");
    const auto table = py::reinterpret_borrow<py::dict>(entry);
    const auto batch =
        py::reinterpret_borrow<py::object>(item(table, "validation", "batch_size"));
    v.push_back(
        {py::float_(batch).cast<double>(),
         double_arg(item(table, "validation", "progress"), "validation.progress"),
         double_arg(item(table, "validation", "iteration"), "validation.iteration"),
         double_arg(item(table, "validation", "grad_sqr"), "validation.grad_sqr"),
         double_arg(item(table, "validation", "grad_var"), "validation.grad_var")});
  }
  return Application(name, std::move(p), std::move(s), std::move(v), max_epochs,
                     max_local_bsz);
}

}  // namespace

void register_goodput(py::module_& m) {
  m.def(
      "fit_perf_params",
      [](const py::handle& num_nodes, const py::handle& num_replicas,
         const py::handle& atomic_bsz, const py::handle& accum_time,
         const py::handle& step_time) {
        auto samples =
            samples_arg(num_nodes, num_replicas, atomic_bsz, accum_time, step_time);
        FitReport report;
        {
          py::gil_scoped_release release;
          report = fit_perf_params_report(samples);
        }
        py::dict out;
        out["params"] = params_tuple(report.params);
        out["objective"] = report.objective;
        out["iterations"] = report.iterations;
        out["pinned"] = report.pinned;
        return out;
      },
      py::arg("num_nodes"), py::arg("num_replicas"), py::arg("atomic_bsz"),
      py::arg("accum_time"), py::arg("step_time"),
      "Fit the 7 throughput parameters to profiles (equal-length columns; accum_time = "
      "step - "
      "sync). Returns {'params', 'objective', 'iterations', 'pinned'}.");
  m.def(
      "fit_objective",
      [](const py::handle& params, const py::handle& num_nodes,
         const py::handle& num_replicas, const py::handle& atomic_bsz,
         const py::handle& accum_time, const py::handle& step_time) {
        return fit_objective(
            params_arg(params),
            samples_arg(num_nodes, num_replicas, atomic_bsz, accum_time, step_time));
      },
      py::arg("perf_params"), py::arg("num_nodes"), py::arg("num_replicas"),
      py::arg("atomic_bsz"), py::arg("accum_time"), py::arg("step_time"),
      "The fit's objective at perf_params.");
  m.def(
      "predict_step_time",
      [](const py::handle& params, const py::handle& num_nodes,
         const py::handle& num_replicas, const py::handle& atomic_bsz) {
        const PerfParams p = params_arg(params);
        const auto n = int_arg(num_nodes, "num_nodes");
        const auto k = int_arg(num_replicas, "num_replicas");
        const auto b = double_arg(atomic_bsz, "atomic_bsz");
        if (k.size() != n.size() || b.size() != n.size())
          throw py::value_error(
              "num_nodes, num_replicas and atomic_bsz must have equal lengths");
        xt::xtensor<double, 1> out = xt::xtensor<double, 1>::from_shape({n.size()});
        for (std::size_t i = 0; i < n.size(); ++i)
          out(i) = predict_step_time(p, n[i], k[i], b[i]);
        return to_numpy(std::move(out));
      },
      py::arg("perf_params"), py::arg("num_nodes"), py::arg("num_replicas"),
      py::arg("atomic_bsz"),
      "Predicted step time (no accumulation) per (nodes, replicas, atomic batch), as "
      "an array.");

  m.def(
      "fixed_batch",
      [](double init_batch_size, double max_batch_size, int min_atomic_bsz,
         int max_atomic_bsz, int num_replicas, double batch_size) {
        return fixed_batch(
            {init_batch_size, max_batch_size, min_atomic_bsz, max_atomic_bsz},
            num_replicas, batch_size);
      },
      py::arg("init_batch_size"), py::arg("max_batch_size"), py::arg("min_atomic_bsz"),
      py::arg("max_atomic_bsz"), py::arg("num_replicas"), py::arg("batch_size"),
      "(atomic_bsz, accum_steps) of a fixed global batch on num_replicas replicas.");

  py::class_<GoodputModel>(
      m, "GoodputModel",
      "Throughput, efficiency and goodput of fitted parameters (see "
      "aryl.agents.PolluxAgent).")
      .def(py::init([](const py::handle& perf, double grad_sqr, double grad_var,
                       double init_batch_size, double max_batch_size,
                       int min_atomic_bsz, int max_atomic_bsz) {
             return GoodputModel(
                 params_arg(perf), {grad_sqr, grad_var},
                 {init_batch_size, max_batch_size, min_atomic_bsz, max_atomic_bsz});
           }),
           py::arg("perf_params"), py::arg("grad_sqr"), py::arg("grad_var"),
           py::arg("init_batch_size"), py::arg("max_batch_size"),
           py::arg("min_atomic_bsz"), py::arg("max_atomic_bsz"))
      .def_property_readonly(
          "perf_params", [](const GoodputModel& g) { return params_tuple(g.perf()); })
      .def("throughput", &GoodputModel::throughput, py::arg("num_nodes"),
           py::arg("num_replicas"), py::arg("atomic_bsz"), py::arg("accum_steps"))
      .def("efficiency", &GoodputModel::efficiency, py::arg("batch_size"))
      .def("goodput", &GoodputModel::goodput, py::arg("num_nodes"),
           py::arg("num_replicas"), py::arg("atomic_bsz"), py::arg("accum_steps"))
      .def(
          "optimize",
          [](const GoodputModel& g, int n, int k) {
            return choice_tuple(g.optimize(n, k));
          },
          py::arg("num_nodes"), py::arg("num_replicas"),
          "(goodput, atomic_bsz, accum_steps, throughput, efficiency) of the best "
          "batch.")
      .def("speedup", &GoodputModel::speedup, py::arg("num_nodes"),
           py::arg("num_replicas"))
      .def(
          "configure",
          [](const GoodputModel& g, int n, int k, double batch) {
            return choice_tuple(g.configure(n, k, batch));
          },
          py::arg("num_nodes"), py::arg("num_replicas"), py::arg("batch_size") = 0.0,
          "The batch a job runs (adaptive when batch_size <= 0), capped as the "
          "artifact does.");

  py::class_<PolluxJobModel>(
      m, "PolluxJobModel",
      "A Pollux job's profiles, fitted model and batch choice (see "
      "aryl.agents.PolluxAgent).")
      .def(py::init([](double init_batch_size, double max_batch_size,
                       int min_atomic_bsz, int max_atomic_bsz, double batch_size) {
             return PolluxJobModel(
                 {init_batch_size, max_batch_size, min_atomic_bsz, max_atomic_bsz},
                 batch_size);
           }),
           py::arg("init_batch_size"), py::arg("max_batch_size"),
           py::arg("min_atomic_bsz"), py::arg("max_atomic_bsz"),
           py::arg("batch_size") = 0.0)
      .def("observe", &PolluxJobModel::observe, py::arg("num_nodes"),
           py::arg("num_replicas"), py::arg("atomic_bsz"), py::arg("step_time"),
           py::arg("sync_time"),
           "Record a measured step; True when new and the model was refitted.")
      .def(
          "observe_grad",
          [](PolluxJobModel& j, double sqr, double var) { j.observe_grad({sqr, var}); },
          py::arg("grad_sqr"), py::arg("grad_var"))
      .def_property_readonly("has_model", &PolluxJobModel::has_model)
      .def_property_readonly("perf_params",
                             [](const PolluxJobModel& j) -> py::object {
                               if (!j.perf()) return py::none();
                               return params_tuple(*j.perf());
                             })
      .def_property_readonly("grad_params",
                             [](const PolluxJobModel& j) -> py::object {
                               if (!j.grad()) return py::none();
                               return py::make_tuple(j.grad()->sqr, j.grad()->var);
                             })
      .def("model", &PolluxJobModel::model)
      .def("speedup", &PolluxJobModel::speedup, py::arg("num_nodes"),
           py::arg("num_replicas"))
      .def(
          "batch",
          [](const PolluxJobModel& j, int n, int k) {
            return choice_tuple(j.batch(n, k));
          },
          py::arg("num_nodes"), py::arg("num_replicas"),
          "(goodput, atomic_bsz, accum_steps, throughput, efficiency) the job runs "
          "with.")
      .def_property_readonly("max_profiled_replicas",
                             &PolluxJobModel::max_profiled_replicas)
      .def_property_readonly("max_replicas", &PolluxJobModel::max_replicas)
      .def(
          "profile", [](const PolluxJobModel& j) { return samples_dict(j.profile()); },
          "The profiles as fit columns, in the order first seen.");

  py::class_<Application>(m, "Application", "One Pollux application's measured tables.")
      .def(py::init(&application_from), py::arg("name"), py::arg("placements"),
           py::arg("scalability"), py::arg("validation"), py::arg("max_epochs") = 0,
           py::arg("max_local_bsz") = 0)
      .def_property_readonly("name", &Application::name)
      .def_property_readonly("init_batch_size", &Application::init_batch_size)
      .def_property_readonly("max_batch_size", &Application::max_batch_size)
      .def_property_readonly("min_local_bsz", &Application::min_local_bsz)
      .def_property_readonly("max_local_bsz", &Application::max_local_bsz)
      .def_property_readonly("max_epochs", &Application::max_epochs)
      .def_property_readonly("completion_epoch", &Application::completion_epoch)
      .def(
          "step_time",
          [](const Application& a, const py::handle& placement, double local_bsz) {
            return a.step_time(int_arg(placement, "placement"), local_bsz);
          },
          py::arg("placement"), py::arg("local_bsz"),
          "(step_time, sync_time) of one step.")
      .def(
          "grad_stats",
          [](const Application& a, double batch, int epoch) {
            const GradParams g = a.grad_stats(batch, epoch);
            return py::make_tuple(g.sqr, g.var);
          },
          py::arg("batch_size"), py::arg("epoch"),
          "(grad_sqr, grad_var) at a batch and epoch.")
      .def("epoch_progress", &Application::epoch_progress, py::arg("epoch"))
      .def("epoch_at", &Application::epoch_at, py::arg("progress"))
      .def(
          "progress_rate",
          [](const Application& a, const py::handle& placement, int atomic, int accum,
             int epoch) {
            return a.progress_rate(int_arg(placement, "placement"), atomic, accum,
                                   epoch);
          },
          py::arg("placement"), py::arg("atomic_bsz"), py::arg("accum_steps"),
          py::arg("epoch"), "True progress (M0-equivalent steps) per second.")
      .def("max_progress_rate", &Application::max_progress_rate,
           "An upper bound on progress_rate over every placement, batch and epoch.")
      .def(
          "profile",
          [](const Application& a) { return samples_dict(a.profile_samples()); },
          "Every measured row as fit columns (num_nodes, num_replicas, atomic_bsz, "
          "accum_time, "
          "step_time).");
}

}  // namespace aryl::bindings
