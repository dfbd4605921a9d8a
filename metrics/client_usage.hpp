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

#include <cstddef>
#include <optional>
#include <span>
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
  // How near saturation the client came: the larger of its busiest worker thread's share of the run
  // and its share of every core the machine has. The verdict is this against kSaturated, so the
  // most loaded of several runs (most_loaded below) is one that may have been the bottleneck
  // whenever any of them may.
  double load() const {
    double machine = cores > 0 ? cores_used() / cores : 0;
    return busiest_thread_share() > machine ? busiest_thread_share() : machine;
  }
  bool may_be_bottleneck() const { return load() >= kSaturated; }
  // "used 38 % of one core (busiest of 2 worker threads 30 %): not the bottleneck"
  std::string summary() const;
  friend bool operator==(const ClientUsage&, const ClientUsage&) = default;
};
BOOST_DESCRIBE_STRUCT(ClientUsage, (), (cpu_s, wall_s, busiest_thread_cpu_s, worker_threads, cores))

// One run's client as every report shows it: its figures (absent in a trace written before replay
// measured them) and, for an open-loop run with sent requests, its schedule slip's p99, the same
// pressure seen from the schedule's side (metrics/stats.hpp's client_of fills it from a run's Stats).
struct RunClient {
  std::optional<ClientUsage> usage;
  std::optional<double> slip_p99_ms;
  bool may_be_bottleneck() const { return usage && usage->may_be_bottleneck(); }
  // summary() and "; schedule slip p99 1.25 ms" where known, or kNotRecorded. Never a zero invented
  // for a run that did not measure.
  std::string line() const;
  static constexpr const char* kNotRecorded = "client use not recorded";
};

// Of several runs, the one whose client was most loaded (ClientUsage::load); nullopt when no run
// recorded its client.
std::optional<std::size_t> most_loaded(std::span<const RunClient> runs);

// A run of a sweep or a study, placed: the group it belongs to ("c=64", "c16 warm") and which run
// of the group it is ("repeat 2", "baseline").
struct PlacedClient {
  std::string group, run;
  RunClient client;
};
// Several runs' clients as one line:
//   "client: busiest run (c=32, repeat 2) used 62 % of one core (...): not the bottleneck"
// then, where any run may have been the bottleneck, "; may have been the bottleneck at c=64: its
// figures there are the client's limit as much as the server's" (every such group, in order);
// "; client use not recorded in 2 of 6 runs" when some runs lack figures; kNotRecorded when all do.
std::string overall_line(std::span<const PlacedClient> runs);

// The figures rounded to microseconds (what getrusage resolves), as a header keeps them.
ClientUsage rounded(const ClientUsage& usage);

}  // namespace retrace::metrics
