#include "metrics/client_usage.hpp"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <vector>

namespace retrace::metrics {

namespace {

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

std::string RunClient::line() const {
  if (!usage) return kNotRecorded;
  std::string text = usage->summary();
  if (slip_p99_ms) {
    char slip[48];
    std::snprintf(slip, sizeof slip, "%.2f", *slip_p99_ms);
    text += std::string("; schedule slip p99 ") + slip + " ms";
  }
  return text;
}

std::optional<std::size_t> most_loaded(std::span<const RunClient> runs) {
  std::optional<std::size_t> most;
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].usage && (!most || runs[i].usage->load() > runs[*most].usage->load())) most = i;
  return most;
}

std::string overall_line(std::span<const PlacedClient> runs) {
  std::vector<RunClient> clients;
  for (const auto& run : runs) clients.push_back(run.client);
  auto most = most_loaded(clients);
  if (!most) return RunClient::kNotRecorded;
  const auto& busiest = runs[*most];
  std::string text = "client: busiest run (" + busiest.group + ", " + busiest.run + ") " + busiest.client.line();
  std::vector<std::string> bottlenecked;
  std::size_t unrecorded = 0;
  for (const auto& run : runs) {
    if (!run.client.usage) ++unrecorded;
    if (run.client.may_be_bottleneck() &&
        std::find(bottlenecked.begin(), bottlenecked.end(), run.group) == bottlenecked.end())
      bottlenecked.push_back(run.group);
  }
  if (!bottlenecked.empty()) {
    std::string where;
    for (std::size_t i = 0; i < bottlenecked.size(); ++i)
      where += (i == 0 ? "" : i + 1 == bottlenecked.size() ? " and " : ", ") + bottlenecked[i];
    text += "; may have been the bottleneck at " + where +
            ": its figures there are the client's limit as much as the server's";
  }
  if (unrecorded > 0)
    text += "; client use not recorded in " + std::to_string(unrecorded) + " of " + std::to_string(runs.size()) +
            " runs";
  return text;
}

ClientUsage rounded(const ClientUsage& usage) {
  ClientUsage out = usage;
  out.cpu_s = rounded_us(usage.cpu_s);
  out.wall_s = rounded_us(usage.wall_s);
  out.busiest_thread_cpu_s = rounded_us(usage.busiest_thread_cpu_s);
  return out;
}

}  // namespace retrace::metrics
