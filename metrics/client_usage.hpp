// The client's own headroom: how much CPU replay itself used during the measured run, so that
// every report can say whether the client, rather than the server, could have set the pace.
//
// A load generator that runs out of CPU sends late and reads late: throughput falls and latency
// rises, and both get blamed on the server. wrk2 and MLCommons' load generator report their own
// stall for that reason. Replay measures two things over the measured phase (warmup excluded):
// - the process's CPU (user + system, every thread: workers, the writer, the feed) against the
//   wall time, as a share of one core; and
// - each worker thread's own CPU (CLOCK_THREAD_CPUTIME_ID): a worker is one io_context on one
//   thread, so a worker busy nearly all the run is the client's bottleneck even when the process
//   as a whole uses little of the machine.
// The verdict: the client may have been the bottleneck when its busiest worker thread was busy
// for at least kSaturated of the run, or the process used at least kSaturated of every core the
// machine has (the server's share of a shared machine is then starved too). In open loop the
// schedule slip (actual − intended send) says the same from the other side and is shown beside it.
//
// The figures travel in the run's header settings, under "client", so that `stats`, `report` and
// `sweep` of a finished trace say the same as the replay that wrote it (metrics/run_settings.hpp).
// What is measured lives in metrics/ so that those readers need not know the replay engine; the
// meter that measures it is replay/client_usage.hpp's.
#pragma once

#include <string>

#include <boost/describe/class.hpp>

namespace retrace::metrics {

struct ClientUsage {
  double cpu_s = 0;                 // the process, user + system, over the measured phase
  double wall_s = 0;                // the measured phase's wall time
  double busiest_thread_cpu_s = 0;  // the worker thread that used the most CPU
  unsigned worker_threads = 0;
  unsigned cores = 0;  // hardware threads of the machine the client ran on

  static constexpr double kSaturated = 0.8;

  double cores_used() const { return wall_s > 0 ? cpu_s / wall_s : 0; }
  double busiest_thread_share() const { return wall_s > 0 ? busiest_thread_cpu_s / wall_s : 0; }
  bool may_be_bottleneck() const {
    return busiest_thread_share() >= kSaturated || (cores > 0 && cores_used() >= kSaturated * cores);
  }
  // "used 38 % of one core (busiest of 2 worker threads 30 %): not the bottleneck"
  std::string summary() const;
  friend bool operator==(const ClientUsage&, const ClientUsage&) = default;
};
BOOST_DESCRIBE_STRUCT(ClientUsage, (), (cpu_s, wall_s, busiest_thread_cpu_s, worker_threads, cores))

// The figures rounded to microseconds (what getrusage resolves), as a header keeps them.
ClientUsage rounded(const ClientUsage& usage);

}  // namespace retrace::metrics
