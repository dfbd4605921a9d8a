#include "metrics/client_usage.hpp"

#include <cmath>
#include <cstdio>

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

ClientUsage rounded(const ClientUsage& usage) {
  ClientUsage out = usage;
  out.cpu_s = rounded_us(usage.cpu_s);
  out.wall_s = rounded_us(usage.wall_s);
  out.busiest_thread_cpu_s = rounded_us(usage.busiest_thread_cpu_s);
  return out;
}

}  // namespace retrace::metrics
