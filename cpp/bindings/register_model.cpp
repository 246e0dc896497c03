#include "prelude.hpp"

#include <climits>
#include <functional>

#include <fmt/format.h>

#include "aryl/model.hpp"

namespace aryl::bindings {
namespace {

int as_int(long long v) {
  return static_cast<int>(v);
}  // within [INT_MIN, INT_MAX] by the reader

}  // namespace

std::vector<Server> servers_from(const py::dict& t) {
  const auto id = string_column(t, "servers", "id", std::nullopt);
  const std::size_t n = id.size();
  const auto pool = int_column(t, "servers", "pool", n, 0, 1);
  const auto gpus = int_column(t, "servers", "gpus", n, INT_MIN, INT_MAX);
  const auto type = string_column(t, "servers", "gpu_type", n);
  const auto on_loan = bool_column(t, "servers", "on_loan", n);
  std::vector<Server> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {id[i], static_cast<Pool>(pool[i]), as_int(gpus[i]), type[i], on_loan[i]};
  return out;
}

// Column by column into the records, each column freed before the next is read:
// the transient memory is one column, not all of them (500k-job simulations).
void fill_jobs(const py::dict& t, const std::function<void(std::size_t)>& resize,
               const std::function<Job&(std::size_t)>& job) {
  std::size_t n = 0;
  {
    auto id = string_column(t, "jobs", "id", std::nullopt);
    n = id.size();
    resize(n);
    for (std::size_t i = 0; i < n; ++i) job(i).id = std::move(id[i]);
  }
  const auto ints = [&](const char* key, int Job::* field) {
    const auto values = int_column(t, "jobs", key, n, INT_MIN, INT_MAX);
    for (std::size_t i = 0; i < n; ++i) job(i).*field = as_int(values[i]);
  };
  const auto reals = [&](const char* key, double Job::* field) {
    const auto values = real_column(t, "jobs", key, n);
    for (std::size_t i = 0; i < n; ++i) job(i).*field = values[i];
  };
  const auto flags = [&](const char* key, bool Job::* field) {
    const auto values = bool_column(t, "jobs", key, n);
    for (std::size_t i = 0; i < n; ++i) job(i).*field = values[i];
  };
  ints("gpus_per_worker", &Job::gpus_per_worker);
  ints("min_workers", &Job::min_workers);
  ints("max_workers", &Job::max_workers);
  reals("duration", &Job::duration);
  reals("submit_time", &Job::submit_time);
  reals("estimated_duration", &Job::estimated_duration);
  {
    auto type = string_column(t, "jobs", "gpu_type", n);
    for (std::size_t i = 0; i < n; ++i) job(i).gpu_type = std::move(type[i]);
  }
  flags("checkpoint", &Job::checkpoint);
  flags("hetero", &Job::hetero);
  ints("reference_workers", &Job::reference_workers);
}

std::vector<Job> jobs_from(const py::dict& t) {
  std::vector<Job> out;
  fill_jobs(
      t, [&out](std::size_t n) { out.resize(n); },
      [&out](std::size_t i) -> Job& { return out[i]; });
  return out;
}

namespace {

// Worker indices are range-checked by validate(); here they only need to be ints.
std::vector<Worker> workers_from(const py::dict& t) {
  const auto job = int_column(t, "workers", "job", std::nullopt, INT_MIN, INT_MAX);
  const std::size_t n = job.size();
  const auto server = int_column(t, "workers", "server", n, INT_MIN, INT_MAX);
  const auto flexible = bool_column(t, "workers", "flexible", n);
  std::vector<Worker> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {as_int(job[i]), as_int(server[i]), flexible[i]};
  return out;
}

// The values of attribute `name` of every record, as a new list.
py::list attribute_values(const py::list& records, const py::str& name) {
  const auto n = static_cast<Py_ssize_t>(records.size());
  py::list values(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* value = PyObject_GetAttr(PyList_GET_ITEM(records.ptr(), i), name.ptr());
    if (value == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(values.ptr(), i, value);  // steals the reference
  }
  return values;
}

// `values` as an array of `kind` ('i': int64, 'f': float64, 'b': bool) when every
// value is exactly of that kind (an int within 64 bits; a float or an int; a
// bool), else None: the caller then checks them one by one and names the bad one.
py::object typed_array(const py::list& values, char kind) {
  const auto n = static_cast<Py_ssize_t>(values.size());
  const auto get = [&](Py_ssize_t i) { return PyList_GET_ITEM(values.ptr(), i); };
  if (kind == 'i') {
    py::array_t<std::int64_t> out(n);
    auto* data = out.mutable_data();
    for (Py_ssize_t i = 0; i < n; ++i) {
      int overflow = 0;
      if (!PyLong_CheckExact(get(i))) return py::none();
      data[i] = PyLong_AsLongLongAndOverflow(get(i), &overflow);
      if (overflow != 0) return py::none();
    }
    return std::move(out);
  }
  if (kind == 'f') {
    py::array_t<double> out(n);
    auto* data = out.mutable_data();
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* v = get(i);
      if (PyFloat_CheckExact(v)) {
        data[i] = PyFloat_AS_DOUBLE(v);
      } else if (PyLong_CheckExact(v)) {
        data[i] = PyLong_AsDouble(v);
        if (data[i] == -1.0 && PyErr_Occurred()) {
          PyErr_Clear();
          return py::none();
        }
      } else {
        return py::none();
      }
    }
    return std::move(out);
  }
  if (kind == 'b') {
    py::array_t<bool> out(n);
    auto* data = out.mutable_data();
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (get(i) != Py_True && get(i) != Py_False) return py::none();
      data[i] = get(i) == Py_True;
    }
    return std::move(out);
  }
  throw py::value_error(fmt::format("record_columns: unknown kind '{}'", kind));
}

}  // namespace

