// The counters `retrace serve` keeps and shows at GET /metrics, in Prometheus' text format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace retrace::sim {

struct Metrics {
  std::size_t requests_running = 0;
  std::size_t requests_waiting = 0;
  std::size_t sequences_running = 0;
  std::size_t largest_batch = 0;
  std::uint64_t generation_tokens = 0;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t requests_served = 0;
  std::uint64_t requests_cancelled = 0;
  std::uint64_t steps = 0;

  // Every metric, labelled with model_name.
  std::string prometheus(std::string_view model_name) const;
};

}  // namespace retrace::sim
