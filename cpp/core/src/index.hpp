// The core keeps indices as int (they cross to Python as such) and subscripts
// std::vector with size_t: one checked-by-eye conversion, used everywhere.
#pragma once

#include <cstddef>

namespace aryl::detail {

template <typename T>
constexpr std::size_t at(T i) {
  return static_cast<std::size_t>(i);
}

}  // namespace aryl::detail
