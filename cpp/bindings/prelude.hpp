// Included first by every bindings file: pybind11 headers, the `py` alias, the
// column readers, and the register_* declarations.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "aryl/model.hpp"

namespace py = pybind11;

namespace aryl::bindings {

using aryl::Job;
using aryl::Server;

// A numeric column of a dict of columns (any sequence or array NumPy can cast).
template <typename T>
std::vector<T> column(const py::dict& table, const char* key) {
  auto array = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(table[key]);
  if (!array || array.ndim() != 1)
    throw py::value_error(std::string("column '") + key + "' must be one-dimensional");
  const T* data = array.data();
  return std::vector<T>(data, data + array.shape(0));  // not {}: vector<bool> would take the pointers as values
}

inline std::vector<std::string> string_column(const py::dict& table, const char* key) {
  return table[key].cast<std::vector<std::string>>();
}

// A one-dimensional numeric argument (any sequence or array NumPy can cast):
// TypeError when it is not numeric, ValueError when it is not 1-d, both naming it.
inline std::vector<double> double_arg(const py::handle& value, const char* name) {
  py::array_t<double, py::array::c_style | py::array::forcecast> array;
  try {
    array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
  } catch (const py::error_already_set&) {
    array = {};
  }
  if (!array) throw py::type_error(std::string(name) + " must be a sequence of numbers");
  if (array.ndim() != 1) throw py::value_error(std::string(name) + " must be one-dimensional");
  const double* data = array.data();
  return std::vector<double>(data, data + array.shape(0));
}

// As double_arg, and every value must be a whole number (ValueError naming it).
std::vector<int> int_arg(const py::handle& value, const char* name);

// A list of strings (TypeError naming it otherwise).
std::vector<std::string> string_arg(const py::handle& value, const char* name);

// Columns of servers and jobs (see register_model.cpp) as the core's records.
std::vector<Server> servers_from(const py::dict& table);
std::vector<Job> jobs_from(const py::dict& table);

// A 1-d xtensor moved to the heap and exposed to NumPy without a copy; the
// array owns it.
template <typename T>
py::array_t<T> to_numpy(xt::xtensor<T, 1>&& values) {
  auto* owned = new xt::xtensor<T, 1>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<xt::xtensor<T, 1>*>(p); });
  return py::array_t<T>({owned->size()}, {sizeof(T)}, owned->data(), owner);
}

void register_model(py::module_& m);
void register_reclaim(py::module_& m);
void register_sim(py::module_& m);
void register_schedule(py::module_& m);
void register_goodput(py::module_& m);
void register_tiresias(py::module_& m);

}  // namespace aryl::bindings
