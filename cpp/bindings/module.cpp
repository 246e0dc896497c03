#include "prelude.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "aryl's compiled core: the model, reclaim, scheduling, simulation, goodput and "
      "Tiresias kernels.";
  aryl::bindings::register_model(m);
  aryl::bindings::register_reclaim(m);
  // Classes before the functions that take them: a signature names a type only if it
  // is registered by then (else help() and the stubs show `aryl::Application`).
  aryl::bindings::register_goodput(m);
  aryl::bindings::register_sim(m);
  aryl::bindings::register_schedule(m);
  aryl::bindings::register_tiresias(m);
  aryl::bindings::register_pollux(m);
}
