# ARYL_FETCH_DEPS=ON: the four header-only libraries from their upstream release
# archives, pinned, so a wheel builds on any platform without -dev packages. Only
# the headers are used: each gets an interface target named as its own CMake
# package names it, and no upstream CMakeLists.txt is run (SOURCE_SUBDIR points at
# a folder that does not exist). FETCHCONTENT_SOURCE_DIR_<NAME> overrides an
# archive with a local copy (offline builds).
include(FetchContent)

set(_aryl_fetch_args DOWNLOAD_EXTRACT_TIMESTAMP ON SOURCE_SUBDIR aryl-no-cmake)
FetchContent_Declare(eigen3
  URL https://gitlab.com/libeigen/eigen/-/archive/3.4.0/eigen-3.4.0.tar.gz
  ${_aryl_fetch_args})
FetchContent_Declare(xtl
  URL https://github.com/xtensor-stack/xtl/archive/refs/tags/0.7.7.tar.gz
  ${_aryl_fetch_args})
FetchContent_Declare(xtensor
  URL https://github.com/xtensor-stack/xtensor/archive/refs/tags/0.24.7.tar.gz
  ${_aryl_fetch_args})
FetchContent_Declare(fmt
  URL https://github.com/fmtlib/fmt/archive/refs/tags/10.2.1.tar.gz
  ${_aryl_fetch_args})
FetchContent_MakeAvailable(eigen3 xtl xtensor fmt)

add_library(Eigen3::Eigen INTERFACE IMPORTED GLOBAL)
target_include_directories(Eigen3::Eigen SYSTEM INTERFACE ${eigen3_SOURCE_DIR})
add_library(xtl INTERFACE IMPORTED GLOBAL)
target_include_directories(xtl SYSTEM INTERFACE ${xtl_SOURCE_DIR}/include)
add_library(xtensor INTERFACE IMPORTED GLOBAL)
target_include_directories(xtensor SYSTEM INTERFACE ${xtensor_SOURCE_DIR}/include)
target_link_libraries(xtensor INTERFACE xtl)
add_library(fmt::fmt-header-only INTERFACE IMPORTED GLOBAL)
target_include_directories(fmt::fmt-header-only SYSTEM
  INTERFACE ${fmt_SOURCE_DIR}/include)
target_compile_definitions(fmt::fmt-header-only INTERFACE FMT_HEADER_ONLY=1)
