#include "replay/client_usage.hpp"

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <thread>

namespace retrace::replay {

namespace {

double seconds_of(const timeval& time) {
  return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
}

double process_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ClientMeter::ClientMeter() : cpu_start_s_(process_cpu_seconds()), wall_start_s_(wall_seconds()) {}

ClientUsage ClientMeter::usage(double busiest_thread_cpu_s, unsigned worker_threads) const {
  ClientUsage usage;
  usage.cpu_s = process_cpu_seconds() - cpu_start_s_;
  usage.wall_s = wall_seconds() - wall_start_s_;
  usage.busiest_thread_cpu_s = busiest_thread_cpu_s;
  usage.worker_threads = worker_threads;
  usage.cores = std::thread::hardware_concurrency();
  return usage;
}

double thread_cpu_seconds() {
  timespec time{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time);
  return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_nsec) / 1e9;
}

}  // namespace retrace::replay
