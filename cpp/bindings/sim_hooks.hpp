// A Python policy's hooks (aryl.engine.hooks) as the simulator's sim::Hooks.
#pragma once

#include "prelude.hpp"

#include "aryl/sim/simulator.hpp"

namespace aryl::bindings {

// `hooks`: None, or an object whose attributes `allocate`, `reclaim` and `admit`
// are each None or a callable (aryl.engine.hooks.CoreHooks documents their
// arguments and answers). Each call takes the GIL; an exception it raises ends
// the run and reaches the caller unchanged.
sim::Hooks hooks_from(const py::object& hooks);

}  // namespace aryl::bindings
