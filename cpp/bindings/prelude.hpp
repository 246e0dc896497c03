// Included first by every bindings file: pybind11 headers, the `py` alias, the
// checked readers of columns and scalars, and the register_* declarations.
//
// Every entry point of aryl._core reads its arguments through these readers, so
// that a wrong shape or type is a ValueError or TypeError naming the argument
// (never a pybind11 cast error, never a read past the end of a short column),
// and an exception raised by Python while converting (KeyboardInterrupt, say)
// passes through unchanged.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "aryl/model.hpp"

namespace py = pybind11;

namespace aryl::bindings {

using aryl::Job;
using aryl::Server;

// Rethrows `error` unless it is a ValueError, TypeError or OverflowError, which
// the caller replaces by its own message.
void rethrow_unless_conversion_error(py::error_already_set& error);

// One column of a dict of columns, checked against the expected length (when
// given): numbers as a 1-d array of integers (within [lo, hi]), reals or
// booleans, strings as a sequence of str. Errors name `what` (the argument,
// e.g. "servers") and the column.
std::vector<long long> int_column(const py::dict& table, const char* what,
                                  const char* key, std::optional<std::size_t> length,
                                  long long lo, long long hi);
std::vector<double> real_column(const py::dict& table, const char* what,
                                const char* key, std::optional<std::size_t> length);
std::vector<bool> bool_column(const py::dict& table, const char* what, const char* key,
                              std::optional<std::size_t> length);
std::vector<std::string> string_column(const py::dict& table, const char* what,
                                       const char* key,
                                       std::optional<std::size_t> length);

// Any sequence of real numbers (a list, a 1-d array), named `what` in errors.
std::vector<double> real_sequence(py::handle values, const std::string& what);

// Scalars: a Python int (not bool) within [lo, hi]; a real number; a bool; a str.
long long int_arg(py::handle value, const std::string& what, long long lo,
                  long long hi);
std::uint64_t seed_arg(py::handle value, const std::string& what);
double real_arg(py::handle value, const std::string& what);
bool bool_arg(py::handle value, const std::string& what);
std::string str_arg(py::handle value, const std::string& what);
// A constructed ClusterState (TypeError for anything else, or for an instance that
// __new__ made without __init__).
const ClusterState& state_arg(py::handle value);

// A required item of a dict argument ("config"), or ValueError naming it.
py::handle item(const py::dict& table, const char* what, const char* key);

// A one-dimensional numeric argument (any sequence or array NumPy can cast):
// TypeError when it is not numeric, ValueError when it is not 1-d, both naming it.
inline std::vector<double> double_arg(const py::handle& value, const char* name) {
  py::array_t<double, py::array::c_style | py::array::forcecast> array;
  try {
    array =
        py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
  } catch (const py::error_already_set&) {
    array = {};
  }
  if (!array)
    throw py::type_error(std::string(name) + " must be a sequence of numbers");
  if (array.ndim() != 1)
    throw py::value_error(std::string(name) + " must be one-dimensional");
  const double* data = array.data();
  return std::vector<double>(data, data + array.shape(0));
}

// As double_arg, and every value must be a whole number (ValueError naming it).
std::vector<int> int_arg(const py::handle& value, const char* name);

// A list of strings (TypeError naming it otherwise).
std::vector<std::string> string_arg(const py::handle& value, const char* name);

// Columns of servers and jobs (see register_model.cpp) as the core's records.
// Per-job throughput curves: none at all, or one (possibly empty) per job.
std::vector<std::vector<double>> curves_from(const py::handle& curves,
                                             std::size_t jobs);

std::vector<Server> servers_from(const py::dict& table);
std::vector<Job> jobs_from(const py::dict& table);
// The jobs' columns into records the caller keeps: resize(n), then job(i) for each.
void fill_jobs(const py::dict& table, const std::function<void(std::size_t)>& resize,
               const std::function<Job&(std::size_t)>& job);

// A 1-d xtensor moved to the heap and exposed to NumPy without a copy; the
// array owns it.
template <typename T>
py::array_t<T> to_numpy(xt::xtensor<T, 1>&& values) {
  auto* owned = new xt::xtensor<T, 1>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<xt::xtensor<T, 1>*>(p); });
  return py::array_t<T>({owned->size()}, {sizeof(T)}, owned->data(), owner);
}

// ... and a vector (the simulator's history columns).
template <typename T>
py::array_t<T> to_numpy(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({owned->size()}, {sizeof(T)}, owned->data(), owner);
}

// `value(i)` for i < n as a 1-d NumPy array of T (one allocation, no Python ints;
// bool included: one byte each).
template <typename T, typename F>
py::array_t<T> column_of(std::size_t n, F&& value) {
  py::array_t<T> out(static_cast<py::ssize_t>(n));
  T* data = out.mutable_data();
  for (std::size_t i = 0; i < n; ++i) data[i] = value(i);
  return out;
}

void register_model(py::module_& m);
void register_reclaim(py::module_& m);
void register_sim(py::module_& m);
void register_schedule(py::module_& m);
void register_goodput(py::module_& m);
void register_tiresias(py::module_& m);
void register_pollux(py::module_& m);

}  // namespace aryl::bindings
