#include "replay/client_usage.hpp"

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include <boost/json.hpp>

#include "base/json_fields.hpp"

namespace retrace::replay {

namespace json = boost::json;

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

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f %%", share * 100);
  return text;
}

// Microseconds: what getrusage resolves; JSON a person can read.
double rounded_us(double seconds) { return std::round(seconds * 1e6) / 1e6; }

}  // namespace

std::string ClientUsage::summary() const {
  std::string text = "used " + percent(cores_used()) + " of one core";
  if (worker_threads > 0)
    text += " (busiest of " + std::to_string(worker_threads) + " worker thread" +
            (worker_threads == 1 ? "" : "s") + " " + percent(busiest_thread_share()) + ")";
  text += may_be_bottleneck() ? ": it may have been the bottleneck (busy past " + percent(kSaturated) +
                                    "): use more --threads, or a second client"
                              : ": not the bottleneck";
  return text;
}

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

std::string with_client_usage(std::string_view settings, const ClientUsage& usage) {
  json::error_code ec;
  auto value = json::parse(settings, ec);
  if (ec || !value.is_object()) value = json::object();
  value.as_object()["client"] = json::object{
      {"cpu_s", rounded_us(usage.cpu_s)},
      {"wall_s", rounded_us(usage.wall_s)},
      {"busiest_thread_cpu_s", rounded_us(usage.busiest_thread_cpu_s)},
      {"worker_threads", usage.worker_threads},
      {"cores", usage.cores},
  };
  return json::serialize(value);
}

std::optional<ClientUsage> client_usage_of(std::string_view settings) {
  json::error_code ec;
  auto value = json::parse(settings, ec);
  if (ec || !value.is_object()) return std::nullopt;
  const json::value* client = value.as_object().if_contains("client");
  if (!client || !client->is_object()) return std::nullopt;
  const auto& object = client->as_object();
  ClientUsage usage;
  usage.cpu_s = llm::number_field(object, "cpu_s").value_or(0);
  usage.wall_s = llm::number_field(object, "wall_s").value_or(0);
  usage.busiest_thread_cpu_s = llm::number_field(object, "busiest_thread_cpu_s").value_or(0);
  usage.worker_threads = static_cast<unsigned>(llm::integer_field(object, "worker_threads").value_or(0));
  usage.cores = static_cast<unsigned>(llm::integer_field(object, "cores").value_or(0));
  return usage;
}

}  // namespace retrace::replay
