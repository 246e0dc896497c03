// Capacity rules shared by the simulator, the scheduler's front doors and the trace
// tools (exposed as _core.spare_servers and _core.job_rooms): how many inference
// servers a load spares, and how many workers of a job could ever fit.
#pragma once

#include <vector>

#include "aryl/model.hpp"

namespace aryl {

// Inference servers a load spares out of n, with the headroom the inference side
// keeps: n - min(n, ceil(min(1, load x (1 + headroom)) x n - 1e-9)). The 1e-9 only
// absorbs rounding (0.3 x 10).
int spare_servers(double load, int n, double headroom);

// Workers of job j that fit on an empty cluster: on the training servers plus, with
// lendable < 0, the inference servers on loan, else the `lendable` inference servers
// of each GPU type that hold the most. A job that requires a type counts that type
// only; a hetero job sums the types; any other job counts its best type. The rule
// errs towards placeable: a job whose base demand exceeds its room can never start.
int job_room(const std::vector<Server>& servers, const Job& j, int lendable);

// job_room of every job of `state`, lendable[j] per job (empty: -1 for all).
// Jobs of one shape (GPUs per worker, type, hetero, lendable) are counted once.
std::vector<int> job_rooms(const ClusterState& state, const std::vector<int>& lendable);

}  // namespace aryl