void register_model(py::module_& m) {
  m.def(
      "record_columns",
      [](const py::list& records, const std::vector<std::string>& names,
         const std::string& kinds) {
        if (kinds.size() != names.size())
          throw py::value_error("record_columns: one kind per name");
        py::list out;
        for (std::size_t k = 0; k < names.size(); ++k) {
          py::list values = attribute_values(records, py::str(names[k]));
          py::object typed =
              kinds[k] == 'O' ? py::none() : typed_array(values, kinds[k]);
          out.append(py::make_tuple(values, typed));
        }
        return out;
      },
      py::arg("records"), py::arg("names"), py::arg("kinds"),
      "Fields `names` of a list of records in one pass each: per field, (the list "
      "of its values, their array of kind 'i' int64, 'f' float64 or 'b' bool, or "
      "None when a value is not exactly of that kind or the kind is 'O').");
  // The size limits every record check uses (aryl/model.hpp), for Python to check
  // counts before it builds records.
  m.attr("max_server_gpus") = max_server_gpus;
  m.attr("max_job_gpus") = max_job_gpus;
  m.attr("max_cluster_gpus") = max_cluster_gpus;
  py::class_<ClusterState>(
      m, "ClusterState", "Servers, jobs and worker placement, as the kernels see them.")
      .def(py::init([](const py::dict& servers, const py::dict& jobs,
                       const py::dict& workers) {
             ClusterState state{servers_from(servers), jobs_from(jobs),
                                workers_from(workers)};
             validate(state);  // once, here: the kernels take a valid state
             return state;
           }),
           py::arg("servers"), py::arg("jobs"), py::arg("workers"),
           "Build and validate from three dicts of equal-length columns (ids and GPU "
           "types as strings, pool as 0 = training / 1 = inference, workers by index). "
           "Raises ValueError naming the first bad record or column, TypeError for a "
           "column of the wrong type.")
      .def_property_readonly(
          "n_servers", [](const py::object& s) { return state_arg(s).servers.size(); })
      .def_property_readonly(
          "n_jobs", [](const py::object& s) { return state_arg(s).jobs.size(); })
      .def_property_readonly(
          "n_workers", [](const py::object& s) { return state_arg(s).workers.size(); });
  m.def(
      "validate", [](const py::object& state) { validate(state_arg(state)); },
      py::arg("state"), "Raise ValueError naming the first bad record of the state.");
}

}  // namespace aryl::bindings
