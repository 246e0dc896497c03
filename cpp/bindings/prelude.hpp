// Included first by every bindings file: pybind11 headers, the `py` alias, the
// column readers, and the register_* declarations.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace aryl::bindings {

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

void register_model(py::module_& m);
void register_reclaim(py::module_& m);
void register_schedule(py::module_& m);

}  // namespace aryl::bindings
