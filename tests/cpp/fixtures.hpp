// Small cluster builders shared by the C++ tests.
#pragma once

#include <string>

#include "aryl/model.hpp"

namespace aryl::test {

inline int add_server(ClusterState& s, const std::string& id, bool on_loan = true,
                      int gpus = 8) {
  s.servers.push_back({id, on_loan ? Pool::inference : Pool::training, gpus,
                       on_loan ? "T4" : "V100", on_loan});
  return static_cast<int>(s.servers.size()) - 1;
}

inline int add_job(ClusterState& s, const std::string& id, int gpus_per_worker,
                   int min_workers, int max_workers) {
  Job j;
  j.id = id;
  j.gpus_per_worker = gpus_per_worker;
  j.min_workers = min_workers;
  j.max_workers = max_workers;
  j.duration = j.estimated_duration = 100.0;
  s.jobs.push_back(j);
  return static_cast<int>(s.jobs.size()) - 1;
}

inline void place(ClusterState& s, int job, int server, int workers) {
  for (int i = 0; i < workers; ++i) s.workers.push_back({job, server, false});
}

// The paper's reclaiming example (fig:reclaim_example, table:server_cost): six
// 8-GPU on-loan servers; job a spans servers 1-2 evenly, b fills server 3, c has
// 80% of its GPUs on server 4 and 20% on 5, d 20% on 5 and 80% on 6. All inelastic.
inline ClusterState paper_reclaim_example() {
  ClusterState s;
  for (int i = 1; i <= 6; ++i) add_server(s, std::to_string(i));
  const int a = add_job(s, "a", 8, 2, 2);
  const int b = add_job(s, "b", 8, 1, 1);
  const int c = add_job(s, "c", 2, 5, 5);
  const int d = add_job(s, "d", 2, 5, 5);
  place(s, a, 0, 1);
  place(s, a, 1, 1);
  place(s, b, 2, 1);
  place(s, c, 3, 4);
  place(s, c, 4, 1);
  place(s, d, 4, 1);
  place(s, d, 5, 4);
  return s;
}

}  // namespace aryl::test
