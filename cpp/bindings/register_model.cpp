#include "prelude.hpp"

#include <climits>
#include <functional>
#include <string_view>
#include <vector>

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

// Fields `names` of every record, record-major (cell i * k + f: a new reference).
// A record's instance dict is read once (a dataclass keeps its fields there):
// walked in order when it holds exactly `names` in that order (a dataclass's
// __init__ sets its fields so), else its fields looked up there one by one, which
// are each several times faster than one attribute lookup each; a record without a
// dict, or without the field in it, falls back to getattr.
class Cells {
 public:
  Cells(const py::list& records, const std::vector<py::str>& names)
      : n_(static_cast<Py_ssize_t>(records.size())), k_(names.size()) {
    cells_.reserve(static_cast<std::size_t>(n_) * k_);
    for (Py_ssize_t i = 0; i < n_; ++i) {
      PyObject* record = PyList_GET_ITEM(records.ptr(), i);
      PyObject* dict = PyObject_GenericGetDict(record, nullptr);
      if (dict == nullptr) PyErr_Clear();
      if (dict != nullptr && in_order(dict, names)) {
        Py_DECREF(dict);
        continue;
      }
      for (const auto& name : names) {
        PyObject* value = dict ? PyDict_GetItemWithError(dict, name.ptr()) : nullptr;
        if (value != nullptr) {
          Py_INCREF(value);
        } else {
          if (PyErr_Occurred()) {
            Py_XDECREF(dict);
            throw py::error_already_set();
          }
          value = PyObject_GetAttr(record, name.ptr());
          if (value == nullptr) {
            Py_XDECREF(dict);
            throw py::error_already_set();
          }
        }
        cells_.push_back(value);
      }
      Py_XDECREF(dict);
    }
  }
  Cells(const Cells&) = delete;
  Cells& operator=(const Cells&) = delete;
  ~Cells() {
    for (PyObject* value : cells_) Py_DECREF(value);
  }
  Py_ssize_t size() const { return n_; }
  PyObject* at(Py_ssize_t i, std::size_t field) const {
    return cells_[static_cast<std::size_t>(i) * k_ + field];
  }

 private:
  // The values of `dict` appended when its keys are exactly `names` (interned, as
  // attribute names are: compared by pointer), in order; false, appending nothing,
  // when they are not.
  bool in_order(PyObject* dict, const std::vector<py::str>& names) {
    if (PyDict_GET_SIZE(dict) != static_cast<Py_ssize_t>(names.size())) return false;
    Py_ssize_t position = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    const std::size_t start = cells_.size();
    for (const auto& name : names) {
      if (!PyDict_Next(dict, &position, &key, &value) || key != name.ptr()) {
        cells_.resize(start);  // borrowed so far: nothing to release
        return false;
      }
      cells_.push_back(value);
    }
    for (std::size_t c = start; c < cells_.size(); ++c) Py_INCREF(cells_[c]);
    return true;
  }

  Py_ssize_t n_;
  std::size_t k_;
  std::vector<PyObject*> cells_;
};

// Field `f` of every record as a 1-d object array; `all_none` says whether every
// value is None.
py::array object_column(const Cells& cells, std::size_t f, bool& all_none) {
  // numpy.empty, kept for the process (never freed: it outlives the interpreter's end)
  static const auto* empty = new py::object(py::module_::import("numpy").attr("empty"));
  py::array out = (*empty)(cells.size(), "O");  // every element None
  auto** data = static_cast<PyObject**>(out.mutable_data());
  all_none = true;
  for (Py_ssize_t i = 0; i < cells.size(); ++i) {
    PyObject* value = cells.at(i, f);
    all_none = all_none && value == Py_None;
    Py_INCREF(value);
    Py_XDECREF(data[i]);
    data[i] = value;
  }
  return out;
}

