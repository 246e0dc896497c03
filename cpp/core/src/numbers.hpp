// Checks on numbers shared by the core's readers of tables.
#pragma once

#include <cmath>

namespace aryl::detail {

inline bool finite_positive(double x) { return std::isfinite(x) && x > 0.0; }

}  // namespace aryl::detail
