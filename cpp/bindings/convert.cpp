// The checked readers of prelude.hpp: shapes and types of every argument of
// aryl._core, with errors that name the argument.
#include <fmt/format.h>

#include "prelude.hpp"

namespace aryl::bindings {
namespace {

[[noreturn]] void type_error(const std::string& message) {
  throw py::type_error(message);
}
[[noreturn]] void value_error(const std::string& message) {
  throw py::value_error(message);
}

std::string shown(py::handle value) {
  try {
    std::string text = py::repr(value).cast<std::string>();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
  } catch (py::error_already_set& error) {
    rethrow_unless_conversion_error(error);
    return "<unprintable>";
  } catch (const py::cast_error&) {
    return "<unprintable>";
  }
}

std::string column_name(const char* what, const char* key) {
  return fmt::format("{}: column '{}'", what, key);
}

// The column as a 1-d NumPy array of the expected length.
py::array column_array(py::handle raw, const std::string& name,
                       std::optional<std::size_t> length) {
  if (PyUnicode_Check(raw.ptr()) || PyBytes_Check(raw.ptr()))
    type_error(fmt::format("{} must be a sequence of values, got a string", name));
  // numpy.asarray, kept for the process (never freed: it outlives the interpreter)
  static const auto* asarray =
      new py::object(py::module_::import("numpy").attr("asarray"));
  py::array array;
  try {
    array = (*asarray)(raw);
  } catch (py::error_already_set& error) {
    rethrow_unless_conversion_error(error);
    type_error(fmt::format("{} must be a sequence of values ({})", name, error.what()));
  }
  if (array.ndim() != 1)
    value_error(fmt::format("{} must be one-dimensional, got {} dimensions", name,
                            array.ndim()));
  const auto n = static_cast<std::size_t>(array.shape(0));
  if (length && n != *length)
    value_error(fmt::format("{} has {} values, expected {} (one per record)", name, n,
                            *length));
  return array;
}

char kind(const py::array& array) { return array.dtype().kind(); }

template <typename T>
std::vector<T> as_vector(const py::array& array, const char* dtype) {
  if (py::isinstance<py::array_t<T, py::array::c_style>>(array)) {  // as it is
    const T* data = static_cast<const T*>(array.data());
    return std::vector<T>(data, data + array.size());
  }
  auto converted =
      py::array_t<T, py::array::c_style>::ensure(array.attr("astype")(dtype));
  if (!converted) throw py::error_already_set();
  const T* data = converted.data();
  return std::vector<T>(data, data + converted.size());
}

}  // namespace

void rethrow_unless_conversion_error(py::error_already_set& error) {
  if (!error.matches(PyExc_ValueError) && !error.matches(PyExc_TypeError) &&
      !error.matches(PyExc_OverflowError))
    throw error;  // KeyboardInterrupt, MemoryError, ...: not ours to rename
}

py::handle item(const py::dict& table, const char* what, const char* key) {
  if (!table.contains(key)) value_error(fmt::format("{}: missing '{}'", what, key));
  return table[key];
}

namespace {

std::vector<double> real_values(py::handle raw, const std::string& name,
                                std::optional<std::size_t> length) {
  const py::array array = column_array(raw, name, length);
  if (array.size() == 0) return {};
  const char k = kind(array);
  if (k == 'O') {
    std::vector<double> out;
    for (py::handle value : array.attr("tolist")())
      out.push_back(real_arg(value, name + " value"));
    return out;
  }
  if (k != 'b' && k != 'i' && k != 'u' && k != 'f')
    type_error(fmt::format("{} must hold real numbers, got dtype {}", name,
                           py::str(array.dtype()).cast<std::string>()));
  return as_vector<double>(array, "float64");
}

}  // namespace

std::vector<long long> int_column(const py::dict& table, const char* what,
                                  const char* key, std::optional<std::size_t> length,
                                  long long lo, long long hi) {
  const std::string name = column_name(what, key);
  const py::array array = column_array(item(table, what, key), name, length);
  std::vector<long long> out;
  if (array.size() == 0) return out;
  const char k = kind(array);
  if (k == 'O') {
    for (py::handle value : array.attr("tolist")())
      out.push_back(int_arg(value, name + " value", lo, hi));
    return out;
  }
  if (k != 'b' && k != 'i' && k != 'u')
    type_error(fmt::format("{} must hold integers, got dtype {}", name,
                           py::str(array.dtype()).cast<std::string>()));
  if (k == 'u' && array.attr("max")().cast<unsigned long long>() >
                      static_cast<unsigned long long>(hi))
    value_error(fmt::format("{}: values must be in [{}, {}]", name, lo, hi));
  out = as_vector<long long>(array, "int64");
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < lo || out[i] > hi)
      value_error(fmt::format("{}, row {}: must be in [{}, {}], got {}", name, i, lo,
                              hi, out[i]));
  return out;
}

std::vector<double> real_column(const py::dict& table, const char* what,
                                const char* key, std::optional<std::size_t> length) {
  return real_values(item(table, what, key), column_name(what, key), length);
}

std::vector<bool> bool_column(const py::dict& table, const char* what, const char* key,
                              std::optional<std::size_t> length) {
  const std::vector<long long> values = int_column(table, what, key, length, 0, 1);
  return {values.begin(), values.end()};
}

