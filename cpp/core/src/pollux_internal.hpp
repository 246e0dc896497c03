// What the Pollux search (pollux.cpp) and its reference (pollux_reference.cpp)
// share: the input checks and the jobs' search order.
#pragma once

#include <vector>

#include "aryl/pollux.hpp"

namespace aryl::pollux_detail {

// std::invalid_argument for a node with negative GPUs.
void check_nodes(const std::vector<int>& node_gpus);

// std::invalid_argument for a bad job (see PolluxPolicy::optimize).
void check_jobs(const std::vector<PolluxJob>& jobs, const std::vector<int>& node_gpus);

// Search order: smallest minimum first (adaptdl's: jobs that want no guarantee
// get the contested GPUs), then least attained service, earliest submitted, key.
std::vector<int> priority_order(const std::vector<PolluxJob>& jobs);

}  // namespace aryl::pollux_detail
