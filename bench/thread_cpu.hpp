// The calling thread's CPU time in seconds (user + system), what the benches here measure a pass
// by: on a machine shared with other work, a thread's own CPU is steadier than the wall clock.
#pragma once

#include <time.h>

namespace retrace::bench {

inline double thread_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace retrace::bench
