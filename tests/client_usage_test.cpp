// metrics/client_usage and replay/client_usage: the client's headroom, its verdict, and the meter
// (its way through a run's header is tests/run_settings_test.cpp's).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "replay/client_usage.hpp"

using namespace retrace::replay;

namespace {

ClientUsage usage_of(double cpu_s, double wall_s, double busiest_s, unsigned threads, unsigned cores) {
  ClientUsage usage;
  usage.cpu_s = cpu_s;
  usage.wall_s = wall_s;
  usage.busiest_thread_cpu_s = busiest_s;
  usage.worker_threads = threads;
  usage.cores = cores;
  return usage;
}

}  // namespace

TEST_CASE("a client whose busiest worker thread was busy most of the run may have been the bottleneck") {
  auto usage = usage_of(1.9, 2.0, 1.7, 2, 8);
  CHECK(usage.busiest_thread_share() == Approx(0.85));
  CHECK(usage.may_be_bottleneck());
  CHECK(usage.summary().find("may have been the bottleneck") != std::string::npos);
}

TEST_CASE("a client that used most of every core may have been the bottleneck though no thread was saturated") {
  auto usage = usage_of(3.4, 2.0, 0.9, 4, 2);  // the writer and feed threads count too
  CHECK(usage.busiest_thread_share() < ClientUsage::kSaturated);
  CHECK(usage.may_be_bottleneck());
}

TEST_CASE("a client with room on its threads and the machine is not the bottleneck") {
  auto usage = usage_of(0.76, 2.0, 0.6, 2, 2);
  CHECK(usage.cores_used() == Approx(0.38));
  CHECK_FALSE(usage.may_be_bottleneck());
  CHECK(usage.summary() == "used 38 % of one core (busiest of 2 worker threads 30 %): not the bottleneck");
}

TEST_CASE("the meter's process CPU includes what a busy thread of its own used") {
  ClientMeter meter;
  double busy_thread_s = -1;
  std::thread busy([&] {
    volatile double sink = 0;
    while (thread_cpu_seconds() < 0.05) sink = sink + 1;  // burns 50 ms of its own CPU
    busy_thread_s = thread_cpu_seconds();
  });
  busy.join();
  auto usage = meter.usage(busy_thread_s, 1);
  CHECK(busy_thread_s >= 0.05);
  CHECK(usage.cpu_s >= busy_thread_s);
  CHECK(usage.worker_threads == 1);
  CHECK(usage.cores >= 1);
}

TEST_CASE("the most loaded of several runs is the one nearest saturation by either measure") {
  using retrace::metrics::RunClient;
  auto idle = usage_of(0.76, 2.0, 0.6, 2, 2);        // thread 30 %, machine 19 %
  auto busy_thread = usage_of(1.0, 2.0, 1.8, 2, 8);  // thread 90 %: the bottleneck
  auto busy_machine = usage_of(3.4, 2.0, 0.9, 4, 2);  // thread 45 %, machine 85 %: the bottleneck too
  CHECK(busy_thread.load() == Approx(0.9));
  CHECK(busy_machine.load() == Approx(0.85));
  std::vector<RunClient> runs{{idle, {}}, {std::nullopt, {}}, {busy_machine, {}}, {busy_thread, {}}};
  CHECK(retrace::metrics::most_loaded(runs) == std::optional<std::size_t>(3));
  runs.pop_back();
  CHECK(retrace::metrics::most_loaded(runs) == std::optional<std::size_t>(2));
  CHECK(runs[2].may_be_bottleneck());
  CHECK_FALSE(retrace::metrics::most_loaded(std::vector<RunClient>{{std::nullopt, {}}}).has_value());
  CHECK(RunClient{}.line() == "client use not recorded");
}