// One value exactly of `kind` ('i': an int within 64 bits, 'f': a float or an int,
// 'b': a bool) written to `out`; false when it is not.
template <typename T>
bool typed_value(PyObject* v, char kind, T& out) {
  if (kind == 'i') {
    if (!PyLong_CheckExact(v)) return false;
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    out = static_cast<T>(x);
    return overflow == 0;
  }
  if (kind == 'f') {
    if (PyFloat_CheckExact(v)) {
      out = static_cast<T>(PyFloat_AS_DOUBLE(v));
      return true;
    }
    if (!PyLong_CheckExact(v)) return false;
    const double x = PyLong_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out = static_cast<T>(x);
    return true;
  }
  if (v != Py_True && v != Py_False) return false;
  out = static_cast<T>(v == Py_True);
  return true;
}

// Field `f` of every record as an array of element type T when every value is
// exactly of `kind`, else None (the caller then takes the object column).
template <typename T>
py::object typed_column(const Cells& cells, std::size_t f, char kind) {
  py::array_t<T> out(cells.size());
  auto* data = out.mutable_data();
  for (Py_ssize_t i = 0; i < cells.size(); ++i)
    if (!typed_value(cells.at(i, f), kind, data[i])) return py::none();
  return out;
}

py::object typed_column(const Cells& cells, std::size_t f, char kind) {
  switch (kind) {
    case 'i':
      return typed_column<std::int64_t>(cells, f, kind);
    case 'f':
      return typed_column<double>(cells, f, kind);
    case 'b':
      return typed_column<bool>(cells, f, kind);
    case 'O':
      return py::none();
    default:
      throw py::value_error(fmt::format("record_columns: unknown kind '{}'", kind));
  }
}

// Each of `ids` (a 1-d object array or a sequence) looked up in `index` (a dict of
// id -> row), as an int64 array with -1 where an id is not in it or cannot be
// (unhashable): one C loop instead of a Python call per worker.
py::array_t<std::int64_t> id_rows(const py::handle& ids, const py::dict& index) {
  PyObject* items = PySequence_Fast(ids.ptr(), "id_rows: ids must be a sequence");
  if (items == nullptr) throw py::error_already_set();
  const py::object owner = py::reinterpret_steal<py::object>(items);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
  PyObject** values = PySequence_Fast_ITEMS(items);
  py::array_t<std::int64_t> out(n);
  auto* rows = out.mutable_data();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* row = PyDict_GetItemWithError(index.ptr(), values[i]);  // borrowed
    if (row == nullptr) {
      if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
        PyErr_Clear();  // unhashable: not an id of the index
      }
      rows[i] = -1;
      continue;
    }
    rows[i] = PyLong_AsLongLong(row);
    if (rows[i] == -1 && PyErr_Occurred()) throw py::error_already_set();
  }
  return out;
}

}  // namespace

void register_model(py::module_& m) {
  m.def("id_rows", &id_rows, py::arg("ids"), py::arg("index"),
        "Each id's row in `index` (a dict of id -> row) as an int64 array, -1 where "
        "the id is not in it or cannot be (unhashable).");
  m.def(
      "record_columns",
      [](const py::list& records, const std::vector<std::string>& names,
         const std::string& kinds) {
        if (kinds.size() != names.size())
          throw py::value_error("record_columns: one kind per name");
        for (char kind : kinds)
          if (std::string_view("ifbO").find(kind) == std::string_view::npos)
            throw py::value_error(
                fmt::format("record_columns: unknown kind '{}'", kind));
        // interned, as the instances' own keys are: each look-up matches by pointer
        std::vector<py::str> fields;
        for (const std::string& name : names) {
          PyObject* interned = PyUnicode_InternFromString(name.c_str());
          if (interned == nullptr) throw py::error_already_set();
          fields.push_back(py::reinterpret_steal<py::str>(interned));
        }
        const Cells cells(records, fields);
        py::list out;
        for (std::size_t f = 0; f < fields.size(); ++f) {
          py::object typed = typed_column(cells, f, kinds[f]);
          bool all_none = false;
          if (typed.is_none()) typed = object_column(cells, f, all_none);
          out.append(py::make_tuple(typed, all_none));
        }
        return out;
      },
      py::arg("records"), py::arg("names"), py::arg("kinds"),
      "Fields `names` of a list of records in one pass: per field, (its "
      "column, whether every value is None). The column is an array of kind "
      "'i' int64, 'f' float64 or 'b' bool when every value is exactly of that "
      "kind, else (or for kind 'O') a 1-d object array of the values.");
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