std::vector<std::string> string_column(const py::dict& table, const char* what,
                                       const char* key,
                                       std::optional<std::size_t> length) {
  const py::handle raw = item(table, what, key);
  const std::string name = column_name(what, key);
  if (PyUnicode_Check(raw.ptr()) || !PySequence_Check(raw.ptr()))
    type_error(fmt::format("{} must be a list of str, got {}", name, shown(raw)));
  const py::sequence values = py::reinterpret_borrow<py::sequence>(raw);
  const std::size_t n = values.size();
  if (length && n != *length)
    value_error(fmt::format("{} has {} values, expected {} (one per record)", name, n,
                            *length));
  std::vector<std::string> out;
  out.reserve(n);
  PyObject* items = PySequence_Fast(raw.ptr(), "not a sequence");
  if (items == nullptr) throw py::error_already_set();
  const py::object owner = py::reinterpret_steal<py::object>(items);
  for (std::size_t i = 0; i < n; ++i) {
    PyObject* value = PySequence_Fast_GET_ITEM(items, static_cast<Py_ssize_t>(i));
    Py_ssize_t size = 0;
    // The common case without building the row's name; str_arg explains the others.
    const char* data =
        PyUnicode_Check(value) ? PyUnicode_AsUTF8AndSize(value, &size) : nullptr;
    if (data != nullptr) {
      out.emplace_back(data, static_cast<std::size_t>(size));
    } else {
      PyErr_Clear();
      out.push_back(str_arg(value, fmt::format("{}, row {}", name, i)));
    }
  }
  return out;
}

std::vector<double> real_sequence(py::handle values, const std::string& what) {
  return real_values(values, what, std::nullopt);
}

namespace {

// `value` as a Python int (anything with __index__ but bool), or TypeError.
py::object python_int(py::handle value, const std::string& what) {
  if (PyBool_Check(value.ptr()))
    type_error(fmt::format("{} must be an integer, got {}", what, shown(value)));
  PyObject* index = PyNumber_Index(value.ptr());
  if (index == nullptr) {
    py::error_already_set error;
    rethrow_unless_conversion_error(error);
    type_error(fmt::format("{} must be an integer, got {}", what, shown(value)));
  }
  return py::reinterpret_steal<py::object>(index);
}

}  // namespace

long long int_arg(py::handle value, const std::string& what, long long lo,
                  long long hi) {
  const py::object number = python_int(value, what);
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
  if (overflow != 0 || v < lo || v > hi)
    value_error(
        fmt::format("{} must be in [{}, {}], got {}", what, lo, hi, shown(value)));
  return v;
}

std::uint64_t seed_arg(py::handle value, const std::string& what) {
  const py::object number = python_int(value, what);
  const unsigned long long v = PyLong_AsUnsignedLongLong(number.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    value_error(fmt::format("{} must be in [0, 2**64), got {}", what, shown(value)));
  }
  return v;
}

double real_arg(py::handle value, const std::string& what) {
  // A float is a real number: the common case, without the numbers.Real look-up.
  if (PyFloat_CheckExact(value.ptr())) return PyFloat_AS_DOUBLE(value.ptr());
  // Leaked on purpose: a static py::object would be released after the interpreter.
  static const py::handle real_type =
      py::object(py::module_::import("numbers").attr("Real")).release();
  if (PyBool_Check(value.ptr()) || !py::isinstance(value, real_type))
    type_error(fmt::format("{} must be a real number, got {}", what, shown(value)));
  const double v = PyFloat_AsDouble(value.ptr());
  if (v == -1.0 && PyErr_Occurred()) {
    py::error_already_set error;
    rethrow_unless_conversion_error(error);
    value_error(
        fmt::format("{} is out of the range of a double, got {}", what, shown(value)));
  }
  return v;
}

bool bool_arg(py::handle value, const std::string& what) {
  if (PyBool_Check(value.ptr())) return value.ptr() == Py_True;
  static const py::handle numpy_bool =
      py::object(py::module_::import("numpy").attr("bool_")).release();
  if (py::isinstance(value, numpy_bool)) return value.cast<bool>();
  type_error(fmt::format("{} must be True or False, got {}", what, shown(value)));
}

const ClusterState& state_arg(py::handle value) {
  if (!py::isinstance<ClusterState>(value))
    type_error(
        fmt::format("state must be an aryl._core.ClusterState, got {}", shown(value)));
  // ClusterState.__new__(ClusterState) makes an instance whose C++ object was never
  // constructed (pybind11 would hand us raw memory): refuse it.
  auto* instance = reinterpret_cast<py::detail::instance*>(value.ptr());
  if (!instance->get_value_and_holder().holder_constructed())
    type_error(
        "this ClusterState was never initialised: build it with "
        "ClusterState(servers, jobs, workers)");
  return value.cast<const ClusterState&>();
}

std::string str_arg(py::handle value, const std::string& what) {
  if (!PyUnicode_Check(value.ptr()))
    type_error(fmt::format("{} must be a str, got {}", what, shown(value)));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (data == nullptr) {
    py::error_already_set error;
    rethrow_unless_conversion_error(error);
    value_error(fmt::format("{} is not encodable as UTF-8: {}", what, shown(value)));
  }
  return {data, static_cast<std::size_t>(size)};
}

}  // namespace aryl::bindings
