// replay/client_usage: the client's headroom, its verdict, and its way through a run's header.
#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include <boost/json.hpp>

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

TEST_CASE("client usage goes into a header's settings and comes back out with the other settings kept") {
  auto usage = usage_of(0.123456, 1.5, 0.1, 3, 2);
  auto settings = with_client_usage(R"({"schedule":{"kind":"concurrency","concurrency":4}})", usage);
  auto parsed = boost::json::parse(settings).as_object();
  CHECK(parsed.at("schedule").at("concurrency").as_int64() == 4);
  auto back = client_usage_of(settings);
  REQUIRE(back);
  CHECK(back->cpu_s == Approx(0.123456));
  CHECK(back->wall_s == Approx(1.5));
  CHECK(back->busiest_thread_cpu_s == Approx(0.1));
  CHECK(back->worker_threads == 3);
  CHECK(back->cores == 2);
}

TEST_CASE("a header without client usage has none") {
  CHECK_FALSE(client_usage_of(R"({"schedule":{"kind":"rate"}})"));
  CHECK_FALSE(client_usage_of(""));
  CHECK_FALSE(client_usage_of("not json"));
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
