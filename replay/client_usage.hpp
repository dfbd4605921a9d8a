// The client's own CPU over a run, measured for metrics/client_usage.hpp (which says why and
// what the verdict is).
#pragma once

#include "metrics/client_usage.hpp"

namespace retrace::replay {

using metrics::ClientUsage;

// Measures the process's CPU and wall time from construction to usage().
class ClientMeter {
 public:
  ClientMeter();
  ClientUsage usage(double busiest_thread_cpu_s, unsigned worker_threads) const;

 private:
  double cpu_start_s_;
  double wall_start_s_;
};

// CPU time used so far by the calling thread, in seconds.
double thread_cpu_seconds();

}  // namespace retrace::replay
